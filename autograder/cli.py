"""Command line: `python -m autograder grade SUBMISSION [--results FILE]`."""
import argparse
import sys

from . import grading, report
from .sandbox import Limits


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m autograder",
                                     description="attention-kit's grader for the self_attention assignment")
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("grade", help="grade one submission (a folder of step files, or one step file)")
    g.add_argument("submission", help="folder holding 01_projection.ipynb ... 07_full_module.ipynb (or .py)")
    g.add_argument("--results", default="results.json", help="where to write Gradescope results.json")
    g.add_argument("--steps", help="comma-separated step stems to grade (default: all)")
    g.add_argument("--call-timeout", type=float, default=Limits.call_seconds,
                   help="seconds one load or call of student code may take (default %(default)s)")
    g.add_argument("--memory-gib", type=float, default=Limits.memory_bytes / 2**30,
                   help="memory limit of each child process in GiB (default %(default)g)")
    g.add_argument("--submission-timeout", type=float, default=Limits.submission_seconds,
                   help="seconds all of one submission's code may run together (default %(default)s)")
    g.add_argument("--isolation", choices=("auto", "uid", "userns", "process"), default="auto",
                   help="how student code is walled off (default: the strongest available)")
    g.add_argument("--quiet", action="store_true", help="print the table only, without check messages")
    b = sub.add_parser("build", help="regenerate solutions/ and assignments/ from source/ (nbgrader)")
    b.add_argument("--check", action="store_true",
                   help="regenerate into a temporary folder and fail if the committed copies differ")
    args = parser.parse_args(argv)

    if args.command == "build":
        from . import release
        if args.check:
            return release.check()
        release.build()
        print("rebuilt solutions/ and assignments/ from source/")
        return 0

    if args.command == "grade":
        from pathlib import Path
        if not Path(args.submission).exists():
            print(f"error: {args.submission} does not exist", file=sys.stderr)
            return 2
        steps = args.steps.split(",") if args.steps else None
        limits = Limits(call_seconds=args.call_timeout, submission_seconds=args.submission_timeout,
                        memory_bytes=int(args.memory_gib * 2**30), isolation=args.isolation)
        result = grading.grade(args.submission, limits, steps)
        report.write_results(result, args.results)
        print(report.table(result, details=not args.quiet))
        print(f"\nresults written to {args.results}")
        return 0
    return 2
