"""Measuring cannot be seen or broken, as an ordinary account too (issue 25, item 5: "graded as
root and as an ordinary account").

tests/meters.py grades the hostile meter cases (tests/hostile/meters/) as the account the tests
run as (root in CI: the child gets a fresh uid); here each is graded by `python -m autograder grade`
run as an ordinary account (tests/sandbox/accounts.py "user": no capabilities, user namespaces, the
child keeps that account's uid mapped), with the very same exact outcome.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import ROOT
from harness import meters

ACCOUNTS = ROOT / "tests" / "sandbox" / "accounts.py"
USER = 54323                      # the ordinary account (no passwd entry needed)
pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                                reason="makes an ordinary account: needs root and setpriv (CI runs as root)")


def graded_as_user(case_file):
    home = Path(tempfile.mkdtemp(prefix="attention-kit-meters-user-"))
    try:
        stem = case_file.name.split(".")[1]
        sub = home / "sub"
        sub.mkdir()
        if stem == "04_softmax":
            shutil.copy(case_file, sub / f"{stem}.py")
        else:
            correct = (ROOT / "samples" / "unusual_style" / f"{stem}.py").read_text()
            (sub / f"{stem}.py").write_text(correct + "\n\n" + case_file.read_text())
        for path in [home, *home.rglob("*")]:
            os.chown(path, USER, USER)
        results = home / "results.json"
        env = {"PATH": os.environ["PATH"], "HOME": str(home), "TMPDIR": str(home), "LANG": "C.UTF-8"}
        proc = subprocess.run([sys.executable, str(ACCOUNTS), "user", str(USER), "--", sys.executable, "-m",
                               "autograder", "grade", str(sub), "--results", str(results), "--steps", stem,
                               "--call-timeout", "60"], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=900)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
        assert os.stat(results).st_uid == USER           # written by the ordinary account itself
        return stem, proc.stdout + proc.stderr, json.loads(results.read_text())
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.mark.parametrize("case", sorted(meters.EXPECTED))
def test_as_an_ordinary_account_each_meter_case_gets_its_exact_outcome(case):
    (case_file,) = meters.CASES.glob(f"{case}.*.py")
    stem, output, results = graded_as_user(case_file)
    assert "refusing to run student code" not in output
    assert results["extra_data"]["isolation"]["mode"] == "userns"      # an ordinary account's wall
    meters.assert_outcome(case, stem, output, results)
