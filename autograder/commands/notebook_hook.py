"""The hook behind each notebook's hidden-test cell: `grade_step("04_softmax")`.

Run in a kernel (an instructor trying a source notebook), the cell grades the step's notebook
file in the current folder with the same isolated child process as the standalone grader, prints
the messages on stdout, and returns the points as the cell's value. Under `nbgrader autograde`
the cell does not run in the student's kernel: nbgrader_wall.TrustedGrades writes the same
output (`step_outcome`) from nbgrader's own process.

nbgrader reads that value as partial credit (`nbgrader.utils.determine_grade`), with two traps
this module closes:
  - any output on stderr, warnings included, makes nbgrader give the cell 0 whatever it returns;
    in a Jupyter kernel, writes to sys.stderr, to file descriptor 2 and from other threads all
    land in the running cell, so all three are diverted while grading;
  - a value above the cell's points makes autograding fail, and no value at all (or an error
    message that is not a number) gives full marks: the value is always a number in
    [0, points], and a failure of the grader itself gives 0 with a message, never an exception
    (whose traceback would also show the cell's hidden source in the feedback).

The messages are in the course's language: `c.AttentionKit.language = "zh"` in the course's
nbgrader_config.py (found upward from the notebook's folder, else from the working folder);
the environment variable ATTENTION_KIT_LANG overrides it; English by default.
"""
import ast
import contextlib
import io
import os
import sys
import tempfile
import traceback
import warnings
from pathlib import Path

from autograder import contract, i18n
from autograder.grading import run as grading
from autograder.i18n import _, render
from autograder.reports.text import clipped, written

MAX_MESSAGE = 1500        # characters of one check's message printed in the cell
LANGUAGE_ENV = "ATTENTION_KIT_LANG"
COURSE_CONFIG = "nbgrader_config.py"


def configured_language(config_text):
    """The value of `c.AttentionKit.language = "..."` in an nbgrader_config.py's text, or None.

    Read, not run: the course's config imports nbgrader, which a grading kernel need not pay for,
    and a setting is only ever a plain string."""
    try:
        tree = ast.parse(config_text)
    except (SyntaxError, ValueError):
        return None
    found = None
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
                and any(ast.unparse(t).replace(" ", "") == "c.AttentionKit.language" for t in node.targets)):
            found = node.value.value          # the last assignment wins, as when the file runs
    return found


def course_language(folder="."):
    """The language for a notebook in `folder`: $ATTENTION_KIT_LANG, else the course setting in the
    nearest nbgrader_config.py above `folder` (or above the working folder), else English.
    A language the grader does not have gives English: grading must go on whatever the setting."""
    lang = os.environ.get(LANGUAGE_ENV) or _course_setting(folder)
    return lang if lang in i18n.LANGUAGES else "en"


def _course_setting(folder):
    """The setting in the nearest course config (the nearest decides, with or without one)."""
    try:
        for start in (Path(folder), Path.cwd()):
            for parent in [start.resolve(), *start.resolve().parents]:
                config = parent / COURSE_CONFIG
                if config.is_file():
                    return configured_language(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):      # an unreadable folder or file: the default, never a failed cell
        pass
    return None


@contextlib.contextmanager
def stderr_diverted():
    """Send sys.stderr, file descriptor 2 and warnings to a buffer; yield a function reading it."""
    buffer = io.StringIO()
    saved_fd, spool = None, tempfile.TemporaryFile()
    try:
        sys.stderr.flush()
        saved_fd = os.dup(2)
        os.dup2(spool.fileno(), 2)
    except (OSError, ValueError):       # no usable fd 2 (embedded interpreters): Python level only
        saved_fd = None
    try:
        with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stderr(buffer):
            warnings.simplefilter("always")
            yield lambda: buffer.getvalue() + "".join(f"{w.category.__name__}: {w.message}\n" for w in caught)
    finally:
        if saved_fd is not None:
            os.dup2(saved_fd, 2)
            os.close(saved_fd)
            spool.seek(0)
            buffer.write(spool.read().decode("utf-8", "replace"))
        spool.close()


def _number_key(number):
    """A check's number as a sort key: "5.12" -> (5, 12), after "5.9"; anything else after the numbered."""
    try:
        return (0, *(int(part) for part in str(number).split(".")))
    except ValueError:
        return (1, str(number))


def _grade_lines(step, folder):
    """(points, lines to print) for one step file in `folder`."""
    files = [Path(folder) / name for name in step.files if (Path(folder) / name).exists()]
    if not files:
        a, b = step.files
        return 0.0, [_("No file for step {step}: expected {a} or {b}.", step=step.number, a=a, b=b)]
    result = written(grading.grade(files[0], steps=[step.stem])).steps[0]     # its texts in this language
    numbered = []            # (the check's number as a sort key, its lines): run and skipped checks in one order
    for c in result.checks:
        mark = _("[pass]") if c.status == "passed" else _("[FAIL]")
        block = [f"{mark} {c.number} {c.name} ({c.score:g}/{c.max_score:g})"]
        if c.status != "passed":
            block.append("    " + clipped(c.output, MAX_MESSAGE).replace("\n", "\n    "))
        numbered.append((_number_key(c.number), block))
    for number, name, reason in result.skipped:
        # one message, so that Chinese joins name and reason with its own colon ("：")
        numbered.append((_number_key(number), [_("[skip] {number} {name}: {reason}",
                                                  number=number, name=name, reason=reason)]))
    # skipped checks (the GPU's) come back after the ones that ran: listed by number, 5.9 stands before 5.12
    lines = [line for _key, block in sorted(numbered, key=lambda item: item[0]) for line in block]
    lines.append(_("Step {step}: {score}/{max_score}", step=step.number, score=f"{result.score:g}",
                   max_score=f"{result.max_score:g}"))
    return float(result.score), lines


def step_outcome(stem, folder=".", language_folder=None):
    """What the hidden-test cell of `stem` shows and is worth: (points, text, diagnostics).

    points: a number in [0, the step's points]; text: the lines grade_step prints, in the course's
    language (looked up from `language_folder`, by default `folder`); diagnostics: what the grader
    itself logged while grading (warnings, its own traceback), for the instructor only.
    Used by grade_step in a kernel, and by nbgrader_wall.TrustedGrades in nbgrader's own process."""
    step = contract.step_for_stem(stem)
    if step is None:
        # a stem no assignment of contract.ASSIGNMENTS has (every step there has its suite): no
        # points, and a plain sentence rather than a failed cell
        with i18n.language(course_language(language_folder or folder)):
            return 0.0, str(_("{stem} has no hidden tests yet: the autograder does not grade this step, "
                              "so this cell gives 0 points.", stem=stem)), ""
    internal = ""
    with i18n.language(course_language(language_folder or folder)):
        with stderr_diverted() as diverted:
            try:
                points, lines = _grade_lines(step, folder)
            except Exception:          # the grader's own failure; the instructor reruns it standalone
                internal = traceback.format_exc()
                points, lines = 0.0, [_("The grader could not grade step {step} (an internal error, "
                                        "not your code's fault). Please tell your instructor.", step=step.number)]
        logged = diverted()
        if logged.strip():
            # grader-side diagnostics: not the student's business, and nbgrader would zero the cell
            lines.append(_("(The grader logged diagnostics for the instructor; "
                           "`python -m autograder grade` on this file shows them.)"))
        text = "\n".join(render(line) for line in lines)        # in the course's language
    # nbgrader fails on a value above the cell's points; float sums can overshoot by 1e-15
    points = min(max(round(points, 6), 0.0), float(step.points))
    return points, text, (logged + internal).strip()


def grade_step(stem, folder="."):
    """Grade `stem`.ipynb (or .py) in `folder`, in the course's language; print each check;
    return the step's points."""
    points, text, _diagnostics = step_outcome(stem, folder)
    # one write, so one stream output: print's text and its newline are two writes, which a busy
    # kernel may send as two messages, and nbgrader keeps each as an output of its own
    sys.stdout.write(text + "\n")
    return points
