"""Measuring cannot be seen or broken, and a reply cannot inflate the grader, as an ordinary
account too (issue 25, items 5 and 6: "graded as root and as an ordinary account").

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

from conftest import ROOMY_TIMEOUT, ROOT
from harness import meters

ACCOUNTS = ROOT / "tests" / "sandbox" / "accounts.py"
USER = 54323                      # the ordinary account (no passwd entry needed)
pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                                reason="makes an ordinary account: needs root and setpriv (CI runs as root)")


def graded_as_user(case_file, steps=None, extra=ROOMY_TIMEOUT):
    """`grade` of the case as the ordinary account: (stem, output, results). `steps`: the other steps
    graded beside it, from samples/unusual_style."""
    home = Path(tempfile.mkdtemp(prefix="attention-kit-meters-user-"))
    try:
        stem = case_file.name.split(".")[1]
        sub = home / "sub"
        sub.mkdir()
        for other in steps or ():
            shutil.copy(ROOT / "samples" / "unusual_style" / f"{other}.py", sub)
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
                               "autograder", "grade", str(sub), "--results", str(results), "--steps",
                               ",".join(steps or [stem]), *extra], cwd=ROOT, env=env, capture_output=True, text=True,
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


@pytest.mark.parametrize("case, score, phrase", [
    ("nested_reply", 0, "a reply of 60000030 bytes of text is more than this request may return (8388608 bytes)"),
    ("shared_bytes", 0, "array records claim more bytes than were attached"),
])
def test_as_an_ordinary_account_an_oversized_reply_gets_its_exact_outcome(case, score, phrase):
    """tests/sandbox/test_reply_budget.py's hostile replies (a 60 MB nested reply, records claiming the same
    bytes twice), graded as the ordinary account beside four honest steps."""
    _stem, output, results = graded_as_user(meters.HOSTILE_REPLIES / f"{case}.04_softmax.py",
                                            meters.REPLY_STEPS,
                                            (*ROOMY_TIMEOUT, "--memory-gib", "1"))
    assert results["extra_data"]["isolation"]["mode"] == "userns"
    steps = results["extra_data"]["steps"]
    assert steps["04_softmax"]["score"] == score
    assert all(s["score"] == 10 for k, s in steps.items() if k != "04_softmax"), "other steps graded normally"
    failed = [t["output"] for t in results["tests"] if "step:04_softmax" in t["tags"] and t["status"] == "failed"]
    assert phrase in failed[0]
    assert "internal error" not in json.dumps(results) and "internal error" not in output
