"""The class-level hostile cases of issue 25, graded by `grade-all` as root and as an ordinary account
(tests/sandbox/accounts.py): a forged stored result, students named like the class view's files, a
case twin arriving on a second run, and an intake decoy (a zip whose hidden folders hold other
code). Each with its exact outcome, whatever the account:

- carol's graded.json rewritten to full marks, fingerprint kept: graded again, with the note, at the
  score her files earn;
- students "_class.json", "class.html" and "Alice", then "alice": every batch finishes, every student
  has their results, the class files never take a student's folder, class-report lists each once;
- dave's zip holds a copied step in `__MACOSX/` and `.ipynb_checkpoints/`: the grader and the stored
  code (what similarity compares) both take his own file.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

from conftest import ROOMY_TIMEOUT, ROOT

ACCOUNTS = ROOT / "tests" / "sandbox" / "accounts.py"
USER = 54324
LIMITS = [*ROOMY_TIMEOUT, "--memory-gib", "1"]   # far above honest calls on a busy machine
KINDS = ["root", "user"] if os.geteuid() == 0 and shutil.which("setpriv") else ["as is"]
STEP = "04_softmax"
DECOY = "def softmax(x, axis=-1):\n    return 'copied from a classmate'\n"


WRONG = "import numpy as np\n\n\ndef softmax(x, axis=-1):\n    e = np.exp(x)\n    return e / e.sum()\n"


def write_step(folder, text=None):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{STEP}.py").write_text(text or (ROOT / "samples" / "unusual_style" / f"{STEP}.py").read_text())


def as_account(kind, home, *args):
    uid = 0 if kind in ("root", "as is") else USER
    for path in [home, *home.rglob("*")]:
        os.chown(path, uid, uid)
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "TMPDIR": str(home), "LANG": "C.UTF-8",
           "ATTENTION_KIT_STATE": str(home / "state")}
    command = [sys.executable, "-m", "autograder", *args]
    if kind != "as is":
        command = [sys.executable, str(ACCOUNTS), kind, str(uid), "--", *command]
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc.stdout + proc.stderr


@pytest.mark.parametrize("kind", KINDS)
def test_forged_results_names_twins_and_decoys_as_each_account(kind):
    from autograder.commands import batch
    from autograder.reports import class_view, similarity, stored
    home = Path(tempfile.mkdtemp(prefix=f"attention-kit-class-{kind.replace(' ', '-')}-"))
    os.chmod(home, 0o755)
    try:
        root, out = home / "class", home / "out"
        write_step(root / "carol", WRONG)
        for name in ["_class.json", "class.html", "Alice"]:
            write_step(root / name)
        with zipfile.ZipFile(root / "dave.zip", "w") as zf:
            zf.write(ROOT / "samples" / "unusual_style" / f"{STEP}.py", f"work/{STEP}.py")
            zf.writestr(f"__MACOSX/{STEP}.py", DECOY)
            zf.writestr(f".ipynb_checkpoints/{STEP}.py", DECOY)
        grade_all = ["grade-all", str(root), "--results-dir", str(out), "--jobs", "1", "--report",
                     str(out / "class.html"), *LIMITS]
        as_account(kind, home, *grade_all)
        carol = json.loads((out / "carol" / "results.json").read_text())
        true_score = carol["score"]
        assert true_score < 10           # of the step's 10

        graded = json.loads((out / "carol" / stored.NAME).read_text())      # the forgery, fingerprint kept
        for step in graded["report"]["steps"]:
            for check in step["checks"]:
                check["score"], check["status"] = check["max_score"], "passed"
        (out / "carol" / stored.NAME).write_text(json.dumps(graded))
        write_step(root / "alice")                                             # Alice's case twin
        output = as_account(kind, home, *grade_all)
        assert "carol: the stored results were not written by this grader" in output
        assert json.loads((out / "carol" / "results.json").read_text())["score"] == true_score

        keys = {batch.results_path(out, s.key).parent.name: s.student for s in batch.discover(root)}
        assert sorted(keys.values()) == sorted(["carol", "_class.json", "class.html", "Alice", "alice", "dave"])
        for key in keys:
            assert (out / key / "results.json").is_file(), key
        page, numbers = class_view.page_path(out, out / "class.html"), class_view.numbers_path(out)
        assert page.is_file() and numbers.is_file() and not set(keys) & {page.name, numbers.name}
        as_account(kind, home, "class-report", str(out))
        listed = [s["student"] for s in json.loads(numbers.read_text(encoding="utf-8"))["students"]]
        assert sorted(listed) == sorted(keys.values()), listed

        dave = next(k for k, v in keys.items() if v == "dave")
        code = similarity.load_code(out / dave)
        assert "copied from a classmate" not in code[STEP]
        assert code[STEP] == (ROOT / "samples" / "unusual_style" / f"{STEP}.py").read_text()[:similarity.MAX_CODE_CHARS]
        def step_score(key):
            return json.loads((out / key / "results.json").read_text())["extra_data"]["steps"][STEP]["score"]
        assert step_score(dave) == step_score("class.html") > step_score("carol")      # his own file graded
    finally:
        shutil.rmtree(home, ignore_errors=True)
