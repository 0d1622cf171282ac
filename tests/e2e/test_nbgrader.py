"""The repo as an nbgrader course, through nbgrader's own command line, in a temporary copy:
release, autograde three students, export grades, generate feedback. nbgrader must record the
standalone grader's scores, partial and zero credit included, and its feedback must carry the
grader's messages without the hidden-test cells' source or the references."""
import csv
import subprocess
import sys

import nbformat
import pytest

from autograder import contract
from autograder.commands import release
from conftest import ROOT
from harness import nbgrader_course
from harness.nbgrader_course import (assert_ran_top_to_bottom, lesson_function, master_solution, nbgrader,
                                     student_notebook)

ASSIGNMENT = contract.ASSIGNMENT
LESSON = ROOT / "samples" / "lesson"

# Who submits what. alice: every step solved (released notebooks, solutions filled in).
# bob: step 1 left a stub, steps 2 and 5 with the lesson's code (partial credit), 3/4/6/7 missing.
# mallory: step 4 a stub whose cell replaces grade_step in the kernel (which used to make nbgrader
# record full marks): nbgrader records the kit's 0 (autograder/commands/nbgrader_wall.py).
TAMPER = ("\nimport autograder.commands.notebook_hook as _hook\n"
          "_hook.grade_step = lambda *args, **kwargs: 10.0\n")


@pytest.fixture(scope="module")
def course(tmp_path_factory, warm_cli):
    """A graded course: generate, submit, autograde, export, feedback; plus standalone results."""
    tmp = tmp_path_factory.mktemp("course")
    course, db = nbgrader_course.released(tmp_path_factory, tmp, ASSIGNMENT)

    submissions = {
        "alice": {s.stem: student_notebook(course, s.stem) for s in contract.STEPS},
        "bob": {
            "01_projection": student_notebook(course, "01_projection", fill=False),
            "02_scores": student_notebook(course, "02_scores", {
                "step02_attention_scores": lesson_function("02_scores", "attention_scores")}),
            "05_weighted_sum": student_notebook(course, "05_weighted_sum", {
                "step05_self_attention": lesson_function("05_weighted_sum", "self_attention")}),
        },
        "mallory": {"04_softmax": student_notebook(course, "04_softmax", fill=False)},
    }
    cell = next(c for c in submissions["mallory"]["04_softmax"].cells if release.is_solution_cell(c))
    cell.source += TAMPER
    nbgrader_course.submit(course, ASSIGNMENT, submissions)

    # the standalone grader on the same submissions (the worker's warm command line)
    graders = nbgrader_course.start_standalone(course, ASSIGNMENT, submissions, tmp, warm_cli)
    nbgrader(course, db, "autograde", ASSIGNMENT)
    nbgrader(course, db, "export")
    nbgrader(course, db, "generate_feedback", ASSIGNMENT)
    standalone = nbgrader_course.standalone_scores(graders, tmp)
    return {"dir": course, "db": db, "submissions": submissions, "standalone": standalone}


def recorded(course):
    """{student: {notebook: score}} from nbgrader's gradebook."""
    return nbgrader_course.recorded(course["db"], ASSIGNMENT)


def hidden_cell(course, student, stem):
    return nbgrader_course.hidden_cell(course["dir"], student, stem, ASSIGNMENT)


def feedback_text(course, student, stem):
    return nbgrader_course.feedback_text(course["dir"], student, stem, ASSIGNMENT)


def test_nbgrader_records_the_standalone_graders_scores(course):
    scores = recorded(course)
    for student in ("alice", "bob", "mallory"):
        for step in contract.STEPS:
            assert scores[student][step.stem] == course["standalone"][student][step.stem], (student, step.stem)
    assert sum(scores["alice"].values()) == 70


@pytest.mark.parametrize("step", contract.STEPS, ids=lambda s: s.stem)
def test_every_master_runs_top_to_bottom_and_grades_itself(course, step):
    assert_ran_top_to_bottom(course["dir"], "alice", step, ASSIGNMENT)


def test_partial_credit_and_zero_are_recorded_as_such(course):
    scores = recorded(course)["bob"]
    assert scores["01_projection"] == 0                      # a stub: 0, not the cell's 10 points
    assert hidden_cell(course, "bob", "01_projection").outputs[-1].data["text/plain"] == "0.0"
    for stem in ("02_scores", "05_weighted_sum"):
        assert 0 < scores[stem] < 10, (stem, scores[stem])
    for stem in ("03_scaling", "04_softmax", "06_multi_head", "07_full_module"):
        assert scores[stem] == 0                             # not submitted


def test_hidden_cells_print_to_stdout_only_and_end_with_the_points(course):
    for student, notebooks in course["submissions"].items():
        for stem in notebooks:
            outputs = hidden_cell(course, student, stem).outputs
            kinds = [(o.output_type, o.get("name")) for o in outputs]
            assert kinds == [("stream", "stdout"), ("execute_result", None)], (student, stem, kinds)
            assert float(outputs[-1].data["text/plain"]) == course["standalone"][student][stem]


def test_exported_csv_has_each_students_total(course):
    with open(course["dir"] / "grades.csv", newline="") as f:
        rows = {r["student_id"]: r for r in csv.DictReader(f)}
    for student in ("alice", "bob"):
        assert float(rows[student]["score"]) == sum(course["standalone"][student].values())
        assert float(rows[student]["max_score"]) == 70


def test_feedback_has_the_messages_and_no_hidden_code_or_references(course):
    secrets = ["grade_step(", "autograder.commands.notebook_hook", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"]
    for student in ("alice", "bob"):              # mallory's own code names autograder.commands.notebook_hook
        for stem in course["submissions"][student]:
            text = feedback_text(course, student, stem)
            for secret in secrets:
                assert secret not in text, (student, stem, secret)
    bob = feedback_text(course, "bob", "05_weighted_sum")
    assert "Step 5: " in bob and "[FAIL] 5." in bob
    # the master's self_attention body, where it is not also in the released notebook
    master = nbformat.read(str(ROOT / "source" / ASSIGNMENT / "05_weighted_sum.ipynb"), as_version=4)
    released = "\n".join(c.source for c in student_notebook(course["dir"], "05_weighted_sum", fill=False).cells)
    (solution,) = [c for c in master.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "step05_self_attention"]
    lines = [ln.split("#")[0].strip() for ln in master_solution(solution).split("\n")]
    private = [ln for ln in lines if len(ln) > 12 and ln not in released]
    assert private, "the check needs reference lines to look for"
    for line in private:
        assert line not in bob
    stub = feedback_text(course, "bob", "01_projection")
    assert "still a stub" in stub and "Step 1: 0/10" in stub


def test_a_kernel_that_replaces_grade_step_changes_nothing(course):
    assert recorded(course)["mallory"]["04_softmax"] == 0     # a stub, whatever her kernel did
    proc = subprocess.run([sys.executable, "-m", "autograder", "nbgrader-crosscheck", "--course",
                           str(course["dir"]), "--db", course["db"], "--student", "mallory"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "<-- differs" not in proc.stdout and "0 of 7 notebooks" in proc.stdout
