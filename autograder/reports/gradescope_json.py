"""Reports from a graded submission: Gradescope results.json and the terminal table.

Both are written from `text.written(report)`: every message rendered in the current language, each
check's output its message and then the diagnosis of each mistake it named (reports/text.py).
"""
import unicodedata

from autograder import __version__, atomic, contract
from autograder.i18n import _, render
from autograder.reports.text import clipped, lines_text, written

MAX_OUTPUT = 4000          # characters of one check's output kept in results.json
MAX_PRINTED = 2000         # characters of a step's printed output kept


def results(score, output, tests, max_score, **extra):
    """A results.json: Gradescope's fields, then the kit's extra_data (max_score, the grader, then
    `extra`). The one skeleton of every results file: a graded report's and a submission's that
    could not be graded (error_results)."""
    return {"score": score, "output": output, "visibility": "visible", "stdout_visibility": "hidden",
            "tests": tests, "extra_data": {"max_score": max_score, "grader": f"attention-kit {__version__}", **extra}}


def error_results(message, assignment=None):
    """Results for a submission that could not be graded at all: it scores 0 and says why
    (`message`, rendered in the current language). Out of `assignment`'s points when it is known
    (contract.REGISTRY), else 0: nothing tells which assignment unreadable files were."""
    text = render(message)
    top = contract.REGISTRY[assignment].max_score if assignment in contract.REGISTRY else 0
    return results(0, text, [], top, steps={}, error=text, assignment=assignment)


def results_assignment(results):
    """The assignment a results.json (as read back: untrusted) graded: extra_data.assignment when it
    is registered, else told by its steps; None when neither tells (it could not be graded)."""
    extra = results.get("extra_data") if isinstance(results, dict) else None
    extra = extra if isinstance(extra, dict) else {}
    name = extra.get("assignment")
    if isinstance(name, str) and name in contract.REGISTRY:
        return name
    steps = extra.get("steps") if isinstance(extra.get("steps"), dict) else {}
    return contract.assignment_of_report([s for s in steps if isinstance(s, str)])


def assignment_of(report):
    """The assignment a Report graded (its steps say it; contract's registry), or None."""
    return contract.assignment_of_report([s.step.stem for s in report.steps])


def gradescope(report):
    """The Gradescope results.json structure (score, tests, extra_data), in the current language."""
    report = written(report)
    tests = []
    for step in report.steps:
        for c in step.checks:
            tests.append({"name": f"{c.number} {step.step.shown_title}: {c.name}", "number": c.number,
                          "score": c.score, "max_score": c.max_score, "status": c.status,
                          "output": clipped(c.output, MAX_OUTPUT), "visibility": "visible",
                          "tags": c.tags})
    steps = {s.step.stem: {"file": s.file, "score": s.score, "max_score": s.max_score,
                           "printed": clipped(s.printed, MAX_PRINTED),
                           "skipped": [{"number": n, "name": nm, "reason": r} for n, nm, r in s.skipped]}
             for s in report.steps}
    return results(report.score, render(summary_line(report)), tests, report.max_score,
                   assignment=assignment_of(report), steps=steps,
                   isolation=report.isolation, internal_errors=report.internal_errors,
                   # what the file search passed over (folders too deep, too many entries)
                   **({"file_search": report.notes} if getattr(report, "notes", None) else {}))


def write_results(report, path):
    """Write results.json atomically: a file or link planted at `path` is replaced, never followed."""
    atomic.write_json(path, gradescope(report))


def summary_line(report):
    return _("Total {score}/{max_score}", score=f"{report.score:g}", max_score=f"{report.max_score:g}")


def _fmt(x):
    return f"{x:g}"


def _pad(text, width, right=False):
    """`text` padded to `width` terminal columns: a CJK character takes two, so str.ljust
    would push the Chinese table's columns out of line."""
    text = str(text)
    room = " " * max(0, width - sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text))
    return room + text if right else text + room


def table(report, details=True):
    """The per-step table a student or instructor reads in a terminal (in the current language)."""
    report = written(report)
    lines = [f"attention-kit: {report.submission}", "",
             f"{_pad(_('step'), 5)} {_pad(_('file'), 24)} {_pad(_('score'), 7, right=True)}  {_('checks')}"]
    for s in report.steps:
        marks = "".join("." if c.status == "passed" else "F" for c in s.checks)
        score = f"{_fmt(s.score)}/{_fmt(s.max_score)}"
        lines.append(f"{s.step.number:<5} {_pad(s.file or _('(missing)'), 24)} {score:>7}  {marks}")
    lines.append(f"{'':<5} {_pad(_('total'), 24)} {_fmt(report.score) + '/' + _fmt(report.max_score):>7}")
    if details:
        failed = [(s, c) for s in report.steps for c in s.checks if c.status != "passed"]
        shown_missing, seen = set(), {}
        for s, c in failed:
            if s.file is None:
                if s.step.stem not in shown_missing:
                    shown_missing.add(s.step.stem)
                    lines += ["", _("step {step}: {message}", step=s.step.number, message=c.output)]
                continue
            tags = [t for t in c.tags if t.startswith("misconception:")]
            lines += ["", f"{c.number} {c.name} [{c.kind}{', ' + ', '.join(tags) if tags else ''}]"]
            if (s.step.stem, c.output) in seen:      # one broken file fails many checks alike
                lines.append("    " + _("(same message as {check})", check=seen[s.step.stem, c.output]))
                continue
            seen[s.step.stem, c.output] = c.number
            lines += ["    " + ln for ln in c.output.splitlines()]
        notes = [(s, c) for s in report.steps for c in s.checks if c.status == "passed" and "\n" in c.output]
        for s, c in notes:
            lines += ["", _("{check} {name}: passed, with a note", check=c.number, name=c.name)]
            lines += ["    " + ln for ln in c.output.splitlines()[1:]]
        for s in report.steps:
            for number, name, reason in s.skipped:
                lines += ["", _("{check} {name}: skipped ({reason})", check=number, name=name, reason=reason)]
    return lines_text(lines)
