"""The test-only third assignment (tests/third_assignment/) through `nbgrader autograde` (issue 26):
registered by naming its file in ATTENTION_KIT_ASSIGNMENTS for every process (nbgrader, its
preprocessors, the grader), with no change to the kit's modules or to nbgrader_config.py.

One small course: the kit's course (tests/harness/nbgrader_course.py) plus the third assignment's master,
made here from its released stub (the reference in the solution cell between nbgrader's markers,
the hidden-test cell every master ends with), released by the kit's `generate_assignment`. Three
students: ada solved it, ben wrote K Q^T (the assignment's catalogued mistake), cy left the stub.
nbgrader must record the standalone grader's scores, and ben's hidden cell must name his mistake.
"""
import os

import nbformat
import pytest

from autograder import contract, i18n
from autograder.commands import release
from autograder.i18n import translate
from conftest import ROOT
from harness.nbgrader_course import (make_course, nbgrader, recorded, standalone_scores, start_standalone,
                             submit)

HERE = ROOT / "tests" / "third_assignment"
THIRD = HERE / "assignment.py"
NAME, STEM = "toy_scores", "01_toy_scores"
HIDDEN = (f'# Hidden tests: the autograder grades this step here (nothing to do for you).\n### BEGIN HIDDEN TESTS\n'
          f'from autograder.commands.notebook_hook import grade_step\ngrade_step("{STEM}")\n### END HIDDEN TESTS')


def master():
    """The master of the third assignment's step, from its released stub: the reference as the
    solution (between the solution markers), and the hidden-test cell worth the step's points."""
    nb = nbformat.read(str(HERE / "stubs" / f"{STEM}.ipynb"), as_version=4)
    reference = (HERE / "references" / "step01_toy_scores.py").read_text()
    body = reference[reference.index("def toy_scores"):].split("\n", 2)
    for cell in nb.cells:
        if release.is_solution_cell(cell):
            cell.source = f"{body[0]}\n{body[1]}\n    {release.BEGIN}\n{body[2].rstrip()}\n    {release.END}"
    hidden = nbformat.v4.new_code_cell(HIDDEN)
    hidden.metadata["nbgrader"] = {"grade": True, "grade_id": "step01_hidden_tests", "locked": True,
                                   "points": contract.step_for_stem(STEM).points, "schema_version": 3,
                                   "solution": False, "task": False}
    nb.cells.append(hidden)
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    return nb


def handed_in(course, code):
    """The course's released notebook with `code` in its solution cell (None: the stub left)."""
    nb = nbformat.read(str(course / "assignments" / NAME / f"{STEM}.ipynb"), as_version=4)
    for cell in nb.cells:
        if release.is_solution_cell(cell) and code is not None:
            cell.source = code
    return nb


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("third-nbgrader")
    before = os.environ.get(contract.ENV_VAR)
    os.environ[contract.ENV_VAR] = str(THIRD)          # nbgrader, its kernels' grader, `python -m autograder`
    module = contract.load_file(THIRD)
    module.register()
    try:
        course, db = make_course(tmp)
        (course / "source" / NAME).mkdir()
        nbformat.write(master(), str(course / "source" / NAME / f"{STEM}.ipynb"))
        nbgrader(course, db, "generate_assignment", NAME)
        right = (HERE / "references" / "step01_toy_scores.py").read_text()
        submissions = {"ada": {STEM: handed_in(course, right)},
                       "ben": {STEM: handed_in(course, right.replace("Q @ np.swapaxes(K, -1, -2)",
                                                                     "K @ np.swapaxes(Q, -1, -2)"))},
                       "cy": {STEM: handed_in(course, None)}}
        assert "K @ np.swapaxes(Q" in submissions["ben"][STEM].cells[2].source
        submit(course, NAME, submissions)
        procs = start_standalone(course, NAME, submissions, tmp)
        nbgrader(course, db, "autograde", NAME)
        yield {"dir": course, "scores": recorded(db, NAME), "standalone": standalone_scores(procs, tmp)}
    finally:
        module.unregister()
        if before is None:
            os.environ.pop(contract.ENV_VAR, None)
        else:
            os.environ[contract.ENV_VAR] = before


def test_the_release_is_the_kits_stub_of_the_third_step(course):
    nb = nbformat.read(str(course["dir"] / "assignments" / NAME / f"{STEM}.ipynb"), as_version=4)
    code = "\n".join(c.source for c in nb.cells if release.is_solution_cell(c))
    assert 'raise NotImplementedError("Step 1: implement toy_scores")' in code and "swapaxes" not in code
    assert not any("grade_step" in c.source for c in nb.cells)


def test_nbgrader_records_what_the_standalone_grader_gives(course):
    points = contract.step_for_stem(STEM).points
    assert course["standalone"] == {"ada": {STEM: points}, "ben": {STEM: 0}, "cy": {STEM: 0}}
    assert course["scores"] == {s: {STEM: scores[STEM]} for s, scores in course["standalone"].items()}


def test_the_hidden_cell_names_the_catalogued_mistake(course):
    from autograder.reference import misconceptions
    nb = nbformat.read(str(course["dir"] / "autograded" / "ben" / NAME / f"{STEM}.ipynb"), as_version=4)
    (cell,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "step01_hidden_tests"]
    text = "".join(o.get("text", "") for o in cell.outputs)
    diagnosis = i18n.render(translate(misconceptions.CATALOGUE["toy-scores-transposed"].diagnosis), "en")
    assert diagnosis in text and "Step 1: 0/10" in text, text
