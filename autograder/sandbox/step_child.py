"""One step's child, as the checks see it: started lazily, restarted after a crash or a time-out.

A `StepChild` owns at most one `process.Child` at a time for one step file: it sends the load
request, turns the child's error replies into student problems, and keeps what the code printed.
"""
import os
import time
import warnings
from dataclasses import dataclass, field

from autograder.sandbox import isolation
from autograder.sandbox.limits import Budget, Limits
from autograder.sandbox import protocol
from autograder.sandbox.problems import BadReply, MissingStep, Refused, StudentProblem, StudentTimedOut
from autograder.sandbox.process import Child
from autograder.i18n import _, join, render


@dataclass
class StepChild:
    """Lazily starts a child for one step file; restarts it after a crash or a time-out.

    A failure while loading the file is final for the step (every check reports it);
    a failure inside one call costs that call only.
    """
    step: object
    source: object = None                # a submitted_files.StepFile, or None when the step has no file
    limits: Limits = field(default_factory=Limits)
    budget: Budget = None
    mode: str = None                     # isolation level; chosen once per grading run
    refused: object = None               # why the step's file was not taken (a link, a FIFO...): a message
    hide: tuple = ()                     # the submission's folder: covered in the child's view
    child: Child = None
    load_reply: dict = None
    load_problem: StudentProblem = None
    restarts: int = 0
    pending_load: tuple = None           # (what, spawned, seconds) of a load sent, not yet answered
    distrusted: bool = False             # a reply of this child failed its checks: never ask it again
    outputs: list = field(default_factory=list)

    def __post_init__(self):
        self.budget = self.budget or Budget(self.limits.submission_seconds)
        self.mode = self.mode or isolation.choose_mode(self.limits.isolation)
        if isinstance(self.source, (str, os.PathLike)):      # a path (tests, tools): read it as data
            from autograder import submitted_files
            path = os.fspath(self.source)
            try:
                self.source = submitted_files.StepFile(os.path.basename(path), submitted_files.read_regular(
                    path, os.path.basename(path)))
            except submitted_files.Unreadable as exc:
                self.source, self.refused = None, exc.args[0]      # its message, unrendered
        if self.refused is not None:
            self.load_problem = Refused(self.refused)

    @property
    def path(self):
        return self.source

    @property
    def display(self):
        return self.source.name if self.source else self.step.stem

    def _seconds(self, what):
        left = self.budget.left()
        if left <= 0:
            raise StudentTimedOut(what, self.budget.seconds, whole_submission=True)
        return min(self.limits.call_seconds, left)

    def start(self):
        """Start the child and send it the load request without waiting for the answer, so that
        the steps of a submission load side by side (a slow import is waited for once, not once
        per step). The answer is read by the first request."""
        if self.source is None or self.child is not None or self.load_problem is not None:
            return
        try:
            self._spawn()
        except StudentProblem as problem:
            self.load_problem = problem
            self._retire()

    def _spawn(self):
        """A fresh child with the load request on its way."""
        what = _("{file} (loading it)", file=self.display)
        seconds = self._seconds(what)
        self.child = Child(self.step.framework, self.limits, self.source, self.mode, self.hide,
                           self.step.child_imports)
        # counted from when the child exists: making it (a zygote still importing torch, the
        # wall's set-up on a busy machine) is the kit's time, never the student's
        spawned = time.monotonic()
        self.pending_load = (what, spawned, seconds)
        self.child.send(protocol.load_request(self.child.student_copy, self.display),
                        what, spawned + seconds, seconds)

    def _ensure_child(self):
        if self.load_problem is not None:
            raise self.load_problem
        if self.source is None:
            raise MissingStep(self.step)
        if self.child is not None and self.pending_load is None and self.child.alive and not self.distrusted:
            return self.child
        if self.child is not None and self.pending_load is None:
            self._retire()
            self.distrusted = False
            self.restarts += 1
            if self.restarts > self.limits.max_restarts:
                self.load_problem = StudentProblem(
                    _("Grading of {file} stopped after {n} crashes or time-outs.",
                      file=self.display, n=self.limits.max_restarts))
                raise self.load_problem
        for attempt in (1, 2):
            try:
                self._load()
                return self.child
            except BadReply as problem:
                self.pending_load = None
                self._retire()
                if attempt == 1:
                    # A bad answer to "load" from an honest child is a rare failure of the kit's own (a
                    # correct master got one in 31 runs): a fresh child loads the file once more, and the
                    # first answer goes to the instructor's diagnostics. A file that forges its load
                    # reply forges it again, and gets the second answer's verdict.
                    warnings.warn(f"{self.display}: {render(problem.args[0], 'en')}; loaded once more")
                    continue
                self.load_problem = problem
                raise
            except StudentProblem as problem:
                self.load_problem = problem
                self.pending_load = None
                self._retire()
                raise

    def _load(self):
        """Wait for the load request's two answers ("started", then the load's own)."""
        if self.child is None:
            self._spawn()
        what, spawned, seconds = self.pending_load
        self.pending_load = None
        # the load's time limit counts from when the child began running the student's file:
        # starting the child is the kit's work, bounded by the submission's budget only, so a
        # busy machine never turns an honest load into a time-out
        start_by = spawned + max(self.budget.left(), seconds)
        started = protocol.checked_started(self.child.receive(what, start_by, seconds),
                                           spawned, time.monotonic())
        self.load_reply = protocol.checked_load_reply(self.child.receive(what, started + seconds, seconds))

    def _retire(self):
        if self.child is not None:
            self.child.kill()
            out = self.child.output.text()
            if render(out, "en").strip():
                self.outputs.append(out)
            self.child = None

    def request(self, message, what):
        """Send one request (built by sandbox.protocol) and return the child's successful reply;
        a failure is raised as its StudentProblem."""
        child = self._ensure_child()
        try:
            reply = child.request(message, what, self._seconds(what))
            return protocol.checked_answer(reply, what, self.limits, self.display, self.load_reply)
        except BadReply:
            self.distrust()
            raise

    def distrust(self):
        """A reply of this child failed its checks (a forged frame): its pipe may still hold the
        real reply behind the forged one, which the next request would read as its own. The next
        request gets a fresh child; this counts as a crash (the step stops after max_restarts)."""
        self.distrusted = True

    @property
    def cell_errors(self):
        return (self.load_reply or {}).get("cell_errors", [])

    @property
    def isolation_info(self):
        return self.child.plan.info() if self.child else None

    def printed(self):
        """What the student's code printed (bounded), for the report."""
        parts = list(self.outputs)
        if self.child is not None:
            parts.append(self.child.output.text())
        return join("\n", [p for p in parts if render(p, "en").strip()])

    def close(self):
        self._retire()
