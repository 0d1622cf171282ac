import os
import sys

# One thread for the grader's own OpenBLAS, OpenMP and MKL, read as numpy and torch load (here,
# in batch workers and in zygotes, which inherit it): the grader's arithmetic is small, and idle
# math threads spin waiting for work, on cores the students' children need (see
# grading.one_math_thread). The children get the same from their own environment.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

GRADE = sys.argv[1:2] == ["grade"]
if GRADE:
    # start the zygote first: its `import torch` then runs beside ours (see zygote.py)
    from .zygote import start_unless_disabled
    start_unless_disabled()

from .cli import main  # noqa: E402

code = main()
if GRADE:
    # Every result is written and every child is dead by now; skip the interpreter's teardown,
    # which with torch loaded takes longer (about 0.4 s) than grading a step.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
raise SystemExit(code)
