"""An independent peer: otter-grader running the same notebooks, one hidden test per step.

    .venv/bin/python benchmarks/peer_otter.py ASSIGNMENT SUBMISSION... [--work DIR]

What a course would pay per notebook with otter-grader (`pip install -e .[bench]`), for comparison
with the kit's own figures: for every step, an autograder zip (`otter generate`) holding one hidden
OK-format test, and every submitted notebook graded with `otter run`, otter's local, non-container
route (`otter grade` needs Docker, which this machine has not). `otter run` takes one notebook at a
time, so a submission of S steps is S runs, one after another, as nbgrader's route is timed.

The test is deliberately light (every name the step's contract asks for is defined, and callable):
the figure is otter's own overhead per notebook (its process, its kernel, executing the notebook,
its results), not a second grader; the kit's checks are far more (hundreds of values per step).
Prints one JSON object: {"seconds": [per submission], "scores": {submission: "score/max"}}.
"""
import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from autograder import contract  # noqa: E402

BIN = Path(sys.executable).parent


def hidden_test(step):
    """One OK-format test (otter's own format) for `step`: its contract's names exist and are callable."""
    names = [api.name for api in step.api]
    code = "\n".join(f">>> callable({name})\nTrue" for name in names)
    return {"name": step.stem, "points": step.points,
            "suites": [{"cases": [{"code": code, "hidden": True, "locked": False}],
                        "scored": True, "setup": "", "teardown": "", "type": "doctest"}]}


def autograder_zips(assignment, work):
    """{stem: path of the step's otter autograder zip}, made by `otter generate`."""
    zips = {}
    for step in contract.ASSIGNMENTS[assignment]:
        folder = work / f"otter-{step.stem}"
        (folder / "tests").mkdir(parents=True)
        (folder / "tests" / f"q{step.number}.py").write_text(f"OK_FORMAT = True\n\ntest = {hidden_test(step)!r}\n")
        zips[step.stem] = folder / "autograder.zip"
        subprocess.run([str(BIN / "otter"), "generate", "-t", "tests", "-o", "autograder.zip", "--no-config",
                        "--no-requirements", "--no-environment"], cwd=folder, check=True, capture_output=True)
    return zips


def run_one(zip_path, notebook, out):
    """(score, max) of `otter run` on one notebook."""
    out.mkdir(parents=True)
    done = subprocess.run([str(BIN / "otter"), "run", "-a", str(zip_path), "-o", str(out), "--no-logo", str(notebook)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"otter run failed on {notebook}:\n{done.stdout}\n{done.stderr}")
    results = json.loads((out / "results.json").read_text())
    tests = results.get("tests", [])
    if any(t.get("name") == "Autograder Failed" for t in tests) or not tests:
        raise SystemExit(f"otter's autograder failed on {notebook}: {json.dumps(tests)[:2000]}")
    return sum(t.get("score", 0) for t in tests), sum(t.get("max_score", 0) for t in tests)


def grade(assignment, submissions, work):
    zips = autograder_zips(assignment, work)
    seconds, scores = [], {}
    for i, sub in enumerate(submissions):
        start, got, most = time.monotonic(), 0, 0
        for step in contract.ASSIGNMENTS[assignment]:
            score, top = run_one(zips[step.stem], Path(sub) / f"{step.stem}.ipynb", work / f"out{i}" / step.stem)
            got, most = got + score, most + top
        seconds.append(time.monotonic() - start)
        scores[sub] = f"{got:g}/{most:g}"
    return {"seconds": seconds, "scores": scores}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("assignment")
    ap.add_argument("submissions", nargs="+")
    ap.add_argument("--work", help="a folder for the zips and results (default: a temporary one)")
    args = ap.parse_args()
    if args.work:
        print(json.dumps(grade(args.assignment, args.submissions, Path(args.work))))
        return
    with tempfile.TemporaryDirectory(prefix="attention-kit-otter-") as work:
        print(json.dumps(grade(args.assignment, args.submissions, Path(work))))


if __name__ == "__main__":
    main()
