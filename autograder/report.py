"""Reports from a graded submission: Gradescope results.json and the terminal table."""
import json
import os
import tempfile

from . import __version__

MAX_OUTPUT = 4000          # characters of one check's output kept in results.json
MAX_PRINTED = 2000         # characters of a step's printed output kept


def _clip(text, limit):
    return text if len(text) <= limit else text[:limit] + f"\n... ({len(text) - limit} more characters)"


def gradescope(report):
    """The Gradescope results.json structure (score, tests, extra_data)."""
    tests = []
    for step in report.steps:
        for c in step.checks:
            tests.append({"name": f"{c.number} {step.step.title}: {c.name}", "number": c.number,
                          "score": c.score, "max_score": c.max_score, "status": c.status,
                          "output": _clip(c.output, MAX_OUTPUT), "visibility": "visible",
                          "tags": c.tags})
    steps = {s.step.stem: {"file": s.file, "score": s.score, "max_score": s.max_score,
                           "printed": _clip(s.printed, MAX_PRINTED),
                           "skipped": [{"number": n, "name": nm, "reason": r} for n, nm, r in s.skipped]}
             for s in report.steps}
    return {"score": report.score, "output": summary_line(report), "visibility": "visible",
            "stdout_visibility": "hidden", "tests": tests,
            "extra_data": {"max_score": report.max_score, "grader": f"attention-kit {__version__}",
                           "steps": steps, "isolation": report.isolation,
                           "internal_errors": report.internal_errors}}


def write_results(report, path):
    """Write results.json atomically: a file or link planted at `path` is replaced, never followed."""
    path = os.path.abspath(path)
    fd, tmp = tempfile.mkstemp(prefix=".results-", dir=os.path.dirname(path))
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(gradescope(report), f, indent=2)
        f.write("\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def summary_line(report):
    return f"Total {report.score:g}/{report.max_score:g}"


def _fmt(x):
    return f"{x:g}"


def table(report, details=True):
    """The per-step table a student or instructor reads in a terminal."""
    lines = [f"attention-kit: {report.submission}", "",
             f"{'step':<5} {'file':<24} {'score':>7}  checks"]
    for s in report.steps:
        marks = "".join("." if c.status == "passed" else "F" for c in s.checks)
        score = f"{_fmt(s.score)}/{_fmt(s.max_score)}"
        lines.append(f"{s.step.number:<5} {(s.file or '(missing)'):<24} {score:>7}  {marks}")
    lines.append(f"{'':<5} {'total':<24} {_fmt(report.score) + '/' + _fmt(report.max_score):>7}")
    if details:
        failed = [(s, c) for s in report.steps for c in s.checks if c.status != "passed"]
        shown_missing, seen = set(), {}
        for s, c in failed:
            if s.file is None:
                if s.step.stem not in shown_missing:
                    shown_missing.add(s.step.stem)
                    lines += ["", f"step {s.step.number}: {c.output}"]
                continue
            tags = [t for t in c.tags if t.startswith("misconception:")]
            lines += ["", f"{c.number} {c.name} [{c.kind}{', ' + ', '.join(tags) if tags else ''}]"]
            if (s.step.stem, c.output) in seen:      # one broken file fails many checks alike
                lines.append(f"    (same message as {seen[s.step.stem, c.output]})")
                continue
            seen[s.step.stem, c.output] = c.number
            lines += ["    " + ln for ln in c.output.splitlines()]
        notes = [(s, c) for s in report.steps for c in s.checks if c.status == "passed" and "\n" in c.output]
        for s, c in notes:
            lines += ["", f"{c.number} {c.name}: passed, with a note"]
            lines += ["    " + ln for ln in c.output.splitlines()[1:]]
        for s in report.steps:
            for number, name, reason in s.skipped:
                lines += ["", f"{number} {name}: skipped ({reason})"]
    return "\n".join(lines)
