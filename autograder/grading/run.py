"""Grade one submission, in five stages (`grade`, below, is that list):

1. discover: its step files, read as data (`submitted_files.find`)
2. start children: one isolated child per step, its file loading in the background
3. run checks: the hidden suites (pytest, driven here and nowhere else) against those children
4. close children: every child and its cgroup gone
5. build the report: scored checks per step, and the feedback page's examples when asked

The hidden suites are ordinary pytest files (suites/step<stem>.py, e.g. suites/step04_softmax.py),
run in this trusted process; each step's student code runs in its own child (sandbox StepChild),
reached through the suites' `student` fixture.
"""
import contextlib
import io
import os
import re
import sys
import tempfile
import threading
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from _pytest.config import _prepareconfig   # what pytest.main opens a session with

from autograder import contract, submitted_files
from autograder.checks.expect import EXAMPLE, NOTES, CheckFailed, Example
from autograder.checks.student import STEP_CHILDREN
from autograder.i18n import _, from_data, join, render, to_data, translate
from autograder.sandbox import isolation
from autograder.sandbox.limits import Budget, Limits
from autograder.sandbox.problems import StudentProblem
from autograder.sandbox.step_child import StepChild

SUITES_DIR = Path(__file__).resolve().parents[1] / "suites"


# The results keep every text a student reads as a message (autograder/i18n.py), in no language
# yet: a report renders them, with each check's diagnosis from its misconception ids, when it
# writes. `to_data()` / `from_data()`: the same results as JSON-safe data (a batch worker's answer,
# its resume cache).
@dataclass
class CheckResult:
    step: str            # file stem, e.g. "04_softmax"
    number: str          # e.g. "4.2"
    name: object         # the check's title: a message
    kind: str            # shape | numbers | property | stability | ...
    max_score: float
    score: float
    status: str          # passed | failed
    output: object       # a message, without the diagnosis (that is `misconceptions`)
    misconceptions: list = field(default_factory=list)
    extra_tags: list = field(default_factory=list)

    @property
    def tags(self):
        return ([f"step:{self.step}", f"kind:{self.kind}"] + self.extra_tags
                + [f"misconception:{m}" for m in self.misconceptions])

    def to_data(self):
        return {"step": self.step, "number": self.number, "name": to_data(self.name), "kind": self.kind,
                "max_score": self.max_score, "score": self.score, "status": self.status,
                "output": to_data(self.output), "misconceptions": list(self.misconceptions),
                "extra_tags": list(self.extra_tags)}

    @classmethod
    def from_data(cls, d):
        return cls(str(d["step"]), str(d["number"]), from_data(d["name"]), str(d["kind"]), float(d["max_score"]),
                   float(d["score"]), str(d["status"]), from_data(d["output"]), _strs(d["misconceptions"]),
                   _strs(d["extra_tags"]))


@dataclass
class StepResult:
    step: contract.Step
    file: str = None            # the file graded, or None when missing
    checks: list = field(default_factory=list)
    skipped: list = field(default_factory=list)   # (number, name, reason)
    printed: object = ""        # bounded excerpt of what the student's code printed (a note, a message, when cut)
    cell_errors: list = field(default_factory=list)
    example: object = None      # checks.expect.Example: the feedback page's, when asked for

    @property
    def score(self):
        return sum(c.score for c in self.checks)

    @property
    def max_score(self):
        return sum(c.max_score for c in self.checks)

    def to_data(self):
        return {"step": self.step.stem, "file": self.file, "checks": [c.to_data() for c in self.checks],
                "skipped": [[n, to_data(name), to_data(reason)] for n, name, reason in self.skipped],
                "printed": to_data(self.printed), "cell_errors": self.cell_errors,
                "example": None if self.example is None else self.example.to_data()}

    @classmethod
    def from_data(cls, d):
        step = contract.STEP_BY_STEM[d["step"]]
        return cls(step, None if d["file"] is None else str(d["file"]), [CheckResult.from_data(c) for c in d["checks"]],
                   [(str(n), from_data(name), from_data(reason)) for n, name, reason in d["skipped"]],
                   from_data(d["printed"]), [{str(k): str(v) for k, v in e.items()} for e in d["cell_errors"]],
                   None if d.get("example") is None else Example.from_data(d["example"]))


@dataclass
class Report:
    submission: str
    steps: list
    isolation: dict
    internal_errors: int = 0
    notes: list = field(default_factory=list)     # what the file search passed over (too deep, too many)

    @property
    def score(self):
        return sum(s.score for s in self.steps)

    @property
    def max_score(self):
        return sum(s.max_score for s in self.steps)

    def to_data(self):
        """The report as JSON-safe data (lists, dicts, str, numbers; messages as i18n.to_data gives them)."""
        return {"submission": self.submission, "steps": [s.to_data() for s in self.steps],
                "isolation": self.isolation, "internal_errors": self.internal_errors,
                "notes": [to_data(n) for n in self.notes]}

    @classmethod
    def from_data(cls, d):
        """The Report `to_data` gave; raises ValueError, KeyError or TypeError for anything else."""
        if not isinstance(d.get("isolation"), dict):
            raise ValueError("not a report")
        return cls(str(d["submission"]), [StepResult.from_data(s) for s in d["steps"]], d["isolation"],
                   int(d["internal_errors"]), [from_data(n) for n in d["notes"]])


def _strs(items):
    if not isinstance(items, list):
        raise ValueError("not a list")
    return [str(i) for i in items]


# ------------------------------------------------------------------ finding the files
def find_step_files(submission):
    """Map step stem -> submitted_files.StepFile (its bytes, read as data) for a folder (searched
    breadth first, never through a link) or a single step file. See submitted_files.find."""
    return submitted_files.find(submission).files


# ------------------------------------------------------------------ one submission
def which_assignment(found, steps=None):
    """(assignment, refusal or None): the assignment whose steps were asked for (`steps`) or whose
    step files the submission holds (the first assignment when it holds none). A submission with
    the step files of two assignments is refused as a whole (every step says why), graded as the
    assignment it holds more files of, so its score can only be 0."""
    held = contract.assignments_of(set(steps) if steps else set(found.files) | set(found.refused))
    if not held:
        return contract.DEFAULT_ASSIGNMENT, None
    chosen = max(held, key=lambda name: len(held[name]))      # the first of equals (dicts keep order)
    if len(held) == 1:
        return chosen, None
    return chosen, _("This submission holds the step files of two assignments ({held}). One submission is "
                     "one assignment: hand in the files of one, and the other as a submission of its own.",
                     held="; ".join(f"{name}: {', '.join(stems)}" for name, stems in held.items()))


class Job:
    """One submission on its way through the stages: its files, its step children, the outcomes
    of its checks, and the examples its suites showed (when `examples` is asked for).

    `start_children()` chooses the isolation level (a probe, once per process) and starts each
    step's child, its file loading, in a thread: that runs while pytest collects the suites (which
    imports torch, as the zygote does on the other core), or while the first steps' checks run.
    """

    def __init__(self, submission, limits=None, steps=None, found=None, examples=False):
        """submission: a folder or one step file (the instructor's path); or `found`, the files
        already read as data (a batch worker's), with `submission` naming where they came from."""
        self.submission, self.limits = str(submission), limits or Limits()
        self.unreadable = None
        if found is None:
            try:
                found = submitted_files.find(submission)
            except submitted_files.Unreadable as exc:    # the whole submission: every step says why
                found, self.unreadable = submitted_files.Found(), exc.args[0]    # its message, unrendered
        self.found, self.files = found, found.files
        self.assignment, mixed = which_assignment(found, steps)
        self.unreadable = self.unreadable or mixed
        the_steps = contract.ASSIGNMENTS[self.assignment]
        single = found is not None and os.path.isfile(self.submission) and not os.path.islink(self.submission)
        if single:
            steps = steps or [s.stem for s in the_steps if s.stem in self.files or s.stem in found.refused]
        self.wanted = [s for s in the_steps if steps is None or s.stem in steps]
        self.examples = examples
        # the folder itself stays covered in every child's view, wherever it lies
        self.hide = (str(Path(self.submission).resolve()) if os.path.isdir(self.submission)
                     else str(Path(self.submission).resolve().parent),)
        self.children = {}       # stem -> StepChild
        self.closers = {}        # stem -> the thread closing its child
        self.results = {}        # stem -> [CheckResult]
        self.skipped = {}        # stem -> [(number, name, reason)]
        self.shown = {}          # stem -> checks.expect.Example (the feedback page's)
        self.internal_errors = 0
        self.mode, self.error = None, None
        self.ready = {s.stem: threading.Event() for s in self.wanted}   # that step's child exists
        self._starter = threading.Thread(target=self._start_children, daemon=True)

    @property
    def stems(self):
        return {s.stem for s in self.wanted}

    def start_children(self):
        self.budget = Budget(self.limits.submission_seconds)
        self._starter.start()
        return self

    def _start_children(self):
        try:
            self.mode = isolation.choose_mode(self.limits.isolation)
            if self.mode != "process":
                isolation.protect_grader()
            for s in self.wanted:
                refused = self.unreadable or self.found.refused.get(s.stem)
                child = StepChild(s, self.files.get(s.stem), self.limits, self.budget, self.mode,
                                  refused=refused, hide=self.hide)
                self.children[s.stem] = child
                child.start()
                self.ready[s.stem].set()
        except BaseException as exc:  # re-raised by wait_started() and build_report()
            self.error = exc
        finally:
            for event in self.ready.values():
                event.set()

    def wait_started(self, stem=None):
        """Wait until the child of step `stem` (default: every step) has been started."""
        if stem is None:
            self._starter.join()
        else:
            self.ready[stem].wait()
        if self.error is not None:
            raise self.error

    def close_step(self, stem):
        """The step's last check is done: its child dies while the next step is graded."""
        if stem in self.children and stem not in self.closers:
            self.closers[stem] = closer = threading.Thread(target=self.children[stem].close, daemon=True)
            closer.start()

    def close_children(self):
        """Close every step's child (side by side, waiting for all)."""
        self._starter.join()
        for stem in self.children:
            self.close_step(stem)
        for closer in self.closers.values():
            closer.join()

    def build_report(self):
        """The Report; raises what stopped the grader (never the student's code)."""
        if self.error is not None:
            raise self.error
        step_results = []
        for s in self.wanted:
            child = self.children[s.stem]
            checks = sorted(self.results.get(s.stem, []), key=lambda c: _number_key(c.number))
            _tell_cell_errors(checks, child.cell_errors if child.source else [])
            step_results.append(StepResult(
                s, child.display if child.source else None, checks, self.skipped.get(s.stem, []),
                child.printed(), child.cell_errors, self.shown.get(s.stem)))
        return Report(self.submission, step_results, isolation_info(self.limits, self.mode), self.internal_errors,
                      list(self.found.notes))


# ------------------------------------------------------------------ pytest plugin
def one_math_thread():
    """The grader's own arithmetic (the references, on small seeded inputs) in one thread.

    With more, torch's OpenMP workers spin between its tiny operations, waiting for work: that
    cost the grader about as much CPU as all its checks, CPU its students' children needed.
    (OpenBLAS, read when numpy loads, gets one thread from the `autograder` command itself.)
    """
    torch = sys.modules.get("torch")     # the suites imported it, unless only numpy steps run
    if torch is not None and torch.get_num_threads() != 1:
        torch.set_num_threads(1)
    one_blas_thread()


_blas_limited = False


def one_blas_thread():
    """numpy's OpenBLAS in one thread, also where numpy loaded before the `autograder` command
    could ask for it (nbgrader's process, a test process). Not only for speed: children are
    started from another thread (`Job._start_children`) by fork, and OpenBLAS's fork handler
    stops its thread pool under a lock that a BLAS call running meanwhile in the main thread (a
    reference's `Q @ K.T`) waits inside: both hang for ever (seen in a test's in-process grader).
    With one thread a BLAS call runs in its caller and takes no such lock. Called before any
    child starts, once per process (numpy is loaded by then: the suites import it)."""
    global _blas_limited
    if not _blas_limited and "numpy" in sys.modules:
        from threadpoolctl import threadpool_limits
        threadpool_limits(limits=1, user_api="blas")    # for the rest of the process
        _blas_limited = True


class Recorder:
    """The pytest plugin of the "run checks" stage: records each check's outcome (and each
    example) in the job being graded. It never drives the run: `Suites.run_checks` does."""

    def __init__(self):
        self.job = None          # the one being graded
        self.collect_errors = []  # the suites' own errors (pytest's terminal report is off)

    def pytest_configure(self, config):
        self.config = config

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session):
        # its dots and summaries went to a log nobody reads, at a cost at every check
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            session.config.pluginmanager.unregister(reporter)

    def pytest_collectreport(self, report):
        if report.failed:
            self.collect_errors.append(f"{report.nodeid}: {report.longreprtext}")

    def pytest_collection_modifyitems(self, items):
        for item in items:
            # _record reads the exception itself: pytest's own failure report (a traceback
            # filtered and formatted for every failed check, --tb=no or not) only costs time
            item.repr_failure = _plain_failure

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        if item.get_closest_marker("example") is not None:
            if call.when == "call":
                self._record_example(item, call, report)
            return
        marker = item.get_closest_marker("check")
        if marker is None:
            return
        if call.when == "call" or (call.when == "setup" and report.outcome != "passed"):
            self._record(item, call, report, marker.kwargs)

    def _record_example(self, item, call, report):
        if EXAMPLE in item.stash:
            self.job.shown[item.module.STEP] = item.stash[EXAMPLE]
        elif report.failed:         # the suite's own fault: the page goes without that picture
            print(f"attention-kit: the example of {item.module.STEP} failed:\n{report.longrepr}", file=sys.__stderr__)

    def _record(self, item, call, report, spec):
        stem = item.module.STEP
        # the check's title, in the language of this grading (tests/test_i18n.py holds every title to a translation)
        name = translate(spec.get("name") or _first_line(item.function.__doc__) or item.name)
        points = float(spec["points"])
        misc, extra = [], []
        if report.skipped:
            # checks.expect.skip's message rides on pytest's exception (whose msg is a str)
            reason = (getattr(call.excinfo.value, "message", None) or call.excinfo.value.msg) if call.excinfo \
                else _("skipped")
            self.job.skipped.setdefault(stem, []).append((spec["number"], name, reason))
            return
        if report.passed:
            notes = item.stash.get(NOTES, [])
            status, score, output = "passed", points, join("\n", [_("Passed.")] + notes)
        else:
            status, score = "failed", 0.0
            exc = call.excinfo.value if call.excinfo else None
            if isinstance(exc, CheckFailed):
                output, misc = exc.message, exc.misconceptions
            elif isinstance(exc, StudentProblem):
                try:
                    output = exc.student_message()
                except Exception:      # a message built from what a tampered child sent
                    output = _("Your code's result could not be read back: {problem}.", problem=type(exc).__name__)
                if getattr(exc, "is_stub", False):
                    extra = ["not-implemented"]
                if getattr(exc, "is_unreadable", False):     # the cause in full once, at the step's first check
                    extra = ["unreadable"]
                    told = [r for r in self.job.results.get(stem, []) if "unreadable" in r.extra_tags]
                    if told:
                        output = _("Not graded: the step's file could not be read (see check {number}).",
                                   number=told[0].number)
            else:
                # a bug in the grader, not in the student's code: tell the instructor in full,
                # the student only that it happened
                self.job.internal_errors += 1
                print(f"attention-kit: internal error in check {spec['number']} ({item.nodeid}):\n"
                      + "".join(traceback.format_exception(exc)) if exc else str(report.longrepr),
                      file=sys.__stderr__)
                output = _("The grader could not finish this check because of an internal error "
                           "(not your code's fault). Please tell your instructor.")
        self.job.results.setdefault(stem, []).append(CheckResult(
            stem, spec["number"], name, spec["kind"], points, score, status, output, misc, extra))


def _tell_cell_errors(checks, errors):
    """Errors raised while the file ran (a leftover notebook cell, a line after the definitions) cost
    nothing when everything the step needs got defined, but the student is told: a note on the first
    passed check (or after the first failed one's message, when none passed). Scores are unchanged."""
    if not errors or not checks:
        return
    first = errors[0]
    text = _("Note: running your file raised {n} error(s), ignored because everything this step needs was "
             "defined. The first: {error}: {message}{where}. Remove or fix leftover cells: the notebook's "
             "own tests would stop there.", n=len(errors), error=first["type"], message=first["message"][:300],
             where=_where(first))
    target = next((c for c in checks if c.status == "passed"), checks[0])
    if first["message"][:300] not in render(target.output, "en"):      # a NotDefined message shows it already
        target.output += "\n" + text


def _where(error):
    """The file or notebook cell an error record's traceback last names in the student's code."""
    lines = [ln.strip() for ln in error.get("traceback", "").splitlines() if ln.strip().startswith('File "')]
    return _(" (at {place})", place=lines[-1][len('File '):]) if lines else ""


def _plain_failure(excinfo):
    return f"{excinfo.typename}: {excinfo.value}"


def _first_line(doc):
    return doc.strip().splitlines()[0].strip() if doc and doc.strip() else None


def _number_key(number):
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"[.]", number))


# ------------------------------------------------------------------ grading
def grade(submission, limits=None, steps=None, found=None, examples=False, suites=None):
    """Grade a folder or single step file (or the files `found` already read from it); with
    `examples`, also run the suites' feedback-page examples. `suites`: warm suites to run in
    (a `Suites`, or a batch worker's `Grader`), else a `Suites` is opened for this submission. Returns a Report; never raises
    for student code."""
    job = Job(submission, limits, steps, found, examples)      # 1. discover
    one_math_thread()                                           #    (before any fork: see one_blas_thread)
    job.start_children()                                        # 2. start children
    try:
        if suites is not None:                                  # 3. run checks
            suites.run_checks(job)
        else:
            with Suites(job.wanted) as own:
                own.run_checks(job)
    finally:
        job.close_children()                                    # 4. close children
    return job.build_report()                                   # 5. build the report


SUITE_RUNS = 0    # pytest sessions opened by this process (a warm grader opens one)


class Suites:
    """The hidden suites of the `wanted` steps, collected once by pytest and held open, so that
    one session grades one submission (`grade`) or a worker's whole batch (`Grader`).

    The session is opened and closed here by hand, as `pytest.main` does (configure, session
    start, collection ... session finish, unconfigure), but its run loop is ours: `run_checks`
    runs one job's items in order and nothing else drives pytest."""

    def __init__(self, wanted=None):
        global SUITE_RUNS
        wanted = graded_steps() if wanted is None else wanted
        SUITE_RUNS += 1
        self.recorder, self.log, self.config, self.session = Recorder(), BoundedLog(), None, None
        self.broken = None
        try:
            with self._quiet():
                self.config = _prepareconfig(pytest_args(wanted), plugins=[self.recorder])
                self.config._do_configure()
                self.session = pytest.Session.from_config(self.config)
                self.config.hook.pytest_sessionstart(session=self.session)
                self.config.hook.pytest_collection(session=self.session)
        except BaseException:
            # a session interrupted half-opened (Ctrl-C during its start) may fail to close: the
            # first exception is the one to tell, not pytest's teardown of what never started
            try:
                self.close()
            except Exception:  # noqa: BLE001
                pass
            raise
        if self.session.testsfailed or self.recorder.collect_errors:
            why = self._why()
            self.close()
            raise RuntimeError(f"the hidden suites did not run: {self.session.testsfailed} error(s) while "
                               f"collecting them:\n{why}")

    def run_checks(self, job):
        """Run the checks of the job's steps (and their examples, when asked) against its children."""
        if self.broken is not None:
            raise RuntimeError(f"the grader stopped: {self.broken!r}")
        one_math_thread()
        self.config.stash[STEP_CHILDREN] = job.children
        self.recorder.job = job
        items = [i for i in self.session.items if i.module.STEP in job.stems
                 and (job.examples or i.get_closest_marker("example") is None)]
        uncollected = job.stems - {i.module.STEP for i in self.session.items}
        if uncollected:
            raise RuntimeError(f"this grader did not collect the suites of step(s) {', '.join(sorted(uncollected))}")
        try:
            with self._quiet():
                for i, item in enumerate(items):
                    # the starter starts the steps in order: step 1 can be graded while the
                    # zygote still prepares the torch steps' children
                    job.wait_started(item.module.STEP)
                    for key in (NOTES, EXAMPLE):      # left from the previous submission
                        if key in item.stash:
                            del item.stash[key]
                    nextitem = items[i + 1] if i + 1 < len(items) else None
                    item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
                    if nextitem is None or nextitem.module.STEP != item.module.STEP:
                        job.close_step(item.module.STEP)
        except BaseException as exc:
            # pytest's fixtures may be left half torn down: this session grades nothing more
            self.broken = exc
            raise
        finally:
            self.recorder.job = None

    @property
    def alive(self):
        return self.broken is None and self.config is not None

    def close(self):
        if self.config is None:
            return
        with self._quiet():
            try:
                if self.session is not None:
                    self.config.hook.pytest_sessionfinish(session=self.session, exitstatus=0)
            finally:
                self.config._ensure_unconfigure()
                self.config = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _why(self):
        return "\n".join(self.recorder.collect_errors + [self.log.getvalue()]).strip()

    @contextlib.contextmanager
    def _quiet(self):
        """pytest's terminal output into a bounded log (shown only if the suites fail to run)."""
        with contextlib.redirect_stdout(self.log), _own_pytest_environment():
            yield


class Grader:
    """A warm grader for a batch worker: the suites collected once and held open, grading
    submission after submission (the stages of `grade`, in this process's pytest sessions: one
    per assignment, opened when its first submission comes)."""

    def __init__(self):
        self.suites = {}        # assignment -> Suites
        self.suites[contract.DEFAULT_ASSIGNMENT] = Suites(graded_steps(contract.DEFAULT_ASSIGNMENT))

    @property
    def alive(self):
        return all(s.alive for s in self.suites.values())

    def run_checks(self, job):
        if job.assignment not in self.suites:
            self.suites[job.assignment] = Suites(graded_steps(job.assignment))
        self.suites[job.assignment].run_checks(job)

    def grade(self, submission, limits=None, steps=None, found=None, examples=False):
        return grade(submission, limits, steps, found, examples, suites=self)

    def close(self):
        for suites in self.suites.values():
            suites.close()


class BoundedLog(io.StringIO):
    """pytest's terminal output (never shown unless the suites fail to run), last 20 kB only."""

    def write(self, text):
        if self.tell() > 40_000:
            keep = self.getvalue()[-20_000:]
            self.seek(0)
            self.truncate()
            super().write(keep)
        return super().write(text)


def suite_file(step):
    """The hidden suite of a contract.Step (in its assignment's suites folder, contract.Assignment)."""
    return contract.suite_file(step)


def graded_steps(assignment=contract.DEFAULT_ASSIGNMENT):
    """The steps of an assignment that have a hidden suite (what a warm grader collects)."""
    return [s for s in contract.ASSIGNMENTS[assignment] if suite_file(s).exists()]


def pytest_args(wanted):
    """pytest's command line for the suites of the `wanted` steps."""
    missing = [s.stem for s in wanted if not suite_file(s).exists()]
    if missing:
        raise RuntimeError(f"no hidden suite for step(s) {', '.join(missing)} yet ({suite_file(wanted[0]).parent})")
    # no conftest.py above the suites' own folders is the grader's business (an assignment whose
    # suites live inside a test tree, as the test-only third one does, would load that tree's)
    folders = os.path.commonpath([str(suite_file(s).parent) for s in wanted])
    return [str(suite_file(s)) for s in wanted] + [
        "-c", str(SUITES_DIR / "pytest.ini"), "--rootdir", str(SUITES_DIR), "-p", "no:cacheprovider",
        "--confcutdir", folders,
        "--import-mode=importlib", "-q", "-s", "--no-header", "-p", "no:randomly",
        # the plugin reads each outcome itself: pytest's own failure report (a traceback formatted
        # for every failed check) only costs time
        "--tb=no",
        # the suites fail by raising CheckFailed, never by a bare assert: no rewriting needed
        "--assert=plain",
        # its gc.collect() x5 at every session's end is a fifth of a warm grade; student code never runs here
        "-p", "no:unraisableexception",
        # plugins a grading run has no use for; each costs time at every check
        *[arg for name in UNUSED_PLUGINS for arg in ("-p", f"no:{name}")]]


# The environment variables pytest reads as it opens a session. The grader's sessions are its own:
# a course's CI that sets PYTEST_ADDOPTS for its own tests ("--junitxml=...", "-k smoke", "-p xdist")
# must not reach the hidden suites' command line (it broke every grade, or deselected checks), nor
# PYTEST_PLUGINS load a module into the process that holds the score, nor PYTEST_DEBUG write pytest's
# trace into the grader's output. Installed plugins (anyio's, ...) are not the suites' business
# either, and loading them through their entry points cost 0.4 s per grade.
PYTEST_ENVIRONMENT = {"PYTEST_ADDOPTS": None, "PYTEST_PLUGINS": None, "PYTEST_DEBUG": None,
                      "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


@contextlib.contextmanager
def _own_pytest_environment():
    """pytest's variables as the grader's sessions need them (PYTEST_ENVIRONMENT: None = unset),
    the caller's put back afterwards."""
    old = {name: os.environ.get(name) for name in PYTEST_ENVIRONMENT}
    try:
        _set_environment(PYTEST_ENVIRONMENT)
        yield
    finally:
        _set_environment(old)


def _set_environment(values):
    """os.environ[name] = value for each of `values`; a None value unsets the name."""
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


UNUSED_PLUGINS = ("logging", "warnings", "faulthandler", "doctest", "junitxml", "pastebin", "stepwise",
                  "setuponly", "setupplan", "legacypath", "python_path", "threadexception", "debugging",
                  "unittest", "tmpdir", "monkeypatch", "recwarn")


def isolation_info(limits, mode):
    """What isolation applied, for the instructor's audit (results.json extra_data)."""
    info = isolation.make_plan(mode, tempfile.gettempdir(), limits, limits.hide, uid=isolation.BASE_UID,
                               make_cgroup=False).info()
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
    from autograder.sandbox import zygote
    info["start"] = ("forked from a zygote that imported numpy (and, for the torch steps, torch) once, "
                     "then isolated as above"
                     if zygote.current() is not None else "a fresh python -I runner.py per child")
    return info
