"""Where a grade's time goes, recorded: benchmarks/profile_stages.py run for every registered assignment,
the kit beside its floor, and its table put into docs/benchmark-profile.md (a benchmark, not a test).

    .venv/bin/python benchmarks/profile_record.py [--repeat 3] [--record]

For each assignment (contract.ASSIGNMENTS) one correct submission is built as the speed benchmark builds
it (grading_speed.build_class), then profiled twice, each in a fresh process: the kit (`profile_stages.py
A SUB`, its zygotes started first, as a cold `grade` does) and the floor (`--floor`: the same checks, the
student's code in-process). The first grade of a process is the cold one, the others are warm (as a
batch worker grades); the warm figures are the median of those. Every figure is [wall, CPU of the
grading process] in seconds; the children's CPU is not in it (the floor has none, so its CPU is all the work).

    --record   writes the figures to benchmarks/profile_stages.json and the table into
               docs/benchmark-profile.md between its `profile:stages` markers (tests/test_benchmark_record.py
               holds the two equal: the page's numbers are this program's output, never typed)
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))     # as profile_stages.py imports floor
from autograder import contract  # noqa: E402
import grading_speed  # noqa: E402  (its class builder, its record writer, its commit)

RECORD = ROOT / "benchmarks" / "profile_stages.json"
PAGE = ROOT / "docs" / "benchmark-profile.md"
BEGIN, END = "<!-- profile:stages begin -->", "<!-- profile:stages end -->"
MODES = ("kit", "floor")

# the table's rows: (label, how to read the figure from one profile)
IMPORT_KIT = "autograder.grading.run (pytest, the kit)"
OPEN = "open suites (pytest configure + collect: suites, references)"
STAGES = ("2 start children (to the last one started)", "3 run checks", "4 close children", "5 build report")


def profile(assignment, submission, mode, repeat):
    cmd = [sys.executable, str(ROOT / "benchmarks" / "profile_stages.py"), assignment, str(submission),
           "--repeat", str(repeat)] + (["--floor"] if mode == "floor" else [])
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"profile_stages.py {assignment} ({mode}) failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout)


def warm(grades, pick):
    """The median over the warm grades of pick(grade): a number, or a [wall, cpu] pair."""
    values = [pick(g) for g in grades if g["warm"]]
    if isinstance(values[0], list):
        return [statistics.median(v[0] for v in values), statistics.median(v[1] for v in values)]
    return statistics.median(values)


def rows(p):
    """[(label, figure)] of one profile; a figure is [wall, cpu] or one number (wall seconds, or a count)."""
    cold = p["grades"][0]
    out = [("import numpy", p["imports"]["numpy"]), ("import torch", p["imports"]["torch"]),
           ("import the grader (pytest, the kit)", p["imports"][IMPORT_KIT]),
           ("open the suites (configure, collect)", p[OPEN])]
    for label, grade in (("cold", lambda pick: pick(cold)), ("warm", lambda pick: warm(p["grades"], pick))):
        for stage in STAGES:
            out.append((f"{label}: {stage}", grade(lambda g, s=stage: g["stages"][s])))
        out.append((f"{label}: waiting for the children, wall",
                    grade(lambda g: g["checks: waiting for the child, all"])))
        out.append((f"{label}: pytest per check, ms wall",
                    grade(lambda g: 1000 * g["pytest overhead per check (protocol - call)"])))
    out += [("checks per submission", cold["checks"]), ("score", cold["score"]),
            ("whole process", p["process total"])]
    return out


def cell(figure):
    if isinstance(figure, list):
        return f"{figure[0]:.2f} / {figure[1]:.2f}"
    if isinstance(figure, str):
        return figure
    return str(figure) if isinstance(figure, int) else f"{figure:.2f}"     # a count, or seconds


def render(data):
    """The page's table: one column per assignment and mode, one row per stage."""
    m = data["machine"]
    cols = [(a, mode) for a in data["assignments"] for mode in MODES]
    table = [[label for label, _ in rows(data["assignments"][cols[0][0]][cols[0][1]])]]
    for a, mode in cols:
        table.append([cell(fig) for _, fig in rows(data["assignments"][a][mode])])
    lines = [f"Recorded {data['date']}, commit {data['commit']}, {m['cores']} cores, load average "
             f"{m['load_before']:.2f} before and {m['load_after']:.2f} after; seconds as wall / CPU of the "
             f"grading process; warm: the median of grades 2 to {data['repeat']} in the same process.",
             "",
             "| | " + " | ".join(f"{a}, {mode}" for a, mode in cols) + " |",
             "|---|" + "---|" * len(cols)]
    for i, label in enumerate(table[0]):
        lines.append(f"| {label} | " + " | ".join(col[i] for col in table[1:]) + " |")
    return "\n".join(lines)


def block(data):
    return f"{BEGIN}\n{render(data)}\n{END}"


def record(data):
    grading_speed.write_record(RECORD, data, PAGE, BEGIN, END, block(data), indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3, help="grades per process, the first cold (default %(default)s)")
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    if args.repeat < 2:
        raise SystemExit("--repeat: at least 2 (one cold grade, then warm ones)")
    load_before = os.getloadavg()[0]
    runs = {}
    with tempfile.TemporaryDirectory(prefix="attention-kit-profile-") as tmp:
        for a in contract.ASSIGNMENTS:
            grading_speed.build_class(Path(tmp) / a, a, 1)
            sub = Path(tmp) / a / "submitted" / "s000_correct" / a
            runs[a] = {mode: profile(a, sub, mode, args.repeat) for mode in MODES}
    data = {"date": datetime.date.today().isoformat(), "commit": grading_speed.git_commit(), "repeat": args.repeat,
            "machine": {"cores": os.cpu_count(), "load_before": load_before, "load_after": os.getloadavg()[0]},
            "assignments": runs}
    print(render(data))
    if args.record:
        record(data)


if __name__ == "__main__":
    main()
