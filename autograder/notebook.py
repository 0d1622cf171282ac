"""The hook behind each notebook's hidden-test cell: `grade_step("04_softmax")`.

Under `nbgrader autograde` (and when an instructor runs a source notebook) the cell grades the
step's notebook file in the current folder with the same isolated child process as the
standalone grader, prints the messages on stdout, and returns the points as the cell's value,
which nbgrader takes as partial credit. Nothing is written to stderr.
"""
from pathlib import Path

from . import contract, grading


def grade_step(stem, folder="."):
    """Grade `stem`.ipynb (or .py) in `folder`; print each check; return the step's points."""
    step = contract.step_for_stem(stem)
    files = [Path(folder) / name for name in step.files if (Path(folder) / name).exists()]
    if not files:
        print(f"No file for step {step.number}: expected {' or '.join(step.files)}.")
        return 0.0
    result = grading.grade(files[0], steps=[stem]).steps[0]
    for c in result.checks:
        print(f"[{'pass' if c.status == 'passed' else 'FAIL'}] {c.number} {c.name} "
              f"({c.score:g}/{c.max_score:g})")
        if c.status != "passed":
            print("    " + c.output.replace("\n", "\n    "))
    print(f"Step {step.number}: {result.score:g}/{result.max_score:g}")
    return float(result.score)
