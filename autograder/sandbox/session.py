"""The trusted side of the parent/child split: start a child for one step file and talk to it.

The child (child/runner.py) runs in its own process, in its own session and scratch folder,
with resource limits. The parent writes requests and reads replies through two dedicated pipes;
the child's stdout/stderr are drained separately and kept only up to a bounded excerpt, so a
submission that prints without end can neither block nor flood the grader.
"""
import fcntl
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from autograder.sandbox import isolation, zygote
from autograder.child import wire
from autograder.i18n import _

CHILD_DIR = Path(__file__).resolve().parents[1] / "child"


@dataclass
class Limits:
    """Per-child limits and isolation. Defaults suit the hidden suites' small inputs."""
    call_seconds: float = 20.0        # one load or one call
    submission_seconds: float = 600.0 # all the calls of one submission together
    cpu_seconds: int = 120            # CPU time of one child (RLIMIT_CPU)
    memory_bytes: int = 4 << 30       # RLIMIT_DATA: heap and private mappings
    max_processes: int = 64           # RLIMIT_NPROC for the child's uid
    file_bytes: int = 64 << 20        # RLIMIT_FSIZE: largest file the child may write
    disk_bytes: int = 128 << 20       # all it may write: its scratch folder, /tmp and /dev/shm (one tmpfs)
    output_bytes: int = 16_000        # stdout+stderr excerpt kept per step
    max_restarts: int = 3             # fresh children after a crash or time-out, per step
    isolation: str = "auto"           # "auto", "uid", "userns" or "process" (see isolation.py)
    hide: tuple = ()                  # more folders the child must not see (e.g. the batch root)


# ------------------------------------------------------------------ what can go wrong
class StudentProblem(Exception):
    """Something the student's code did; `student_message` says it in their terms."""

    def student_message(self):
        return str(self)


class StudentRaised(StudentProblem):
    def __init__(self, what, error):
        self.what, self.error = what, error
        super().__init__(f"{what} raised {error.get('type')}")

    @property
    def is_stub(self):
        return self.error.get("type") == "NotImplementedError"

    def student_message(self):
        etype, msg = self.error.get("type", "Exception"), self.error.get("message", "")
        if etype == "NotImplementedError":
            return _("{what} raised NotImplementedError{message}. "
                     "This part is still a stub: write its body and run the notebook's visible tests.",
                     what=self.what, message=": " + msg if msg else "")
        text = _("{what} raised {error}", what=self.what, error=f"{etype}: {msg}".rstrip(": "))
        tb = self.error.get("traceback", "").strip()
        return text + (_("\nYour code's traceback:\n{traceback}", traceback=tb) if tb else "")


class StudentCrashed(StudentProblem):
    def __init__(self, what, returncode, output):
        self.what, self.returncode, self.output = what, returncode, output
        super().__init__(self.describe())

    def describe(self):
        rc = self.returncode
        if rc is None or rc >= 0:
            return _("your code exited (exit code {code}) while running {what}", code=rc, what=self.what)
        if -rc == signal.SIGXCPU:
            return _("your code used up its CPU time (signal SIGXCPU) while running {what}", what=self.what)
        if -rc == signal.SIGXFSZ:
            return _("your code wrote a file over the size limit (signal SIGXFSZ) while running {what}",
                     what=self.what)
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = "unknown"
        return _("your code crashed (signal {signal}, {name}) while running {what}",
                 signal=-rc, name=name, what=self.what)

    def student_message(self):
        text = _("{problem}. Calls to sys.exit, os._exit or code that crashes Python stop the grading of "
                 "this step.", problem=self.describe())
        if self.output.strip():
            text += _("\nLast output of your code:\n{output}", output=self.output[-1500:])
        return text


class StudentTimedOut(StudentProblem):
    def __init__(self, what, seconds, whole_submission=False):
        self.what, self.seconds, self.whole = what, seconds, whole_submission
        super().__init__(f"timed out after {seconds:g} s while running {what}")

    def student_message(self):
        if self.whole:
            return _("Grading stopped: your submission used up its {seconds} s of running time "
                     "before {what}. Look for loops that never end or very slow code.",
                     seconds=f"{self.seconds:g}", what=self.what)
        return _("{what} timed out after {seconds} s. Look for a loop that never ends, "
                 "a sleep, or code that waits for input.", what=self.what, seconds=f"{self.seconds:g}")


class StudentOverMemory(StudentProblem):
    def __init__(self, what, limit, killed=False):
        self.what, self.limit, self.killed = what, limit, killed
        super().__init__(f"{what} used more than {limit / 2**30:g} GiB")

    def student_message(self):
        if self.killed:     # shared mappings, /dev/shm or many processes: the memory cgroup's limit
            return _("{what} used more than {gib} GiB of memory (the limit, counting all its processes "
                     "and shared memory) and was stopped by the system. The hidden tests use small inputs: "
                     "look for memory that grows without end.", what=self.what, gib=f"{self.limit / 2**30:g}")
        return _("{what} used more than {gib} GiB of memory (the limit) and stopped "
                 "with MemoryError. The hidden tests use small inputs: look for an array that grows "
                 "without end or an intermediate far larger than the inputs.",
                 what=self.what, gib=f"{self.limit / 2**30:g}")


class NotDefined(StudentProblem):
    def __init__(self, name, display, defined, cell_errors):
        self.name, self.display, self.defined, self.cell_errors = name, display, defined, cell_errors
        super().__init__(f"{display} does not define {name}")

    def student_message(self):
        text = _("{file} does not define `{name}`. Keep the name and signature from the stub.",
                 file=self.display, name=self.name)
        if self.cell_errors:
            first = self.cell_errors[0]
            text += _("\nRunning your file stopped with {error}: {message}\n{traceback}",
                      error=first["type"], message=first["message"],
                      traceback=first.get("traceback", "").strip())
        return text


class StudentOverDisk(StudentProblem):
    def __init__(self, what, limit):
        self.what, self.limit = what, limit
        super().__init__(f"{what} wrote more than {limit / 2**20:g} MiB")

    def student_message(self):
        return _("{what} wrote more than {mib} MiB of files (the limit for everything your code writes: "
                 "its folder, /tmp and /dev/shm together) and stopped with \"No space left on device\". "
                 "The hidden tests need no files: look for code that writes without end.",
                 what=self.what, mib=f"{self.limit / 2**20:g}")


class Refused(StudentProblem):
    """A step file the grader would not read (a link, a FIFO, too large...): the message says why."""

    def student_message(self):
        return str(self)


class MissingStep(StudentProblem):
    def __init__(self, step):
        self.step = step
        super().__init__(f"no file for step {step.number}")

    def student_message(self):
        a, b = self.step.files
        return _("No file for step {step}: expected {a} or {b} in the submission.", step=self.step.number, a=a, b=b)


class BadReply(StudentProblem):
    """The child answered with something malformed (only a tampered child does that)."""

    def student_message(self):
        return _("Your code's result could not be read back: {problem}.", problem=self)


# ------------------------------------------------------------------ the child process
def child_env(scratch, plan):
    """A small, explicit environment: no grader secrets, one thread per library."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": scratch, "TMPDIR": scratch,
           "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    for key in ("CUDA_VISIBLE_DEVICES", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "LD_LIBRARY_PATH"):
        if key in os.environ:
            env[key] = os.environ[key]
    return env


class OutputTrap(threading.Thread):
    """Drains a pipe forever, keeping the first `limit` bytes and counting the rest."""

    def __init__(self, fd, limit):
        super().__init__(daemon=True)
        self.fd, self.limit, self.kept, self.dropped = fd, limit, bytearray(), 0

    def run(self):
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            room = self.limit - len(self.kept)
            self.kept += chunk[:max(room, 0)]
            self.dropped += max(len(chunk) - max(room, 0), 0)
        os.close(self.fd)

    def text(self):
        out = self.kept.decode("utf-8", "replace")
        return out + (_("\n... ({n} more bytes of output not shown)", n=self.dropped) if self.dropped else "")


def _widen_pipe(fd, size=1 << 20):
    """A 1 MiB pipe instead of 64 KiB: a request of a few MB (the complexity checks' inputs) then
    crosses in a few writes, not a hundred switches between grader and child."""
    try:
        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), size)
    except OSError:
        pass                     # above the system's pipe-max-size: the default works, slower


class Child:
    """One child process running child/runner.py on a copy of one student file.

    source: a submitted_files.StepFile (the file's bytes, already read as data by the grader);
    hide: folders that must stay covered even if they lie under a visible one (the submission's)."""

    def __init__(self, framework, limits, source, mode, hide=()):
        self.framework, self.limits = framework, limits
        self.scratch = tempfile.mkdtemp(prefix="attention-kit-child-")
        for name in ("runner.py", "wire.py", "meters.py"):
            shutil.copy(CHILD_DIR / name, self.scratch)
        # the child works on its own copy: the submission folder itself stays out of its sight
        self.student_copy = os.path.join(self.scratch, "submission" + source.suffix)
        with open(self.student_copy, "wb") as f:
            f.write(source.data)
        hide = list(limits.hide) + list(hide)
        # CUDA fails to start inside a new PID namespace: torch children on a GPU machine go
        # without one (their uid, or their process group, still lets the grader kill them all)
        pid_ns = not (framework == "torch" and isolation.gpu_present())
        self.plan = isolation.make_plan(mode, self.scratch, limits, hide, pid_namespace=pid_ns)
        isolation.prepare_scratch(self.plan)
        req_r, self.req_w = os.pipe()
        self.rep_r, rep_w = os.pipe()
        for fd in (self.req_w, rep_w):
            _widen_pipe(fd)
        out_r, out_w = os.pipe()
        if zygote.current() is not None:
            # warm start: forked from the zygote, which applies the same plan (see zygote.py)
            self.proc = zygote.spawn(framework, self.plan, child_env(self.scratch, self.plan), self.scratch,
                                     req_r, rep_w, out_w)
        else:
            self.proc = self._popen(framework, req_r, rep_w, out_w)
        for fd in (req_r, rep_w, out_w):
            os.close(fd)
        self.output = OutputTrap(out_r, limits.output_bytes)
        self.output.start()

    def _popen(self, framework, req_r, rep_w, out_w):
        return subprocess.Popen(
            [sys.executable, "-I", "-u", os.path.join(self.scratch, "runner.py"), str(req_r), str(rep_w), framework],
            stdin=subprocess.DEVNULL, stdout=out_w, stderr=out_w, pass_fds=(req_r, rep_w),
            cwd=self.scratch, env=child_env(self.scratch, self.plan), start_new_session=True,
            preexec_fn=lambda: isolation.apply(self.plan))

    # -- plumbing with deadlines: a child that stops reading or writing cannot block us
    def _write_all(self, data, deadline):
        view = memoryview(data)
        while view:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            _, ready, _ = select.select([], [self.req_w], [], left)
            if ready:
                os.set_blocking(self.req_w, False)
                try:
                    n = os.write(self.req_w, view[:1 << 20])
                except BlockingIOError:
                    n = 0
                finally:
                    os.set_blocking(self.req_w, True)
                view = view[n:]

    def _read_exactly(self, n, deadline):
        buf = bytearray()
        while len(buf) < n:
            # a reply already waiting is read even past the deadline: a step's file loads while
            # earlier steps are graded, and may have finished long before its answer is read
            ready, _, _ = select.select([self.rep_r], [], [], max(deadline - time.monotonic(), 0))
            if not ready and time.monotonic() >= deadline:
                raise TimeoutError
            if ready:
                chunk = os.read(self.rep_r, min(n - len(buf), 1 << 20))
                if not chunk:
                    raise EOFError
                buf += chunk
        return bytes(buf)

    def request(self, message, what, seconds):
        """Send one request and return the reply; raises StudentCrashed / StudentTimedOut."""
        deadline = time.monotonic() + seconds
        self.send(message, what, deadline, seconds)
        return self.receive(what, deadline, seconds)

    def send(self, message, what, deadline, seconds):
        """Write one request without waiting for the reply (see StepChild.start)."""
        data = wire.pack(message)
        self._guarded(what, seconds, lambda: self._write_all(data, deadline))

    def receive(self, what, deadline, seconds):
        """Read the reply to the request sent last."""
        def read():
            body, attached = wire.HEADER.unpack(self._read_exactly(wire.HEADER.size, deadline))
            if body + attached > wire.MAX_MESSAGE_BYTES:
                self.kill()
                raise BadReply(_("a reply of {size} bytes is over the limit", size=body + attached))
            return wire.unpack(self._read_exactly(body, deadline), self._read_exactly(attached, deadline))
        reply = self._guarded(what, seconds, read)
        if not isinstance(reply, dict):
            raise BadReply(_("the reply is not an object"))
        return reply

    def _guarded(self, what, seconds, io):
        """Run one pipe operation; a time-out, a dead child or garbage becomes a StudentProblem."""
        try:
            return io()
        except TimeoutError:
            self.kill()
            raise StudentTimedOut(what, seconds) from None
        except (EOFError, BrokenPipeError):
            try:  # the child is exiting: let it finish, so its own exit code is what we report
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass
            over_memory = isolation.memory_exceeded(self.plan)   # the kernel killed it at the cgroup's limit
            self.kill()
            if over_memory:
                raise StudentOverMemory(what, self.limits.memory_bytes, killed=True) from None
            raise StudentCrashed(what, self.proc.returncode, self.output.text()) from None
        except (ValueError, TypeError, KeyError, IndexError, OverflowError, RecursionError, UnicodeError) as exc:
            # a malformed frame: only a tampered child sends one
            self.kill()
            raise BadReply(_("a malformed reply ({error})", error=f"{type(exc).__name__}: {str(exc)[:200]}")) from None

    @property
    def alive(self):
        return self.proc.poll() is None

    def kill(self):
        """Kill the child and every process it started, then clean up."""
        isolation.kill_everything(self.plan, self.proc.pid)
        self.proc.wait()
        isolation.finish(self.plan)
        for fd in (self.req_w, self.rep_r):
            try:
                os.close(fd)
            except OSError:
                pass
        self.output.join(timeout=2)
        shutil.rmtree(self.scratch, ignore_errors=True)


# ------------------------------------------------------------------ one step's session
class Budget:
    """The running time left to one submission, shared by its steps."""

    def __init__(self, seconds):
        self.seconds, self.deadline = seconds, time.monotonic() + seconds

    def left(self):
        return self.deadline - time.monotonic()


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
    refused: str = None                  # why the step's file was not taken (a link, a FIFO...), if it was not
    hide: tuple = ()                     # the submission's folder: covered in the child's view
    child: Child = None
    load_reply: dict = None
    load_problem: StudentProblem = None
    restarts: int = 0
    pending_load: tuple = None           # (what, deadline, seconds) of a load sent, not yet answered
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
                self.source, self.refused = None, str(exc)
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
        self.child = Child(self.step.framework, self.limits, self.source, self.mode, self.hide)
        self.pending_load = (what, time.monotonic() + seconds, seconds)
        self.child.send({"op": "load", "path": self.child.student_copy, "display": self.display},
                        what, self.pending_load[1], seconds)

    def _ensure_child(self):
        if self.load_problem is not None:
            raise self.load_problem
        if self.source is None:
            raise MissingStep(self.step)
        if self.child is not None and self.pending_load is None and self.child.alive:
            return self.child
        if self.child is not None and self.pending_load is None:
            self._retire()
            self.restarts += 1
            if self.restarts > self.limits.max_restarts:
                self.load_problem = StudentProblem(
                    _("Grading of {file} stopped after {n} crashes or time-outs.",
                      file=self.display, n=self.limits.max_restarts))
                raise self.load_problem
        try:
            if self.child is None:
                self._spawn()
            what, deadline, seconds = self.pending_load
            self.pending_load = None
            self.load_reply = checked_load_reply(self.child.receive(what, deadline, seconds))
        except StudentProblem as problem:
            self.load_problem = problem
            self.pending_load = None
            self._retire()
            raise
        return self.child

    def _retire(self):
        if self.child is not None:
            self.child.kill()
            out = self.child.output.text()
            if out.strip():
                self.outputs.append(out)
            self.child = None

    def request(self, message, what):
        child = self._ensure_child()
        reply = child.request(message, what, self._seconds(what))
        if reply.get("missing"):
            raise NotDefined(str(reply["missing"])[:100], self.display, self.load_reply["defined"],
                             self.load_reply["cell_errors"])
        if reply.get("ok") is not True:
            err = reply.get("error")
            if not isinstance(err, dict):
                raise BadReply(_("malformed error reply"))
            err = _checked_error(err)
            if err["type"] == "MemoryError" or (err["type"] == "OSError" and "[Errno 12]" in err["message"]):
                raise StudentOverMemory(what, self.limits.memory_bytes)   # RLIMIT_DATA, or RLIMIT_AS for a mapping
            if _disk_full(err):
                raise StudentOverDisk(what, self.limits.disk_bytes)
            raise StudentRaised(what, err)
        return reply

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
        return "\n".join(p for p in parts if p.strip())

    def close(self):
        self._retire()


# ------------------------------------------------------------------ checking what the child says
MAX_NAMES = 500


def _checked_error(err):
    """An error record as plain, bounded strings, whatever the child put in it."""
    return {k: str(err.get(k, ""))[:4000] for k in ("type", "message", "traceback")}


def _disk_full(err):
    return err["type"] in ("OSError", "IOError") and ("No space left on device" in err["message"]
                                                      or "[Errno 28]" in err["message"])


def checked_load_reply(reply):
    """The reply to "load", checked field by field: {"ok": True, "defined": [str], "cell_errors": [error]}.
    Anything else is a BadReply (only a tampered child sends one)."""
    defined, errors = reply.get("defined"), reply.get("cell_errors", [])
    if reply.get("ok") is not True or not isinstance(defined, list) or not isinstance(errors, list):
        raise BadReply(_("malformed reply to loading the file"))
    if not all(isinstance(n, str) for n in defined) or not all(isinstance(e, dict) for e in errors):
        raise BadReply(_("malformed reply to loading the file"))
    return {"ok": True, "defined": [n[:100] for n in defined[:MAX_NAMES]],
            "cell_errors": [_checked_error(e) for e in errors[:20]]}
