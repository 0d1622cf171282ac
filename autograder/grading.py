"""Grade one submission: find its step files, run the hidden suites against them, collect results.

The hidden suites are ordinary pytest files (suites/test_<stem>.py). They run here, in the
trusted parent, through `pytest.main`; each step's student code runs in its own child process
(sandbox.StepSession), reached through the `student` fixture. This module turns pytest's
outcomes into scored checks.
"""
import contextlib
import io
import re
import sys
import tempfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from . import contract
from .checks import NOTES, CheckFailed
from . import isolation
from .sandbox import Budget, Limits, StepSession, StudentProblem

SUITES_DIR = Path(__file__).parent / "suites"
SESSIONS = pytest.StashKey[dict]()


@dataclass
class CheckResult:
    step: str            # file stem, e.g. "04_softmax"
    number: str          # e.g. "4.2"
    name: str
    kind: str            # shape | numbers | property | stability | ...
    max_score: float
    score: float
    status: str          # passed | failed
    output: str
    misconceptions: list = field(default_factory=list)
    extra_tags: list = field(default_factory=list)

    @property
    def tags(self):
        return ([f"step:{self.step}", f"kind:{self.kind}"] + self.extra_tags
                + [f"misconception:{m}" for m in self.misconceptions])


@dataclass
class StepResult:
    step: contract.Step
    file: str = None            # the file graded, or None when missing
    checks: list = field(default_factory=list)
    skipped: list = field(default_factory=list)   # (number, name, reason)
    printed: str = ""           # bounded excerpt of what the student's code printed
    cell_errors: list = field(default_factory=list)

    @property
    def score(self):
        return sum(c.score for c in self.checks)

    @property
    def max_score(self):
        return sum(c.max_score for c in self.checks)


@dataclass
class Report:
    submission: str
    steps: list
    isolation: dict
    internal_errors: int = 0

    @property
    def score(self):
        return sum(s.score for s in self.steps)

    @property
    def max_score(self):
        return sum(s.max_score for s in self.steps)


# ------------------------------------------------------------------ finding the files
def find_step_files(submission):
    """Map step stem -> file for a folder (searched recursively) or a single step file.

    A notebook wins over a .py of the same stem only when both exist at the same depth;
    the shallowest file wins otherwise (a stray copy deep in a sub-folder does not).
    """
    submission = Path(submission)
    if submission.is_file():
        step = contract.step_for_stem(submission.stem)
        return {step.stem: submission} if step and submission.suffix in (".py", ".ipynb") else {}
    found = {}
    for step in contract.STEPS:
        candidates = [p for name in step.files for p in submission.rglob(name)
                      if ".ipynb_checkpoints" not in p.parts and p.is_file()]
        if candidates:
            found[step.stem] = min(candidates, key=lambda p: (len(p.parts), p.suffix != ".ipynb", str(p)))
    return found


# ------------------------------------------------------------------ pytest plugin
class GradingPlugin:
    """Hands the step sessions to the suites and records each check's outcome."""

    def __init__(self, sessions):
        self.sessions = sessions
        self.results = {}        # stem -> [CheckResult]
        self.skipped = {}        # stem -> [(number, name, reason)]
        self.internal_errors = 0

    def pytest_configure(self, config):
        config.stash[SESSIONS] = self.sessions

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        marker = item.get_closest_marker("check")
        if marker is None:
            return
        if call.when == "call" or (call.when == "setup" and report.outcome != "passed"):
            self._record(item, call, report, marker.kwargs)

    def _record(self, item, call, report, spec):
        stem = item.module.STEP
        name = spec.get("name") or _first_line(item.function.__doc__) or item.name
        points = float(spec["points"])
        misc, extra = [], []
        if report.skipped:
            reason = call.excinfo.value.msg if call.excinfo else "skipped"
            self.skipped.setdefault(stem, []).append((spec["number"], name, reason))
            return
        if report.passed:
            notes = item.stash.get(NOTES, [])
            status, score, output = "passed", points, "\n".join(["Passed."] + notes)
        else:
            status, score = "failed", 0.0
            exc = call.excinfo.value if call.excinfo else None
            if isinstance(exc, CheckFailed):
                output, misc = exc.message, exc.misconceptions
            elif isinstance(exc, StudentProblem):
                output = exc.student_message()
                if getattr(exc, "is_stub", False):
                    extra = ["not-implemented"]
            else:
                # a bug in the grader, not in the student's code: tell the instructor in full,
                # the student only that it happened
                self.internal_errors += 1
                print(f"attention-kit: internal error in check {spec['number']} ({item.nodeid}):\n"
                      + "".join(traceback.format_exception(exc)) if exc else str(report.longrepr),
                      file=sys.__stderr__)
                output = ("The grader could not finish this check because of an internal error "
                          "(not your code's fault). Please tell your instructor.")
        self.results.setdefault(stem, []).append(CheckResult(
            stem, spec["number"], name, spec["kind"], points, score, status, output, misc, extra))


def _first_line(doc):
    return doc.strip().splitlines()[0].strip() if doc and doc.strip() else None


def _number_key(number):
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"[.]", number))


# ------------------------------------------------------------------ grading
def grade(submission, limits=None, steps=None):
    """Grade a folder or single step file. Returns a Report; never raises for student code."""
    limits = limits or Limits()
    mode = isolation.choose_mode(limits.isolation)
    if mode != "process":
        isolation.protect_grader()
    budget = Budget(limits.submission_seconds)
    files = find_step_files(submission)
    if Path(submission).is_file():
        steps = steps or [s.stem for s in contract.STEPS if s.stem in files]
    wanted = [s for s in contract.STEPS if steps is None or s.stem in steps]
    sessions = {s.stem: StepSession(s, files.get(s.stem), limits, budget, mode) for s in wanted}
    plugin = GradingPlugin(sessions)
    args = [str(SUITES_DIR / f"test_{s.stem}.py") for s in wanted] + [
        "-c", str(SUITES_DIR / "pytest.ini"), "--rootdir", str(SUITES_DIR), "-p", "no:cacheprovider",
        "--import-mode=importlib", "-q", "-s", "--no-header", "-p", "no:randomly",
        # the plugin reads each outcome itself: pytest's own source-quoting failure report only costs time
        "--tb=native",
        # its gc.collect() x5 at every session's end is a fifth of a warm grade; student code never runs here
        "-p", "no:unraisableexception"]
    log = io.StringIO()
    try:
        with contextlib.redirect_stdout(log):
            code = pytest.main(args, plugins=[plugin])
    finally:
        for session in sessions.values():
            session.close()
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        # collection errors or the like: the grader itself is broken
        raise RuntimeError(f"the hidden suites did not run (pytest exit {code}):\n{log.getvalue()}")
    step_results = []
    for s in wanted:
        session = sessions[s.stem]
        checks = sorted(plugin.results.get(s.stem, []), key=lambda c: _number_key(c.number))
        step_results.append(StepResult(
            s, session.display if session.path else None, checks, plugin.skipped.get(s.stem, []),
            session.printed(), session.cell_errors))
    return Report(str(submission), step_results, isolation_info(limits, mode), plugin.internal_errors)


def isolation_info(limits, mode):
    """What isolation applied, for the instructor's audit (results.json extra_data)."""
    info = isolation.make_plan(mode, tempfile.gettempdir(), limits, limits.hide, uid=isolation.BASE_UID).info()
    info.pop("visible_paths")  # the grader's own paths are none of the student's business
    if mode == "uid":
        info["uid"] = "a uid of its own per child process, not the grader's (from %d up)" % isolation.BASE_UID
    if mode != "process" and isolation.gpu_present():
        info["pid_namespace"] = "off for the torch steps on this GPU machine (CUDA does not start inside one)"
    info.update({"process": "one child process per step, own session, PID namespace and scratch folder"
                 if mode != "process" else "one child process per step, own session and scratch folder",
                 "call_seconds": limits.call_seconds, "submission_seconds": limits.submission_seconds,
                 "output_bytes": limits.output_bytes,
                 "data_crossing": "JSON; arrays as dtype + shape + bytes; nothing unpickled"})
    from . import zygote
    info["start"] = ("forked from a zygote that imported numpy and torch once, then isolated as above"
                     if zygote.current() is not None else "a fresh python -I runner.py per child")
    return info
