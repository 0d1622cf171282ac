"""CPU seconds (user + system, of the whole process tree) of the benchmark's commands: a figure a busy
machine does not distort the way it does wall-clock seconds (docs/benchmark-profile.md).

    .venv/bin/python benchmarks/cpu_seconds.py COURSE_FOLDER [--jobs 2] [--assignments A,B] [--k 3]

COURSE_FOLDER holds <assignment>/submitted/<student>/<assignment>/ (grading_speed.build_class's
layout). Each command's
CPU is read from getrusage(RUSAGE_CHILDREN) before and after it: every process of the tree counts
once it has been reaped. Known gap: the kit's zygotes (and the children forked from them) are
not reaped by the grader before it exits, so the kit's rows are undercounted (its cold grade came out
below the bare import): only the bare import's and the floor's rows are complete (see the doc).
Prints, per assignment, the median of --k runs of: the bare `import torch, numpy`, a cold `grade`
of the first correct submission, floor.py's cold grade of it, `grade-all --jobs J` of all, and
floor.py --jobs J of all (per submission), and their ratios.
"""
import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def cpu(cmd):
    """User + system seconds of `cmd` and every process under it (reaped)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("course")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--assignments", default="self_attention,modern_attention")
    args = ap.parse_args()
    floor = str(ROOT / "benchmarks" / "floor.py")
    med = lambda cmd: statistics.median(cpu(cmd) for _ in range(args.k))  # noqa: E731
    out = {"bare": med([PY, "-c", "import torch, numpy"])}
    with tempfile.TemporaryDirectory() as tmp:
        for a in args.assignments.split(","):
            subs = sorted(Path(args.course, a, "submitted").glob(f"*/{a}"))
            one = next(s for s in subs if "correct" in s.parent.name)
            n = len(subs)
            batch = []
            for i in range(args.k):       # each into an empty folder (a rerun skips what is done)
                batch.append(cpu([PY, "-m", "autograder", "grade-all", str(Path(args.course, a)), "--jobs",
                                  str(args.jobs), "--results-dir", f"{tmp}/{a}-{i}"]))
            r = {"n": n,
                 "single": med([PY, "-m", "autograder", "grade", str(one), "--results", f"{tmp}/one.json", "--quiet"]),
                 "floor_single": med([PY, floor, a, str(one)]),
                 "batch_per_submission": statistics.median(batch) / n,
                 "floor_per_submission": med([PY, floor, a, *map(str, subs), "--jobs", str(args.jobs)]) / n}
            r["ratios"] = {"single / bare": r["single"] / out["bare"],
                           "single / floor_single": r["single"] / r["floor_single"],
                           "batch / floor, per submission": r["batch_per_submission"] / r["floor_per_submission"]}
            out[a] = r
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
