"""How fast the kit grades, next to nbgrader autograde, on the same notebooks (a benchmark, not a test).

    .venv/bin/python benchmarks/grading_speed.py [--n 40] [--nbgrader-n 4] [--jobs CORES] [--assignments A,B]
                                                 [--runs 3] [--no-memory] [--otter-n 1]

Builds, for every registered assignment (contract.ASSIGNMENTS: the kit's, and one named in
ATTENTION_KIT_ASSIGNMENTS), N submissions as notebooks (the released notebooks filled in: correct
ones, buggy ones with a slip in every step, stubs left in, slow ones whose every notebook sleeps
--slow-seconds at import; an assignment with no master in source/ gets its reference, from
contract.Assignment.reference_file, in its stub's first solution cell, and no buggy student
unless SLIPS has its slips), then measures in one run:
  bare      `python -c "import torch, numpy"`: the floor for any cold grade
  single    `python -m autograder grade` of one correct submission, a cold process (median of 5,
            interleaved with the bare import and the other assignments' single grades)
  batch     `python -m autograder grade-all` of all N, per submission (workers' start included;
            median of --runs runs), its grades checked first: the same in every run, alike for
            every student of a kind, full marks where due, and as the single grade
  nbgrader  `nbgrader autograde` of the first --nbgrader-n of them in a temporary course copy,
            per submission (it starts a kernel per notebook, one notebook after another; 0: not
            run, and the ratios against it are not told)
  floor     benchmarks/floor.py: the same checks on the same submissions, the student's code called
            in-process (no child, no wall, no pipes; --jobs workers like the batch; median of three),
            its grades checked equal to the batch's; and its cold grade of one correct submission
  otter     benchmarks/peer_otter.py: otter-grader (pip install -e .[bench]) on the first --otter-n
            submissions, one hidden test per step, `otter run` per notebook (no Docker here)
and prints, per assignment, the ratios against the targets of issues 7 and 32, and each run's peak memory (the sum of the
proportional set size (PSS) of every process it started, sampled every 0.1 s, in a run of its own;
--no-memory: not measured).

    --record   also writes the figures to benchmarks/grading_speed.json and puts the same table
               into docs/benchmark.md between its `benchmark:grading_speed` markers (the figures are
               this program's output, never typed; tests/test_benchmark_record.py holds them equal)
"""
import argparse
import datetime
import json
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
from autograder import contract  # noqa: E402
from autograder.commands import release  # noqa: E402

BIN = Path(sys.executable).parent

# What each kind of student hands in, per assignment: the slips a buggy student makes (every step
# gets at least one: a scale, an axis, a sign, a frequency gone wrong; `notebook` checks), and the
# steps a stub student leaves as released.
SLIPS = {
    "self_attention": [("K = X @ W_K", "K = X @ W_Q"), ("np.swapaxes(K, -1, -2)", "K"), ("np.sqrt(d_k)", "d_k"),
                       ("axis=axis", "axis=0"), ("math.sqrt", "float"), ("@ W_O", "@ W_O.T")],
    "modern_attention": [("math.sqrt(", "float("), ("-2.0 * i", "-1.0 * i")],
    "decoder": [("h.pow(2).mean(-1,", "h.pow(2).sum(-1,"), ("F.silu(self.gate_proj(x))", "F.relu(self.gate_proj(x))"),
                ("/ math.sqrt(self.head_dim)", "/ self.head_dim"), ("self.lm_head(self.norm(x))", "self.lm_head(x)"),
                ("logits = logits / temperature", "logits = logits * temperature"),
                ("logits[:, :-1], tokens[:, 1:]", "logits[:, 1:], tokens[:, :-1]")],
}
STUB_STEPS = {"self_attention": ("04_softmax", "07_full_module"),
              "modern_attention": ("02_cross_attention", "05_kv_cache"),
              "decoder": ("02_swiglu", "05_generation")}


# ------------------------------------------------------------------ submissions
def kinds_of(assignment):
    """The kinds of student built for an assignment: no buggy one where no slips are written for it."""
    return [k for k in KINDS if k != "buggy" or assignment in SLIPS]


def stub_steps(assignment):
    """The steps a stub student leaves as released: STUB_STEPS', else the assignment's last step."""
    return STUB_STEPS.get(assignment, (contract.ASSIGNMENTS[assignment][-1].stem,))


def master_solutions(assignment, stem):
    """{grade_id: code} of the master's solution cells, or None where the assignment has no master in
    source/ (one registered from outside the kit): its reference then fills the first solution cell."""
    master = ROOT / "source" / assignment / f"{stem}.ipynb"
    if not master.exists():
        return None
    nb = nbformat.read(str(master), as_version=4)
    return {c.metadata.nbgrader.grade_id: "\n".join(ln for ln in c.source.split("\n")
                                                    if release.BEGIN not in ln and release.END not in ln)
            for c in nb.cells if release.is_solution_cell(c)}


def slipped(assignment, code):
    for old, new in SLIPS[assignment]:
        code = code.replace(old, new)
    return code


def notebook(assignment, stem, kind):
    """The released notebook of `stem`, filled in as a `kind` student would."""
    its = contract.REGISTRY[assignment]
    nb = nbformat.read(str(its.stub_folder / f"{stem}.ipynb"), as_version=4)
    solutions = master_solutions(assignment, stem)
    reference = its.reference_file(stem).read_text(encoding="utf-8") if solutions is None else None
    first, slips = True, 0
    for cell in nb.cells:
        if not release.is_solution_cell(cell):
            continue
        code = solutions[cell.metadata.nbgrader.grade_id] if solutions is not None else reference if first else ""
        if kind == "buggy":
            buggy = slipped(assignment, code)
            slips += buggy != code
            code = buggy
        elif kind == "stub" and stem in stub_steps(assignment):
            continue              # left as released
        elif kind == "slow" and first:   # work at import, as a student's demo loop might take
            code = f"import time\ntime.sleep({SLOW_SECONDS})\n" + code
        first = False
        cell.source = code
    if kind == "buggy" and not slips:
        raise SystemExit(f"no slip of SLIPS[{assignment!r}] applies to {stem}: the buggy student would be correct there")
    return nb


KINDS = ["correct", "buggy", "slow", "stub"]
SLOW_SECONDS = 0.3   # per notebook of a "slow" student (--slow-seconds)


def build_class(folder, assignment, n):
    """submitted/<student>/<assignment>/*.ipynb for n students, kinds in turn."""
    kinds = kinds_of(assignment)
    for i in range(n):
        kind = kinds[i % len(kinds)]
        sub = folder / "submitted" / f"s{i:03d}_{kind}" / assignment
        sub.mkdir(parents=True)
        for step in contract.ASSIGNMENTS[assignment]:
            nbformat.write(notebook(assignment, step.stem, kind), str(sub / f"{step.stem}.ipynb"))


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


def timed(cmd, cwd=ROOT, env=None, sample=False):
    """(seconds, peak PSS bytes of the whole process tree or 0) of one command.

    Sampling reads every process's smaps_rollup ten times a second, which costs CPU the
    command would otherwise have: timed runs do not sample; memory comes from a run of its own.
    """
    peak = [0]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    done = threading.Event()

    def sample_tree():
        while not done.is_set():
            peak[0] = max(peak[0], tree_rss(proc.pid))
            done.wait(0.1)
    sampler = threading.Thread(target=sample_tree, daemon=True)
    if sample:
        sampler.start()
    out, _ = proc.communicate()
    seconds = time.monotonic() - start
    done.set()
    if sample:
        sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed:\n{out}")
    return seconds, peak[0]


def peak_of(cmd, **kw):
    """Peak memory (PSS of the process tree) of one more, sampled, run of `cmd`."""
    return timed(cmd, sample=True, **kw)[1]


def medians_interleaved(k, *cmds, memory=True):
    """(median seconds, peak bytes) of each command, run k times in turn (a, b, a, b, ...), so
    that a change in the machine's load falls on both alike; then one sampled run each for memory
    (peak 0 with memory=False)."""
    runs = [[] for _ in cmds]
    for _ in range(k):
        for i, cmd in enumerate(cmds):
            runs[i].append(timed(cmd)[0])
    return [(statistics.median(rs), peak_of(cmd) if memory else 0) for rs, cmd in zip(runs, cmds)]


def course_copy(folder):
    """An nbgrader course in `folder`: the config and the masters (source/)."""
    folder.mkdir()
    shutil.copy(ROOT / "nbgrader_config.py", folder)
    shutil.copytree(ROOT / "source", folder / "source")
    return folder


def measure(assignment, tmp, args, single_cmd_out):
    """Batch and nbgrader figures of one assignment (its single grade is timed with the bare import)."""
    py = sys.executable
    course = tmp / assignment
    batch_cmd = [py, "-m", "autograder", "grade-all", str(course), "--jobs", str(args.jobs)]
    # --runs runs, each into an empty folder (a rerun into the same one skips everything)
    batch_runs = [timed(batch_cmd + ["--results-dir", str(tmp / f"{assignment}-out{i}"),
                                     "--csv", str(tmp / f"{assignment}-grades{i}.csv")])[0] for i in range(args.runs)]
    batch = (statistics.median(batch_runs), peak_of(batch_cmd + ["--results-dir", str(tmp / f"{assignment}-sampled")])
             if args.memory else 0)
    grades = check_grades([tmp / f"{assignment}-grades{i}.csv" for i in range(args.runs)],
                          json.loads(single_cmd_out.read_text()))
    result = {"steps": len(contract.ASSIGNMENTS[assignment]), "kinds": kinds_of(assignment),
              "batch_runs": batch_runs, "grades": grades,
              "seconds": {"batch": batch[0]}, "peak_bytes": {"batch": batch[1]}}
    if args.nbgrader_n <= 0:
        return result                  # no nbgrader: its figures and the ratios against it are left out

    # nbgrader on the first --nbgrader-n students, in a course of their own (timed), and on
    # the first student alone in another (sampled for memory: it grades one after another)
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    runs = []
    for name, n, sample in (("nbcourse", args.nbgrader_n, False), ("nbcourse-sampled", 1, True))[:1 + args.memory]:
        nbc = course_copy(tmp / f"{assignment}-{name}")
        for sub in sorted((course / "submitted").iterdir())[:n]:
            shutil.copytree(sub, nbc / "submitted" / sub.name)
        db = [f"--CourseDirectory.db_url=sqlite:///{nbc / 'gradebook.db'}", "--log-level=ERROR"]
        timed([str(BIN / "nbgrader"), "generate_assignment", assignment, *db], cwd=nbc, env=env)
        runs.append(timed([str(BIN / "nbgrader"), "autograde", assignment, *db], cwd=nbc, env=env, sample=sample))
    result["seconds"]["nbgrader"] = runs[0][0]
    result["peak_bytes"]["nbgrader"] = runs[-1][1] if args.memory else 0
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=40, help="submissions in the batch (default %(default)s)")
    ap.add_argument("--nbgrader-n", type=int, default=4, help="of them, how many nbgrader autogrades "
                    "(12-20 s each; 0: no nbgrader; default %(default)s)")
    ap.add_argument("--runs", type=int, default=3, help="timed runs of the batch and the floor, the median kept "
                    "(the cold single grades: 2 * runs - 1, interleaved; default %(default)s)")
    ap.add_argument("--no-memory", dest="memory", action="store_false",
                    help="no extra sampled run for peak memory (peaks shown as 0)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count(), help="grade-all workers (default: cores)")
    ap.add_argument("--assignments", default=",".join(contract.ASSIGNMENTS),
                    help="which assignments, comma-separated (default: all, %(default)s)")
    ap.add_argument("--slow-seconds", type=float, default=SLOW_SECONDS,
                    help="seconds a slow student's notebook sleeps at import (default %(default)s; "
                         "nbgrader and the kit both wait for it, the ratios shrink as it grows)")
    ap.add_argument("--record", action="store_true", help="write benchmarks/grading_speed.json and the table in docs/benchmark.md")
    add_floor_arguments(ap)
    args = ap.parse_args()
    assignments = [a for a in args.assignments.split(",") if a]
    unknown = sorted(set(assignments) - set(contract.ASSIGNMENTS))
    if unknown:
        raise SystemExit(f"unknown assignment(s) {', '.join(unknown)}; known: {', '.join(contract.ASSIGNMENTS)}")
    if args.record and assignments != list(contract.ASSIGNMENTS):
        raise SystemExit("--record measures every assignment: leave out --assignments")
    if args.runs < 1:
        raise SystemExit("--runs: at least 1")
    load_before = os.getloadavg()[0]
    globals()["SLOW_SECONDS"] = args.slow_seconds
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="attention-kit-bench-") as tmp:
        tmp = Path(tmp)
        for assignment in assignments:
            build_class(course_copy(tmp / assignment), assignment, args.n)
        # the bare import and every assignment's cold single grade, interleaved
        singles = [[py, "-m", "autograder", "grade", str(tmp / a / "submitted" / "s000_correct" / a),
                    "--results", str(tmp / f"{a}-one.json"), "--quiet"] for a in assignments]
        cold_floors = [floor_cmd(a, [tmp / a / "submitted" / "s000_correct" / a], 1) for a in assignments]
        bare, *timings = medians_interleaved(2 * args.runs - 1, [py, "-c", "import torch, numpy"], *singles,
                                             *cold_floors, memory=args.memory)
        single, cold_floor = timings[:len(assignments)], timings[len(assignments):]
        runs = {}
        for assignment, one in zip(assignments, single):
            runs[assignment] = measure(assignment, tmp, args, tmp / f"{assignment}-one.json")
            runs[assignment]["seconds"]["single"], runs[assignment]["peak_bytes"]["single"] = one
        for assignment, cold in zip(assignments, cold_floor):
            runs[assignment].update(floor_and_peer(assignment, tmp, args, cold[0]))

    data = {"machine": {"cores": os.cpu_count(), "load_before": load_before,
                        "load_after": os.getloadavg()[0]},
            "date": datetime.date.today().isoformat(), "commit": git_commit(),
            "n": args.n, "nbgrader_n": args.nbgrader_n, "jobs": args.jobs, "slow_seconds": args.slow_seconds,
            "bare": {"seconds": bare[0], "peak_bytes": bare[1]}, "assignments": runs}
    print(render(data))
    if args.record:
        record(data)


def check_grades(csv_paths, single_result):
    """The batch's grades, checked before any speed is reported (a fast wrong grader is no use):
    every run gave every student the same row; every student of a kind (same notebooks but for
    the student's name) got the same row; the correct and slow ones full marks; and the correct
    student's total is the one the single grade gave. Returns {kind: "total/max"}."""
    import csv
    runs = []
    for p in csv_paths:          # grade-all writes UTF-8 with a byte order mark (Excel): read it as such
        with open(p, encoding="utf-8-sig", newline="") as f:
            runs.append(list(csv.DictReader(f)))
    problems = [f"run {i + 1} differs from run 1" for i, rows in enumerate(runs[1:], 1) if rows != runs[0]]
    by_kind = {}
    for row in runs[0]:
        kind = row["student"].split("_", 1)[1]
        marks = {k: v for k, v in row.items() if k != "student"}
        if row.get("error"):
            problems.append(f"{row['student']}: {row['error']}")
        if by_kind.setdefault(kind, marks) != marks:
            problems.append(f"{row['student']} is graded unlike the first {kind} student")
    for kind in ("correct", "slow"):
        if kind in by_kind and by_kind[kind]["total"] != by_kind[kind]["max_score"]:
            problems.append(f"a {kind} student scored {by_kind[kind]['total']}/{by_kind[kind]['max_score']}")
    if "correct" in by_kind and float(by_kind["correct"]["total"]) != float(single_result["score"]):
        problems.append(f"batch gave the correct student {by_kind['correct']['total']}, "
                        f"the single grade {single_result['score']}")
    if problems:
        raise SystemExit("the batch's grades are wrong, no speed reported:\n  " + "\n  ".join(problems))
    return {kind: f"{m['total']}/{m['max_score']}" for kind, m in by_kind.items()}


TARGETS = (("single vs nbgrader, per submission", ">= 6x faster", 6, "higher"),
           ("batch vs nbgrader, per submission", ">= 40x faster", 40, "higher"),
           ("single cold grade vs bare import", "<= 1.5x", 1.5, "lower"))
SUPERSEDED_BY_FLOOR = {"single cold grade vs bare import"}


def ratios(data, run):
    """The three ratios of issue 7 for one assignment's `run`, from the measured seconds (None for
    those against nbgrader where it was not run)."""
    sec = run["seconds"]
    batch_per = sec["batch"] / data["n"]
    if "nbgrader" not in sec:
        return [None, None, sec["single"] / data["bare"]["seconds"]]
    nbg_per = sec["nbgrader"] / data["nbgrader_n"]
    return [nbg_per / sec["single"], nbg_per / batch_per, sec["single"] / data["bare"]["seconds"]]


def render(data):
    """The benchmark's table, from its figures (used for the terminal and for README.md)."""
    mib = lambda b: f"{b / 2**20:.0f} MiB"  # noqa: E731
    m = data["machine"]
    lines = [f"machine: {m['cores']} cores (load average {m['load_before']:.2f} before, {m['load_after']:.2f} after); "
             f"{data['n']} submissions per assignment ({', '.join(KINDS)} in turn); "
             f"slow ones sleep {data['slow_seconds']:g} s per notebook",
             f"{'':<34}{'seconds':>10}{'peak memory':>14}",
             f"{'bare python -c import torch,numpy':<34}{data['bare']['seconds']:>10.2f}{mib(data['bare']['peak_bytes']):>14}"]
    for assignment, run in data["assignments"].items():
        sec, peak = run["seconds"], run["peak_bytes"]
        kinds = run.get("kinds", KINDS)              # fewer where the assignment has no slips (no buggy student)
        lines += [f"{assignment} ({run['steps']} notebooks a submission"
                  + (f"; {', '.join(kinds)} in turn" if kinds != KINDS else "") + ")",
                  f"{'  single: grade (cold process)':<34}{sec['single']:>10.2f}{mib(peak['single']):>14}",
                  f"{'  batch: grade-all --jobs %d' % data['jobs']:<34}{sec['batch']:>10.2f}{mib(peak['batch']):>14}"
                  f"   ({sec['batch'] / data['n']:.2f} s per submission"
                  + (f"; median of {len(run['batch_runs'])} runs, {min(run['batch_runs']):.2f} to "
                     f"{max(run['batch_runs']):.2f} s" if run.get("batch_runs") else "")
                  + ")"]
        if "nbgrader" in sec:
            lines.append(f"{'  nbgrader autograde (%d subs)' % data['nbgrader_n']:<34}{sec['nbgrader']:>10.2f}"
                         f"{mib(peak['nbgrader']):>14}   ({sec['nbgrader'] / data['nbgrader_n']:.2f} s per submission)")
        if run.get("grades"):
            lines.append("  grades (the same in every batch run, for every student of a kind, and as the single grade): "
                         + ", ".join(f"{kind} {total}" for kind, total in run["grades"].items()))
        for (name, target, bound, better), ratio in zip(TARGETS, ratios(data, run)):
            # issue 32 tightened the cold grade's target to 1.2x (render_floor's line): a record with the
            # floor shows that target only, not the two side by side
            if ratio is None or (name in SUPERSEDED_BY_FLOOR and "floor" in run):
                continue
            ok = ratio >= bound if better == "higher" else ratio <= bound
            lines.append(f"  {name:<36}{ratio:>7.1f}x   target {target:<14}{'met' if ok else 'NOT met'}")
        lines += render_floor(data, run)
    return "\n".join(lines)


# ------------------------------------------------------------------ the floor and the peer (issue 32)
def add_floor_arguments(ap):
    ap.add_argument("--otter-n", type=int, default=1, help="of the submissions, how many otter-grader grades, "
                    "one `otter run` per notebook (10-25 s each; 0: no peer; default %(default)s)")


def floor_cmd(assignment, submissions, jobs):
    """benchmarks/floor.py: the same checks, the student's code called in-process (no child, no wall)."""
    return [sys.executable, str(ROOT / "benchmarks" / "floor.py"), assignment, *map(str, submissions),
            "--jobs", str(jobs)]


def floor_and_peer(assignment, tmp, args, cold_floor):
    """The floor (the batch's, median of three runs with the batch's --jobs, and the cold one of one
    correct submission, timed with the single grades) and otter-grader's per-submission seconds.
    The floor's grade of every submission must be the batch's (the same checks), else no figure."""
    subs = sorted((tmp / assignment / "submitted").iterdir())
    cmd = floor_cmd(assignment, [s / assignment for s in subs], args.jobs)
    runs, grades = [], None
    for _ in range(args.runs):
        start = time.monotonic()
        out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        runs.append(time.monotonic() - start)
        if out.returncode != 0:
            raise SystemExit(f"the floor failed:\n{out.stderr[-4000:]}")
        grades = json.loads(out.stdout)
    check_floor_grades(assignment, grades, tmp / f"{assignment}-grades0.csv")
    result = {"floor": {"batch": statistics.median(runs), "batch_runs": runs, "single": cold_floor}}
    if args.otter_n > 0:
        out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "peer_otter.py"), assignment,
                              *[str(s / assignment) for s in subs[:args.otter_n]]],
                             cwd=ROOT, capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"otter-grader failed:\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}")
        peer = json.loads(out.stdout)
        result["otter"] = {"n": len(peer["seconds"]), "per_submission": statistics.median(peer["seconds"]),
                           "seconds": peer["seconds"], "scores": peer["scores"]}
    return result


def check_floor_grades(assignment, grades, csv_path):
    """The floor ran the same checks only if it gave every student the batch's total:
    `grades` is floor.py's {submission folder: "score/max"}, `csv_path` the batch's gradebook."""
    import csv
    with open(csv_path, encoding="utf-8-sig", newline="") as f:        # grade-all's byte order mark
        batch = {row["student"]: (float(row["total"]), float(row["max_score"])) for row in csv.DictReader(f)}
    floor = {Path(sub).parent.name: tuple(map(float, g.split("/"))) for sub, g in grades.items()}
    if floor != batch:
        raise SystemExit(f"the floor grades {assignment} unlike the batch (not the same checks?):\n"
                         f"  floor {floor}\n  batch {batch}")


FLOOR_TARGETS = (("single cold grade vs bare import", "<= 1.2x", 1.2),
                 ("batch vs floor, per submission", "<= 2x", 2.0))


def render_floor(data, run):
    """The floor's and the peer's lines of one assignment (none in a record made before issue 32)."""
    if "floor" not in run:
        return []
    sec, floor, n = run["seconds"], run["floor"], data["n"]
    batch_per, floor_per = sec["batch"] / n, floor["batch"] / n
    lines = [f"{'  floor: same checks, in-process':<34}{floor['batch']:>10.2f}{'':>14}   ({floor_per:.2f} s per "
             f"submission, --jobs {data['jobs']}; cold, one submission: {floor['single']:.2f} s)"]
    if "otter" in run:
        o = run["otter"]
        lines.append(f"{'  otter-grader run (%d subs)' % o['n']:<34}{o['per_submission']:>10.2f}{'':>14}"
                     f"   (s per submission: {run['steps']} `otter run`s; batch {o['per_submission'] / batch_per:.1f}x "
                     f"faster, single {o['per_submission'] / sec['single']:.1f}x)")
    values = (sec["single"] / data["bare"]["seconds"], batch_per / floor_per)
    for (name, target, bound), ratio in zip(FLOOR_TARGETS, values):
        lines.append(f"  {name:<36}{ratio:>7.1f}x   target {target:<14}{'met' if ratio <= bound else 'NOT met'}")
    lines.append(f"  {'single cold grade vs floor':<36}{sec['single'] / floor_per:>7.1f}x   "
                 f"(vs the cold floor {sec['single'] / floor['single']:.1f}x)")
    # what the checks alone cost cold (no child, no wall) against the bare import: the share of a cold grade no wall or child causes
    lines.append(f"  {'cold floor vs bare import':<36}{floor['single'] / data['bare']['seconds']:>7.1f}x   "
                 f"(the same checks, cold, with no child and no wall)")
    return lines


RECORD = ROOT / "benchmarks" / "grading_speed.json"
PAGE = ROOT / "docs" / "benchmark.md"      # the documentation site's benchmark page (issue 29: once README.md)
README_BEGIN, README_END = "<!-- benchmark:grading_speed begin -->", "<!-- benchmark:grading_speed end -->"


def readme_block(data):
    return (f"{README_BEGIN}\n```\n$ .venv/bin/python benchmarks/grading_speed.py --record   "
            f"# {data['date']}, commit {data['commit']}\n{render(data)}\n```\n{README_END}")


def write_record(record_path, data, page, begin, end, block, indent=2):
    """Write the figures to `record_path` and put `block` (which starts with `begin` and ends with
    `end`) in place of what stands between those markers in `page` (profile_record.py uses it too)."""
    record_path.write_text(json.dumps(data, indent=indent) + "\n")
    text = page.read_text(encoding="utf-8")
    a, b = text.index(begin), text.index(end) + len(end)
    page.write_text(text[:a] + block + text[b:], encoding="utf-8")
    print(f"recorded in {record_path.relative_to(ROOT)} and {page.relative_to(ROOT)}")


def record(data):
    """Write the figures and put their table into docs/benchmark.md (between the markers)."""
    write_record(RECORD, data, PAGE, README_BEGIN, README_END, readme_block(data))


def git_commit():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


if __name__ == "__main__":
    main()
