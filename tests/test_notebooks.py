"""Every source notebook executes top to bottom, and its hidden-test cell gives it full marks."""
import shutil

import nbformat
import pytest
from nbclient import NotebookClient

from autograder import contract
from conftest import ROOT

SOURCE = ROOT / "source" / contract.ASSIGNMENT


@pytest.mark.parametrize("step", contract.STEPS, ids=lambda s: s.stem)
def test_source_notebook_runs_and_grades_itself(step, tmp_path):
    shutil.copy(SOURCE / f"{step.stem}.ipynb", tmp_path)
    nb = nbformat.read(str(tmp_path / f"{step.stem}.ipynb"), as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    hidden = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    (cell,) = hidden
    results = [o for o in cell.outputs if o.output_type == "execute_result"]
    assert float(results[0].data["text/plain"]) == step.points
    assert not [o for o in cell.outputs if o.output_type == "stream" and o.name == "stderr"]
    visible = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id", "").endswith("_tests")]
    assert visible, "each step has visible tests"
