"""A graded report's texts in one language: what every output format writes.

The results (grading/run.py) keep each text a student reads as a message (autograder/i18n.py),
and each failed check's recognised mistakes as misconception ids. A report renders them when it
writes, in the current language:

    check_text(check, framework)   the check's message, then one diagnosis paragraph per mistake
                                   (explanation and hint, the hint in the step's library's names)
    written(report)                the same report with every text a str: check titles, outputs
                                   (message + diagnosis), skipped reasons, the file search's notes

Gradescope's results.json, JUnit, GitHub, the terminal table and the notebook cell write
`written(report)`; the feedback page shows message and diagnosis apart (the diagnosis in its own
box, html.py) and renders them itself.
"""
from dataclasses import replace

from autograder import i18n
from autograder.i18n import render
from autograder.reference import misconceptions
from autograder.safe_text import clip


def mistakes(check):
    """The check's misconception ids that the catalogue knows (a report read back from a file may
    name others: they get no diagnosis)."""
    return [m for m in check.misconceptions if m in misconceptions.CATALOGUE]


def check_text(check, framework=None):
    """The check's message and, on a line each below it, the diagnosis of every mistake it named,
    as one str in the current language. framework: the step's library ("numpy" or "torch",
    contract.Step.framework), whose names the hints use."""
    found = mistakes(check)
    text = check.output + ("\n" + misconceptions.describe(found, framework) if found else "")
    return render(text)


def clipped(text, limit):
    """safe_text.clip's cut (saying how much was left out), as a str in the current language."""
    return render(clip(render(text), limit))


def lines_text(lines):
    """Lines (str or messages) as one str, a newline between them."""
    return "\n".join(render(line) for line in lines)


def written(report):
    """A copy of `report` whose texts are all str in the current language (idempotent: a written
    report is returned as it is). Scores, statuses, tags and files are unchanged."""
    if getattr(report, "written_in", None):
        return report
    steps = []
    for s in report.steps:
        framework = getattr(s.step, "framework", None)
        checks = [replace(c, name=render(c.name), output=check_text(c, framework)) for c in s.checks]
        skipped = [(n, render(name), render(reason)) for n, name, reason in s.skipped]
        steps.append(replace(s, checks=checks, skipped=skipped))
    copy = replace(report, steps=steps, notes=[render(n) for n in getattr(report, "notes", [])])
    copy.written_in = i18n.get_language()
    return copy
