"""One source of truth: solutions/ and assignments/ are generated from source/ and must not drift."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder import contract
from autograder.commands import release
from conftest import ROOT

RELEASE = ROOT / "assignments" / contract.ASSIGNMENT


@pytest.fixture(scope="module")
def fresh_build(tmp_path_factory):
    out = tmp_path_factory.mktemp("build")
    release.build(out)
    return out


def test_committed_release_equals_a_fresh_generation(fresh_build):
    assert release.differences(fresh_build) == []


def test_a_drifted_copy_is_detected(fresh_build, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(fresh_build, copy)
    nb = copy / "assignments" / contract.ASSIGNMENT / "04_softmax.ipynb"
    nb.write_text(nb.read_text().replace("softmax", "soft_max", 1))
    (copy / "solutions" / "step02_scores.py").write_text("# edited by hand\n")
    assert sorted(release.differences(copy)) == [f"assignments/{contract.ASSIGNMENT}/04_softmax.ipynb",
                                                 "solutions/step02_scores.py"]


def test_build_check_command_passes_on_the_committed_tree():
    proc = subprocess.run([sys.executable, "-m", "autograder", "build", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("step", contract.STEPS, ids=lambda s: s.stem)
def test_released_notebook_is_a_stub_without_hidden_tests_or_solutions(step):
    nb = nbformat.read(str(RELEASE / f"{step.stem}.ipynb"), as_version=4)
    text = "\n".join(c.source for c in nb.cells)
    for secret in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "grade_step"):
        assert secret not in text
    assert f'raise NotImplementedError("Step {step.number}: implement' in text
    for name in step.names:
        assert f"def {name}(" in text or f"class {name}(" in text
    hidden = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    assert len(hidden) == 1 and hidden[0].metadata["nbgrader"]["points"] == step.points
    assert hidden[0].metadata["nbgrader"]["grade_id"] == f"step{step.stem[:2]}_hidden_tests"
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")


@pytest.mark.parametrize("step", contract.STEPS, ids=lambda s: s.stem)
def test_source_notebook_declares_its_step(step):
    nb = json.loads((ROOT / "source" / contract.ASSIGNMENT / f"{step.stem}.ipynb").read_text())
    assert nb["metadata"]["attention_kit"]["stem"] == step.stem
    assert nb["metadata"]["attention_kit"]["step"] == step.number


def test_the_release_check_ignores_what_jupyterlab_writes_beside_the_notebooks(tmp_path):
    """An instructor who opens a released notebook in JupyterLab gets .ipynb_checkpoints/ beside it:
    not a difference from source/ (grading and .gitignore skip it too)."""
    from autograder.commands import release
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / "04_softmax.ipynb").write_text("{}")
    (tmp_path / ".ipynb_checkpoints" / "04_softmax-checkpoint.ipynb").write_text("{}")
    assert release._files(tmp_path) == {Path("04_softmax.ipynb")}
