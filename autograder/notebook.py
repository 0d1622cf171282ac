"""The hook behind each notebook's hidden-test cell: `grade_step("04_softmax")`.

Under `nbgrader autograde` (and when an instructor runs a source notebook) the cell grades the
step's notebook file in the current folder with the same isolated child process as the
standalone grader, prints the messages on stdout, and returns the points as the cell's value.

nbgrader reads that value as partial credit (`nbgrader.utils.determine_grade`), with two traps
this module closes:
  - any output on stderr, warnings included, makes nbgrader give the cell 0 whatever it returns;
    in a Jupyter kernel, writes to sys.stderr, to file descriptor 2 and from other threads all
    land in the running cell, so all three are diverted while grading;
  - a value above the cell's points makes autograding fail, and no value at all (or an error
    message that is not a number) gives full marks: the value is always a number in
    [0, points], and a failure of the grader itself gives 0 with a message, never an exception
    (whose traceback would also show the cell's hidden source in the feedback).
"""
import contextlib
import io
import os
import sys
import tempfile
import warnings
from pathlib import Path

from . import contract, grading

MAX_MESSAGE = 1500        # characters of one check's message printed in the cell


@contextlib.contextmanager
def stderr_diverted():
    """Send sys.stderr, file descriptor 2 and warnings to a buffer; yield a function reading it."""
    buffer = io.StringIO()
    saved_fd, spool = None, tempfile.TemporaryFile()
    try:
        sys.stderr.flush()
        saved_fd = os.dup(2)
        os.dup2(spool.fileno(), 2)
    except (OSError, ValueError):       # no usable fd 2 (embedded interpreters): Python level only
        saved_fd = None
    try:
        with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stderr(buffer):
            warnings.simplefilter("always")
            yield lambda: buffer.getvalue() + "".join(f"{w.category.__name__}: {w.message}\n" for w in caught)
    finally:
        if saved_fd is not None:
            os.dup2(saved_fd, 2)
            os.close(saved_fd)
            spool.seek(0)
            buffer.write(spool.read().decode("utf-8", "replace"))
        spool.close()


def _clip(text):
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE] + " [...]"


def _grade_lines(step, folder):
    """(points, lines to print) for one step file in `folder`."""
    files = [Path(folder) / name for name in step.files if (Path(folder) / name).exists()]
    if not files:
        return 0.0, [f"No file for step {step.number}: expected {' or '.join(step.files)}."]
    result = grading.grade(files[0], steps=[step.stem]).steps[0]
    lines = []
    for c in result.checks:
        lines.append(f"[{'pass' if c.status == 'passed' else 'FAIL'}] {c.number} {c.name} "
                     f"({c.score:g}/{c.max_score:g})")
        if c.status != "passed":
            lines.append("    " + _clip(c.output).replace("\n", "\n    "))
    for number, name, reason in result.skipped:
        lines.append(f"[skip] {number} {name}: {reason}")
    lines.append(f"Step {step.number}: {result.score:g}/{result.max_score:g}")
    return float(result.score), lines


def grade_step(stem, folder="."):
    """Grade `stem`.ipynb (or .py) in `folder`; print each check; return the step's points."""
    step = contract.step_for_stem(stem)
    with stderr_diverted() as diverted:
        try:
            points, lines = _grade_lines(step, folder)
        except Exception:          # the grader's own failure; the instructor reruns it standalone
            points, lines = 0.0, [f"The grader could not grade step {step.number} (an internal error, "
                                  "not your code's fault). Please tell your instructor."]
    if diverted().strip():
        # grader-side diagnostics: not the student's business, and nbgrader would zero the cell
        lines.append("(The grader logged diagnostics for the instructor; "
                     "`python -m autograder grade` on this file shows them.)")
    print("\n".join(lines))
    # nbgrader fails on a value above the cell's points; float sums can overshoot by 1e-15
    return min(max(round(points, 6), 0.0), float(step.points))
