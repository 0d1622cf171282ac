"""Every source notebook executes top to bottom, and its hidden-test cell gives it full marks
(the second assignment's, which the grader does not grade yet, 0 points and a sentence saying so),
listing its checks by number."""
import re
import shutil

import nbformat
import pytest
from nbclient import NotebookClient

from autograder import contract
from conftest import ROOT

ALL_STEPS = [(a, step) for a, steps in contract.ASSIGNMENTS.items() for step in steps]


@pytest.mark.parametrize("assignment, step", ALL_STEPS, ids=[f"{a}/{s.stem}" for a, s in ALL_STEPS])
def test_source_notebook_runs_and_grades_itself(assignment, step, tmp_path):
    shutil.copy(ROOT / "source" / assignment / f"{step.stem}.ipynb", tmp_path)
    if (ROOT / "source" / assignment / "data").is_dir():        # what its notebooks read (decoder: the corpus)
        shutil.copytree(ROOT / "source" / assignment / "data", tmp_path / "data")
    nb = nbformat.read(str(tmp_path / f"{step.stem}.ipynb"), as_version=4)
    # the timeout guards against a hung cell, it measures nothing: the decoder's training demo (200 steps of a
    # small model on the CPU) took over 120 s on a loaded machine during a full parallel run
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    hidden = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    (cell,) = hidden
    results = [o for o in cell.outputs if o.output_type == "execute_result"]
    graded = contract.step_for_stem(step.stem) is step
    assert float(results[0].data["text/plain"]) == (step.points if graded else 0)
    if not graded:
        printed = "".join(o.text for o in cell.outputs if o.output_type == "stream" and o.name == "stdout")
        assert printed.strip() == f"{step.stem} has no hidden tests yet: the autograder does not grade this step, " \
                                  "so this cell gives 0 points."
    assert not [o for o in cell.outputs if o.output_type == "stream" and o.name == "stderr"]
    if graded:       # the checks listed by number, the skipped ones (GPU) in their place: 5.9 before 5.12
        printed = "".join(o.text for o in cell.outputs if o.output_type == "stream" and o.name == "stdout")
        numbers = [tuple(map(int, n.split("."))) for n in re.findall(r"^\[\w+\] (\d+\.\d+) ", printed, re.M)]
        assert numbers and numbers == sorted(numbers), printed
    visible = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id", "").endswith("_tests")]
    assert visible, "each step has visible tests"
    passed = "".join(o.get("text", "") for c in visible for o in c.outputs if o.output_type == "stream")
    assert f"All visible tests for step {step.number} passed." in passed
