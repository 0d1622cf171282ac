import os
import sys

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
