"""How long the class view takes for a large class, without grading it (README "The class view").

    .venv/bin/python benchmarks/class_report_speed.py [N] [--keep DIR]

Writes N synthetic students (default 1,000) into a results folder the way grade-all leaves it:
OUT/<student>/results.json (Gradescope format, checks tagged with their step, kind and named
mistake) and OUT/<student>/code.json (their own code, written by tests/harness/class_maker.py: correct
code in many styles, mistakes the grader names, slow loops, stubs, and one copied pair in every
50 students, renamed and reordered). Then builds the class view in a fresh process, as
`python -m autograder class-report OUT` does, and prints each part's time, the page's size and
whether exactly the planted pairs were flagged.
"""
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from harness import class_maker  # noqa: E402
from autograder import contract  # noqa: E402
from autograder.grading.run import CheckResult, Report, StepResult  # noqa: E402
from autograder.reports import similarity, stored  # noqa: E402

# per step: (kind of check, points) in order; a synthetic stand-in for the suites' checks
CHECKS = [("shape", 1), ("numbers", 3), ("numbers", 2), ("numbers", 1), ("property", 1), ("stability", 1),
          ("complexity", 1)]


def results_for(name, kinds):
    tests, steps = [], {}
    for step in contract.STEPS:
        kind = kinds[step.stem]
        score = 0.0
        for i, (ck, pts) in enumerate(CHECKS, 1):
            tags = [f"step:{step.stem}", f"kind:{ck}"]
            failed = (kind == "stub" or (kind == "slow" and ck == "complexity")
                      or (kind not in ("correct", "slow", "stub") and ck == "numbers"))
            if kind == "stub":
                tags.append("not-implemented")
                output = f"{step.names[0]}(...) raised NotImplementedError. This part is still a stub."
            elif failed and kind == "slow":
                tags.append("misconception:not-vectorized")
                output = "at sequence lengths 32, 64, 128 your code ran 40, 72, 136 lines of its own code."
            elif failed:
                tags.append(f"misconception:{kind}")
                output = f"values differ from the expected ones.\nLikely cause: {kind}"
            else:
                output = "Passed."
            score += 0 if failed else pts
            tests.append({"name": f"{step.number}.{i} {step.title}: check {i}", "number": f"{step.number}.{i}",
                          "score": 0 if failed else pts, "max_score": pts, "status": "failed" if failed else "passed",
                          "output": output, "visibility": "visible", "tags": tags})
        steps[step.stem] = {"file": f"{step.stem}.py", "score": score, "max_score": 10, "printed": "", "skipped": []}
    return {"score": sum(s["score"] for s in steps.values()), "output": "", "visibility": "visible",
            "stdout_visibility": "hidden", "tests": tests,
            "extra_data": {"max_score": 70, "grader": "attention-kit (synthetic)", "steps": steps,
                           "batch": {"student": name, "source": "", "results": name, "fingerprint": None}}}


def write_synthetic_class(out, n, seed=0):
    """OUT with n students; returns the planted copied pairs {(original, copier)}."""
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    mistakes = class_maker.MISTAKES
    planted, students = set(), {}
    for i in range(n):
        name = f"s{i:04d}"
        if i % 50 == 49:                       # a copier: the choices of the student before, disguised
            original = f"s{i - 1:04d}"
            kinds, seed_of = students[original]
            planted.add((original, name))
            students[name] = (kinds, seed_of)
            style = f"{name}-style"
        else:
            r = rng.random()
            kinds = dict.fromkeys(class_maker.STEMS, "correct")
            if r < 0.3:
                for stem in rng.sample(class_maker.STEMS, 2):
                    kinds[stem] = rng.choice(mistakes[stem])
            elif r < 0.4:
                kinds[rng.choice(["02_scores", "04_softmax", "05_weighted_sum", "06_multi_head"])] = "slow"
            elif r < 0.5:
                for stem in class_maker.STEMS[3 + rng.randrange(4):]:
                    kinds[stem] = "stub"
            seed_of = f"{name}-{seed}"
            students[name] = (kinds, seed_of)
            style = f"{name}-style"
        folder = out / name
        folder.mkdir(exist_ok=True)
        code = {}
        for stem, kind in kinds.items():
            if kind == "stub":
                nb = (class_maker.STUBS / f"{stem}.ipynb").read_bytes()
                code[stem] = {"file": f"{stem}.ipynb", "code": similarity.notebook_code(nb)}
            else:
                code[stem] = {"file": f"{stem}.py", "code": class_maker.code_for(stem, kind, seed_of, style)}
        (folder / "code.json").write_text(json.dumps({"version": 1, "steps": code}), encoding="utf-8")
        results = results_for(name, kinds)
        (folder / "results.json").write_text(json.dumps(results), encoding="utf-8")
        # what grade-all keeps beside it, signed by this grader: the class view reads only that
        stored.write(folder, stored.Stored(name, None, report_of(name, results)))
    return planted


def report_of(name, results):
    """The grading.run.Report that the synthetic results.json would have been written from."""
    steps = []
    for stem, step in results["extra_data"]["steps"].items():
        checks = []
        for t in results["tests"]:
            if f"step:{stem}" not in t["tags"]:
                continue
            kind = next(tag[5:] for tag in t["tags"] if tag.startswith("kind:"))
            named = [tag.split(":", 1)[1] for tag in t["tags"] if tag.startswith("misconception:")]
            extra = [tag for tag in t["tags"] if ":" not in tag]
            checks.append(CheckResult(stem, t["number"], t["name"], kind, float(t["max_score"]), float(t["score"]),
                                      t["status"], t["output"], named, extra))
        steps.append(StepResult(contract.STEP_BY_STEM[stem], step["file"], checks))
    return Report(name, steps, {"mode": "synthetic", "walled": True})


def main(argv):
    n = int(argv[0]) if argv and argv[0].isdigit() else 1000
    keep = argv[argv.index("--keep") + 1] if "--keep" in argv else None
    tmp = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="class-view-"))
    out = tmp / "out"
    try:
        t = time.perf_counter()
        planted = write_synthetic_class(out, n)
        print(f"{n} synthetic students written in {time.perf_counter() - t:.1f} s ({len(planted)} copied pairs)")
        code = ("import json, sys, time; t = time.perf_counter(); from autograder.reports import class_view as class_report; "
                "p, tm = class_report.build(sys.argv[1]); tm['with imports'] = time.perf_counter() - t; "
                "print(json.dumps(tm))")
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", code, str(out)], cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - t
        if proc.returncode:
            print(proc.stdout + proc.stderr)
            return 1
        timings = json.loads(proc.stdout.strip().splitlines()[-1])
        from autograder.reports import class_view
        report = json.loads(class_view.numbers_path(out).read_text(encoding="utf-8"))
        flagged = {(p["results_a"], p["results_b"]) for p in report["similarity"]["pairs"]
                   if p["flagged_steps"] or p["flagged_overall"]}      # the ranking lists the closest others too
        page = class_view.page_path(out).stat().st_size
        pages = sum(p.stat().st_size for p in out.glob("*/feedback.html"))
        print(f"class-report of {n} students (a fresh process, 2 similarity processes on this machine's cores):")
        for k in ("numbers", "similarity", "feedback_pages", "page", "total", "with imports"):
            print(f"  {k:<16} {timings[k]:6.1f} s")
        print(f"  wall (process)   {wall:6.1f} s")
        print(f"page {page / 1024:.0f} KiB; _class.json {class_view.numbers_path(out).stat().st_size / 1024:.0f} KiB; "
              f"{n} feedback pages {pages / 2**20:.1f} MiB")
        print(f"flagged pairs: {len(flagged)}; planted: {len(planted)}; exactly the planted: {flagged == planted}")
        extra = sorted(flagged - planted)[:10]
        if extra:
            print("  flagged but not planted:", extra)
        missed = sorted(planted - flagged)[:10]
        if missed:
            print("  planted but not flagged:", missed)
        return 0
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
