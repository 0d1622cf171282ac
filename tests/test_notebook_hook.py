"""The hidden-test cell's hook, `grade_step`, in a real Jupyter kernel, read the way nbgrader
reads it (`nbgrader.utils.determine_grade`): partial credit is the returned number, and nothing
reaches stderr (which nbgrader punishes with 0) even when something writes there while grading."""
import shutil
import textwrap

import nbformat
import pytest
from nbclient import NotebookClient
from nbgrader.utils import determine_grade

from conftest import ROOT

GRADE_CELL = {"grade": True, "solution": False, "locked": True, "points": 10, "schema_version": 3}

NOISE = '''
import os, sys, threading, warnings
import autograder.grading as grading
real_grade = grading.grade

def noisy_grade(*args, **kwargs):
    """Everything that lands on a kernel's stderr: sys.stderr, fd 2, a warning, another thread."""
    print("to sys.stderr", file=sys.stderr)
    os.write(2, b"to fd 2\\n")
    warnings.warn("a warning while grading")
    t = threading.Thread(target=lambda: print("from a thread", file=sys.stderr))
    t.start(); t.join()
    return real_grade(*args, **kwargs)

def broken_grade(*args, **kwargs):
    raise RuntimeError("the grader itself broke")

def overshooting_grade(*args, **kwargs):
    """Checks worth 2.2 + 5.9 + 1.9 points: a float sum just above the cell's 10."""
    from autograder.grading import CheckResult, Report, StepResult
    from autograder import contract
    checks = [CheckResult("02_scores", f"2.{i}", "c", "numbers", p, p, "passed", "Passed.")
              for i, p in enumerate([2.2, 5.9, 1.9], 1)]
    assert sum(c.score for c in checks) > 10
    return Report("x", [StepResult(contract.STEPS[1], "02_scores.py", checks)], {})
'''


def graded_cell(source):
    cell = nbformat.v4.new_code_cell(textwrap.dedent(source))
    cell.metadata["nbgrader"] = dict(GRADE_CELL, grade_id=f"hidden_{abs(hash(source))}")
    return cell


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hook")
    shutil.copy(ROOT / "samples" / "lesson" / "02_scores.py", folder)        # the lesson's code: 1/10
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(NOISE),
        graded_cell(f"""
            grading.grade = noisy_grade
            from autograder.notebook import grade_step
            grade_step("02_scores", {str(folder)!r})"""),
        graded_cell("""
            grading.grade = broken_grade
            grade_step("02_scores", %r)""" % str(folder)),
        graded_cell("""
            grading.grade = real_grade
            grade_step("04_softmax", %r)""" % str(folder)),
        graded_cell("""
            grading.grade = overshooting_grade
            grade_step("02_scores", %r)""" % str(folder)),
    ]
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True).execute()
    return nb.cells[1:]


def outputs(cell):
    return [(o.output_type, o.get("name")) for o in cell.outputs]


def test_partial_credit_with_stderr_noise_during_grading(executed):
    cell = executed[0]
    assert outputs(cell) == [("stream", "stdout"), ("execute_result", None)]
    assert determine_grade(cell) == (1.0, 10.0)
    text = cell.outputs[0].text
    assert "[FAIL] 2.2" in text and "Step 2: 1/10" in text
    assert "logged diagnostics for the instructor" in text


def test_a_broken_grader_gives_zero_without_an_error_or_traceback(executed):
    cell = executed[1]
    assert outputs(cell) == [("stream", "stdout"), ("execute_result", None)]
    assert determine_grade(cell) == (0.0, 10.0)
    assert "internal error" in cell.outputs[0].text and "RuntimeError" not in cell.outputs[0].text


def test_a_missing_file_gives_zero_not_full_marks(executed):
    cell = executed[2]
    assert determine_grade(cell) == (0.0, 10.0)
    assert "expected 04_softmax.ipynb or 04_softmax.py" in cell.outputs[0].text


def test_the_points_never_exceed_the_cell_s(executed):
    # nbgrader refuses partial credit above the cell's points: autograding would stop
    assert determine_grade(executed[3]) == (10.0, 10.0)
