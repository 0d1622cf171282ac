"""The one entry point, whichever way the grader is started: `python -m autograder ...` and the
`attention-kit ...` console script both run `main()` here, so both behave the same."""
import os
import sys


def main(argv=None):
    """Run the command line; returns only for commands other than `grade` (see below)."""
    argv = sys.argv[1:] if argv is None else argv
    # One thread for the grader's own OpenBLAS, OpenMP and MKL, read as numpy and torch load (here,
    # in batch workers and in zygotes, which inherit it): the grader's arithmetic is small, and idle
    # math threads spin waiting for work, on cores the students' children need (see
    # grading.one_math_thread). The children get the same from their own environment.
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    grade = argv[:1] == ["grade"]
    if grade:
        # start the zygote first: its `import torch` then runs beside ours (see zygote.py)
        from autograder.sandbox.zygote import start_unless_disabled
        start_unless_disabled()
    from autograder.commands.cli import main as cli_main
    code = cli_main(argv)
    if grade:
        # Every result is written and every child is dead by now; skip the interpreter's teardown,
        # which with torch loaded takes longer (about 0.4 s) than grading a step.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code
