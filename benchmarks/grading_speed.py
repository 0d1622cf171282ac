"""How fast the kit grades, next to nbgrader autograde, on the same notebooks (a benchmark, not a test).

    .venv/bin/python benchmarks/grading_speed.py [--n 40] [--nbgrader-n 4] [--jobs CORES]

Builds N submissions as notebooks (the released notebooks filled in: correct ones, buggy ones
with a slip in every step, stubs left in, slow ones whose every notebook sleeps --slow-seconds at
import), then measures
in one run:
  bare      `python -c "import torch, numpy"`: the floor for any cold grade
  single    `python -m autograder grade` of one correct submission, a cold process (median of 3)
  batch     `python -m autograder grade-all` of all N, per submission (workers' start included)
  nbgrader  `nbgrader autograde` of the first --nbgrader-n of them in a temporary course copy,
            per submission (it starts a kernel per notebook, one notebook after another)
and prints the ratios against the targets of issue 7, and each run's peak memory (the sum of the
proportional set size (PSS) of every process it started, sampled every 0.1 s).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from autograder import contract, release  # noqa: E402

BIN = Path(sys.executable).parent
ASSIGNMENT = contract.ASSIGNMENT


# ------------------------------------------------------------------ submissions
def master_solutions(stem):
    nb = nbformat.read(str(ROOT / "source" / ASSIGNMENT / f"{stem}.ipynb"), as_version=4)
    return {c.metadata.nbgrader.grade_id: "\n".join(ln for ln in c.source.split("\n")
                                                    if release.BEGIN not in ln and release.END not in ln)
            for c in nb.cells if release.is_solution_cell(c)}


def notebook(stem, kind):
    """The released notebook of `stem`, filled in as a `kind` student would."""
    nb = nbformat.read(str(ROOT / "assignments" / ASSIGNMENT / f"{stem}.ipynb"), as_version=4)
    solutions = master_solutions(stem)
    first = True
    for cell in nb.cells:
        if not release.is_solution_cell(cell):
            continue
        code = solutions[cell.metadata.nbgrader.grade_id]
        if kind == "buggy":       # a common slip in every step: a scale, an axis or a sign gone wrong
            code = (code.replace("np.sqrt(d_k)", "d_k").replace("axis=axis", "axis=0")
                    .replace("math.sqrt", "float").replace("@ W_O", "@ W_O.T"))
        elif kind == "stub" and stem in ("04_softmax", "07_full_module"):
            continue              # left as released
        elif kind == "slow" and first:   # work at import, as a student's demo loop might take
            code = f"import time\ntime.sleep({SLOW_SECONDS})\n" + code
        first = False
        cell.source = code
    return nb


KINDS = ["correct", "buggy", "slow", "stub"]
SLOW_SECONDS = 0.3   # per notebook of a "slow" student (--slow-seconds)


def build_class(folder, n):
    """submitted/<student>/self_attention/*.ipynb for n students, kinds in turn."""
    for i in range(n):
        kind = KINDS[i % len(KINDS)]
        sub = folder / "submitted" / f"s{i:03d}_{kind}" / ASSIGNMENT
        sub.mkdir(parents=True)
        for step in contract.STEPS:
            nbformat.write(notebook(step.stem, kind), str(sub / f"{step.stem}.ipynb"))


# ------------------------------------------------------------------ measuring
def pss(pid):
    """Proportional set size: pages shared with the zygote (or between forks) are counted once in all."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def tree_rss(pid):
    """Memory (PSS) of `pid` and all its descendants."""
    parent = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                parent[int(entry)] = int(fields[1])
            except (OSError, IndexError, ValueError):
                pass
    total, stack, seen = 0, [pid], set()
    while stack:
        p = stack.pop()
        if p in seen:
            continue
        seen.add(p)
        total += pss(p)
        stack += [c for c, pp in parent.items() if pp == p]
    return total


def timed(cmd, cwd=ROOT, env=None):
    """(seconds, peak resident bytes of the whole process tree) of one command."""
    peak = [0]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], tree_rss(proc.pid))
            done.wait(0.1)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = proc.communicate()
    seconds = time.monotonic() - start
    done.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed:\n{out}")
    return seconds, peak[0]


def median_of(k, cmd, **kw):
    runs = [timed(cmd, **kw) for _ in range(k)]
    return statistics.median(r[0] for r in runs), max(r[1] for r in runs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=40, help="submissions in the batch (default %(default)s)")
    ap.add_argument("--nbgrader-n", type=int, default=4, help="of them, how many nbgrader autogrades "
                    "(12-20 s each; default %(default)s)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count(), help="grade-all workers (default: cores)")
    ap.add_argument("--slow-seconds", type=float, default=SLOW_SECONDS,
                    help="seconds a slow student's notebook sleeps at import (default %(default)s; "
                         "nbgrader and the kit both wait for it, the ratios shrink as it grows)")
    args = ap.parse_args()
    globals()["SLOW_SECONDS"] = args.slow_seconds
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="attention-kit-bench-") as tmp:
        tmp = Path(tmp)
        course = tmp / "course"
        course.mkdir()
        shutil.copy(ROOT / "nbgrader_config.py", course)
        shutil.copytree(ROOT / "source", course / "source")
        build_class(course, args.n)
        correct = course / "submitted" / "s000_correct" / ASSIGNMENT

        bare = median_of(3, [py, "-c", "import torch, numpy"])
        single = median_of(3, [py, "-m", "autograder", "grade", str(correct), "--results", str(tmp / "one.json"),
                               "--quiet"])
        batch = timed([py, "-m", "autograder", "grade-all", str(course), "--results-dir", str(tmp / "out"),
                       "--csv", str(tmp / "grades.csv"), "--jobs", str(args.jobs)])

        # nbgrader on the first --nbgrader-n students, in a course of their own
        nbc = tmp / "nbcourse"
        nbc.mkdir()
        shutil.copy(ROOT / "nbgrader_config.py", nbc)
        shutil.copytree(ROOT / "source", nbc / "source")
        for sub in sorted((course / "submitted").iterdir())[:args.nbgrader_n]:
            shutil.copytree(sub, nbc / "submitted" / sub.name)
        env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
        db = [f"--CourseDirectory.db_url=sqlite:///{tmp / 'gradebook.db'}", "--log-level=ERROR"]
        timed([str(BIN / "nbgrader"), "generate_assignment", ASSIGNMENT, *db], cwd=nbc, env=env)
        nbg = timed([str(BIN / "nbgrader"), "autograde", ASSIGNMENT, *db], cwd=nbc, env=env)

    nbg_per, batch_per = nbg[0] / args.nbgrader_n, batch[0] / args.n
    mib = lambda b: f"{b / 2**20:.0f} MiB"  # noqa: E731
    print(f"machine: {os.cpu_count()} cores; {args.n} submissions ({', '.join(KINDS)} in turn), 7 notebooks each;"
          f" slow ones sleep {args.slow_seconds:g} s per notebook")
    print(f"{'':<34}{'seconds':>10}{'peak memory':>14}")
    print(f"{'bare python -c import torch,numpy':<34}{bare[0]:>10.2f}{mib(bare[1]):>14}")
    print(f"{'single: grade (cold process)':<34}{single[0]:>10.2f}{mib(single[1]):>14}")
    print(f"{'batch: grade-all --jobs %d' % args.jobs:<34}{batch[0]:>10.2f}{mib(batch[1]):>14}"
          f"   ({batch_per:.2f} s per submission)")
    print(f"{'nbgrader autograde (%d subs)' % args.nbgrader_n:<34}{nbg[0]:>10.2f}{mib(nbg[1]):>14}"
          f"   ({nbg_per:.2f} s per submission)")
    rows = [("single vs nbgrader, per submission", nbg_per / single[0], ">= 6x faster", nbg_per / single[0] >= 6),
            ("batch vs nbgrader, per submission", nbg_per / batch_per, ">= 40x faster", nbg_per / batch_per >= 40),
            ("single cold grade vs bare import", single[0] / bare[0], "<= 1.5x", single[0] / bare[0] <= 1.5)]
    for name, ratio, target, ok in rows:
        print(f"{name:<38}{ratio:>7.1f}x   target {target:<14}{'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
