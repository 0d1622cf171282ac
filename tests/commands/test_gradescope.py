"""The Gradescope autograder zip: what it holds, and its run_autograder against a fake /autograder,
for each assignment (one zip per Gradescope assignment: gradescope-zip --assignment)."""
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


def build(folder, *options):
    out = folder / "autograder.zip"
    proc = subprocess.run([sys.executable, "-m", "autograder", "gradescope-zip", str(out), *options], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


@pytest.fixture(scope="module")
def zip_path(tmp_path_factory):
    return build(tmp_path_factory.mktemp("zip"))          # the first assignment's, by default


def unpacked(zip_file, root):
    """A fake /autograder: the zip in source/, an empty submission/; returns submission/."""
    with zipfile.ZipFile(zip_file) as zf:
        zf.extractall(root / "source")
    (root / "submission").mkdir()
    return root / "submission"


def run_autograder(root):
    """Run the zip's run_autograder as Gradescope does; returns results.json."""
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=sys.executable)
    proc = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, cwd=root.parent,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads((root / "results" / "results.json").read_text())


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
    submission = unpacked(zip_path, root)
    # mark the zip's copy, to see that it is the kit that grades
    init = root / "source" / "autograder" / "__init__.py"
    init.write_text(init.read_text().replace('__version__ = "', '__version__ = "zip-'))
    shutil.copy(ROOT / "samples/lesson/02_scores.py", submission)                 # partial credit
    shutil.copy(ROOT / "source/self_attention/03_scaling.ipynb", submission)      # full marks

    standalone = subprocess.Popen([sys.executable, "-m", "autograder", "grade", str(submission),
                                   "--results", str(tmp_path / "standalone.json"), "--quiet"],
                                  cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    results = run_autograder(root)
    assert standalone.wait(timeout=600) == 0, standalone.stdout.read()

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


def test_the_second_assignments_zip_grades_its_steps_whatever_the_submission_holds(tmp_path):
    """gradescope-zip --assignment modern_attention: masters get full marks, a stub 0, a missing step
    is named, out of the assignment's 60 points; a file of the first assignment beside them is not
    graded (a zip grades the assignment it was built for, never the one a student's files say)."""
    root = tmp_path / "autograder"
    submission = unpacked(build(tmp_path, "--assignment", "modern_attention"), root)
    shutil.copy(ROOT / "source/modern_attention/01_masks.ipynb", submission)                # master
    shutil.copy(ROOT / "solutions/modern_attention/step04_rope.py", submission / "04_rope.py")   # reference
    shutil.copy(ROOT / "assignments/modern_attention/02_cross_attention.ipynb", submission)  # stub
    shutil.copy(ROOT / "source/self_attention/03_scaling.ipynb", submission)                # another assignment's

    results = run_autograder(root)
    steps = results["extra_data"]["steps"]
    assert list(steps) == ["01_masks", "02_cross_attention", "03_grouped_query", "04_rope", "05_kv_cache",
                           "06_flash_attention"]
    assert {stem: s["score"] for stem, s in steps.items()} == {
        "01_masks": 10, "02_cross_attention": 0, "03_grouped_query": 0, "04_rope": 10, "05_kv_cache": 0,
        "06_flash_attention": 0}
    assert results["score"] == 20 and results["extra_data"]["max_score"] == 60
    assert sum(t["score"] for t in results["tests"]) == 20
    first = {t["tags"][0]: t["output"] for t in reversed(results["tests"])}     # each step's first check
    assert "This part is still a stub" in first["step:02_cross_attention"]
    assert "expected 03_grouped_query.ipynb or 03_grouped_query.py" in first["step:03_grouped_query"]
