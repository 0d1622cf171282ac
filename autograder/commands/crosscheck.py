"""Check nbgrader's recorded scores against the standalone grader.

With the course's nbgrader_config.py, the number nbgrader records for each hidden-test cell comes
from the kit's grader run in nbgrader's own process (nbgrader_wall.TrustedGrades), never from the
student's kernel. This module is the audit: it regrades the submissions nbgrader graded with the
standalone grader and lists the notebooks where the two disagree (a course configured without
TrustedGrades, where the value a hidden cell returns in the student's kernel is recorded, or a
student who edited a locked cell that nbgrader restored from the master). Every assignment of the
kit's that the gradebook holds is checked (self_attention, modern_attention).

    python -m autograder nbgrader-crosscheck [--course DIR] [--db sqlite:///gradebook.db] [--student ID ...]
"""
from pathlib import Path

from autograder import contract
from autograder.grading import run as grading


def nbgrader_scores(db_url, assignment=contract.DEFAULT_ASSIGNMENT):
    """{student id: {notebook name: score}} as recorded in nbgrader's gradebook for `assignment`."""
    from nbgrader.api import Gradebook
    with Gradebook(db_url) as gb:
        return {sub.student.id: {nb.name: float(nb.score) for nb in sub.notebooks}
                for sub in gb.assignment_submissions(assignment)}


def graded_assignments(db_url):
    """The kit's assignments the gradebook holds (contract.ASSIGNMENTS' order)."""
    from nbgrader.api import Gradebook
    with Gradebook(db_url) as gb:
        names = {a.name for a in gb.assignments}
    return [a for a in contract.ASSIGNMENTS if a in names]


def kit_scores(folder):
    """{step stem: score} from the standalone grader on `folder`."""
    return {s.step.stem: float(s.score) for s in grading.grade(folder).steps}


def crosscheck(course=".", db_url=None, students=None, assignments=None):
    """Rows (student, step stem, nbgrader score, kit score) for each assignment of `assignments`
    (by default every one of the kit's the gradebook holds) and each student nbgrader graded in
    it (or those in `students`), the kit grading submitted/<student>/<assignment>/ as submitted.
    A difference means code ran in nbgrader's kernel changed the score, or the student edited
    a locked cell that nbgrader restored from the master before running the notebook."""
    course = Path(course).resolve()
    db_url = db_url or f"sqlite:///{course / 'gradebook.db'}"
    from autograder.sandbox import zygote
    zygote.start_unless_disabled()          # children forked warm, as for `grade`: no torch import per step
    rows = []
    for assignment in assignments or graded_assignments(db_url):
        for student, recorded in sorted(nbgrader_scores(db_url, assignment).items()):
            if students and student not in students:
                continue
            kit = kit_scores(course / "submitted" / student / assignment)
            for step in contract.ASSIGNMENTS[assignment]:
                rows.append((student, step.stem, recorded.get(step.stem), kit.get(step.stem, 0.0)))
    return rows


def disagreements(rows, tolerance=1e-6):
    return [r for r in rows if r[2] is None or abs(r[2] - r[3]) > tolerance]


def print_rows(rows):
    """The table, one line per student and step, disagreements marked; exit status 1 on any."""
    bad = disagreements(rows)
    print(f"{'student':<16} {'step':<16} {'nbgrader':>8} {'kit':>6}")
    for row in rows:
        student, stem, nbg, kit = row
        mark = "  <-- differs" if row in bad else ""
        print(f"{student:<16} {stem:<16} {'-' if nbg is None else f'{nbg:g}':>8} {kit:>6g}{mark}")
    print(f"\n{len(bad)} of {len(rows)} notebooks with a score from nbgrader other than the kit's."
          + (" Regrade those with `python -m autograder grade`, and look at what the notebook's "
             "cells do in the kernel." if bad else ""))
    return 1 if bad else 0
