"""A submission says which assignment it is by its files (contract.ASSIGNMENTS); one that mixes
the step files of two assignments is refused as a whole, with a message that names them."""
import shutil

from autograder import contract, submitted_files
from autograder.grading import run as grading
from conftest import ROOT


def _found(tmp_path, *names):
    for name in names:
        (tmp_path / name).write_text("x = 1\n")
    return submitted_files.find(tmp_path)


def test_the_files_say_the_assignment(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert grading.which_assignment(_found(empty)) == (contract.ASSIGNMENT, None)      # nothing handed in
    assert grading.which_assignment(_found(tmp_path, "04_softmax.py")) == ("self_attention", None)
    other = tmp_path / "modern"
    other.mkdir()
    assert grading.which_assignment(_found(other, "01_masks.py", "03_grouped_query.ipynb")) == ("modern_attention", None)
    # asked-for steps decide, whatever the folder holds
    assert grading.which_assignment(_found(other), ["02_cross_attention"])[0] == "modern_attention"


def test_a_submission_of_two_assignments_is_refused_as_a_whole(tmp_path):
    shutil.copy(ROOT / "samples/lesson/04_softmax.py", tmp_path)
    shutil.copy(ROOT / "samples/lesson/05_weighted_sum.py", tmp_path)
    (tmp_path / "01_masks.py").write_text("def causal_mask(T_q, T_k=None, device=None):\n    return None\n")
    report = grading.grade(tmp_path)
    assert [s.step.stem for s in report.steps] == [s.stem for s in contract.STEPS]     # the one it holds more of
    assert report.score == 0 and report.max_score == sum(s.points for s in contract.STEPS)
    for step in report.steps:
        for check in step.checks:
            assert "two assignments (self_attention: 04_softmax, 05_weighted_sum; modern_attention: 01_masks)" \
                in str(check.output), (step.step.stem, check.output)
