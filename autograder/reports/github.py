"""GitHub Actions and GitHub Classroom: `grade --format github` (and `--format classroom`).

In a workflow step, `--format github` does everything GitHub reads, so the workflow needs no
glue of its own:
  - the per-step table (Markdown) is appended to the job summary, $GITHUB_STEP_SUMMARY;
  - each failing step becomes an `::error file=...,title=...::message` annotation (stdout);
  - `result` (the GitHub Classroom grading reporter's format, base64 JSON), `score` and
    `max_score` are appended to the step's outputs, $GITHUB_OUTPUT.
The reporter (classroom-resources/autograding-grading-reporter) decodes each runner's
`<ID>_RESULTS` variable as base64 JSON {version, status, max_score, tests: [{name, status,
score, message, ...}]}, adds up the tests' scores and posts "Points score/max_score" to Classroom.

Student text cannot issue workflow commands (issue 12): in an annotation it is the command's data
or a property, escaped as GitHub documents (% CR LF; and : , in properties), after its control
characters were made visible (safe_text); printed raw into the log (the table, or the summary
when there is no $GITHUB_STEP_SUMMARY) it sits between `::stop-commands::TOKEN` and `::TOKEN::`,
TOKEN random per block, so the runner processes no command inside, whatever a line starts with.
"""
import base64
import json
import os
import re
import secrets

from autograder.i18n import _, render
from autograder.reports.text import clipped, lines_text, written
from autograder.safe_text import for_github_data, for_github_property, for_terminal

MAX_MESSAGE = 1000        # characters of one check's message in an annotation or a Classroom test


def _fmt(x):
    return f"{x:g}"


# ------------------------------------------------------------------ GitHub Classroom
def classroom_result(report):
    """The grading reporter's JSON: one test per check, points as each check's score."""
    report = written(report)
    tests = [{"name": f"{c.number} {s.step.shown_title}: {c.name}",
              "status": "pass" if c.status == "passed" else "fail",
              "score": c.score, "message": "" if c.status == "passed" else clipped(c.output, MAX_MESSAGE),
              "test_code": "", "filename": s.file or "", "line_no": 0, "duration": 0}
             for s in report.steps for c in s.checks]
    status = ("error" if report.internal_errors else
              "pass" if all(t["status"] == "pass" for t in tests) else "fail")
    return {"version": 1, "status": status, "max_score": report.max_score, "tests": tests}


def classroom_base64(report):
    return base64.b64encode(json.dumps(classroom_result(report)).encode()).decode("ascii")


# ------------------------------------------------------------------ job summary
def _cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def _code(text):
    """`text` as inline code in a table cell: a file's path is the student's (its folders' names),
    so no backtick in it can close the code span and no `|` end the cell."""
    text = _cell(text)
    fence = "`" * (max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
    return f"{fence} {text} {fence}" if "`" in text else f"{fence}{text}{fence}"


def _fenced(text):
    """`text` in a code block whose fence no run of backticks inside it can close."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


def summary_markdown(report):
    """The per-step table, then each failing check's message, in GitHub-flavoured Markdown."""
    report = written(report)
    lines = [f"## attention-kit: {_fmt(report.score)}/{_fmt(report.max_score)}", "",
             _("| Step | File | Score | Checks |"), "|---|---|---:|---|"]
    for s in report.steps:
        failed = sum(c.status != "passed" for c in s.checks)
        checks = (_("✅ all {n} passed", n=len(s.checks)) if not failed
                  else _("❌ {failed} of {n} failed", failed=failed, n=len(s.checks)))
        file = _code(s.file) if s.file else _("(missing)")
        lines.append(f"| {s.step.number}. {_cell(s.step.shown_title)} | {file} | "
                     f"{_fmt(s.score)}/{_fmt(s.max_score)} | {checks} |")
    lines.append(_("| | **Total** | **{score}/{max_score}** | |", score=_fmt(report.score),
                   max_score=_fmt(report.max_score)))
    for s in report.steps:
        failed = [c for c in s.checks if c.status != "passed"]
        if failed:
            lines += ["", _("### Step {step}: {title} ({score}/{max_score})", step=s.step.number,
                            title=s.step.shown_title, score=_fmt(s.score), max_score=_fmt(s.max_score))]
        for c in failed:
            names = "".join(f" `misconception:{m}`" for m in c.misconceptions)
            lines += ["", "<details>",
                      f"<summary>{c.number} {_html(c.name)} ({_fmt(c.score)}/{_fmt(c.max_score)}){names}</summary>",
                      "", _fenced(c.output), "", "</details>"]
    skipped = [(n, name, reason) for s in report.steps for n, name, reason in s.skipped]
    if skipped:
        lines += ["", _("Skipped (no points): {checks}",
                        checks="; ".join(f"{n} ({reason})" for n, _name, reason in skipped))]
    return lines_text(lines) + "\n"


def _html(text):
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# ------------------------------------------------------------------ annotations
_escape_data = for_github_data            # the names the module used before safe_text
_escape_property = for_github_property


def log_block(text):
    """`text` for the job log, where the runner reads every line that starts with `::` (after
    spaces) as a workflow command: inside `::stop-commands::TOKEN` ... `::TOKEN::`, with a
    random TOKEN the text does not hold, so no line of it is processed; control characters
    visible (safe_text.for_terminal)."""
    text = for_terminal(text)
    token = secrets.token_hex(16)
    while token in text:                    # the text was written before the token existed
        token = secrets.token_hex(16)
    return f"::stop-commands::{token}\n{text}\n::{token}::"


def annotations(report, paths=None):
    """One `::error` workflow command per step that lost points; `paths` maps a step's stem
    to its file's path relative to the repository root (else the file name is used)."""
    paths = paths or {}
    report = written(report)
    out = []
    for s in report.steps:
        failed = [c for c in s.checks if c.status != "passed"]
        if not failed:
            continue
        title = render(_("Step {step} ({score}/{max_score}): {title}", step=s.step.number, score=_fmt(s.score),
                         max_score=_fmt(s.max_score), title=s.step.shown_title))
        if s.file is None:
            message = failed[0].output
        else:
            lines, seen = [], {}
            for c in failed:      # one broken function fails many checks with the same words
                first = c.output.strip().splitlines()[0] if c.output.strip() else render(_("failed"))
                lines.append(f"{c.number} {c.name}: "
                             + (_("same as {check}", check=seen[first]) if first in seen else clipped(first, 300)))
                seen.setdefault(first, c.number)
            message = lines_text(lines)
        where = paths.get(s.step.stem) or s.file
        props = (f"file={_escape_property(str(where))}," if where else "") + f"title={_escape_property(title)}"
        out.append(f"::error {props}::{_escape_data(clipped(message, 4000))}")
    return out


# ------------------------------------------------------------------ writing GitHub's files
def write_github(report, paths=None, summary_path=None, env=os.environ):
    """Annotations on stdout; the summary to `summary_path`, else $GITHUB_STEP_SUMMARY, else
    stdout (in a log_block); the outputs to $GITHUB_OUTPUT when set. Returns the text meant for
    stdout."""
    printed = annotations(report, paths)
    summary_path = summary_path or env.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        # Markdown, rendered (and sanitised) by GitHub; control characters and text no UTF-8
        # can hold come out as escapes
        with open(summary_path, "a", encoding="utf-8", errors="backslashreplace") as f:
            f.write(for_terminal(summary_markdown(report)))
    else:
        printed.append(log_block(summary_markdown(report)))
    if env.get("GITHUB_OUTPUT"):
        with open(env["GITHUB_OUTPUT"], "a", encoding="utf-8") as f:
            f.write(f"result={classroom_base64(report)}\n"
                    f"score={_fmt(report.score)}\nmax_score={_fmt(report.max_score)}\n")
    return "\n".join(printed)
