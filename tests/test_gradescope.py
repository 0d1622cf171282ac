"""The Gradescope autograder zip: what it holds, and its run_autograder against a fake /autograder."""
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import zipfile

import pytest

from conftest import ROOT

ENTRY_POINTS = ("setup.sh", "run_autograder")
GRADESCOPE_STATUSES = {"passed", "failed"}
GRADESCOPE_VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}


@pytest.fixture(scope="module")
def zip_path(tmp_path_factory):
    out = tmp_path_factory.mktemp("zip") / "autograder.zip"
    proc = subprocess.run([sys.executable, "-m", "autograder", "gradescope-zip", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def test_zip_holds_the_entry_points_and_the_kit_and_nothing_else(zip_path):
    with zipfile.ZipFile(zip_path) as zf:
        infos = {i.filename: i for i in zf.infolist()}
        constraints = zf.read("constraints.txt").decode()
    for name in ENTRY_POINTS:
        assert name in infos, name                                    # at the root, as Gradescope wants
        assert (infos[name].external_attr >> 16) & stat.S_IXUSR, f"{name} is not executable"
    for name in ("pyproject.toml", "README.md", "autograder/commands/cli.py", "autograder/child/runner.py",
                 "autograder/suites/step04_softmax.py", "autograder/suites/pytest.ini",
                 "solutions/step04_softmax.py"):
        assert name in infos, name
    allowed = ("autograder/", "solutions/")
    extra = [n for n in infos if n not in ENTRY_POINTS + ("constraints.txt", "pyproject.toml", "README.md")
             and not n.startswith(allowed)]
    assert extra == []                                                # no .venv, .git, out/, tests ...
    assert not [n for n in infos if "__pycache__" in n or n.endswith(".pyc")]
    torch_version = re.search(r"^TORCH_VERSION=(\S+)", (ROOT / "scripts/setup.sh").read_text(), re.M).group(1)
    assert f"torch=={torch_version}\n" in constraints                # what the kit is tested with
    assert re.search(r"^numpy==\d", constraints, re.M)


def test_run_autograder_grades_the_submission_like_the_standalone_grader(zip_path, tmp_path):
    root = tmp_path / "autograder"
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(root / "source")
    # mark the zip's copy, to see that it is the kit that grades
    init = root / "source" / "autograder" / "__init__.py"
    init.write_text(init.read_text().replace('__version__ = "', '__version__ = "zip-'))
    submission = root / "submission"
    submission.mkdir()
    shutil.copy(ROOT / "samples/lesson/02_scores.py", submission)                 # partial credit
    shutil.copy(ROOT / "source/self_attention/03_scaling.ipynb", submission)      # full marks

    standalone = subprocess.Popen([sys.executable, "-m", "autograder", "grade", str(submission),
                                   "--results", str(tmp_path / "standalone.json"), "--quiet"],
                                  cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=sys.executable)
    proc = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert standalone.wait(timeout=600) == 0, standalone.stdout.read()

    results = json.loads((root / "results" / "results.json").read_text())
    expected = json.loads((tmp_path / "standalone.json").read_text())
    assert results["extra_data"]["grader"].startswith("attention-kit zip-")
    # Gradescope's fields
    assert isinstance(results["score"], (int, float)) and isinstance(results["output"], str)
    assert results["visibility"] in GRADESCOPE_VISIBILITY
    assert results["stdout_visibility"] in GRADESCOPE_VISIBILITY
    for t in results["tests"]:
        assert isinstance(t["name"], str) and isinstance(t["output"], str)
        assert t["status"] in GRADESCOPE_STATUSES and t["visibility"] in GRADESCOPE_VISIBILITY
        assert 0 <= t["score"] <= t["max_score"]
    assert sum(t["score"] for t in results["tests"]) == results["score"]
    # the same grades as the standalone grader
    assert results["score"] == expected["score"]
    assert 10 < results["score"] < 20                     # 03: full marks, 02: partial, others missing
    assert [(t["number"], t["status"], t["score"]) for t in results["tests"]] == \
           [(t["number"], t["status"], t["score"]) for t in expected["tests"]]
