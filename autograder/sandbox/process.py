"""One child process: started on a copy of one student file, spoken to through two pipes.

The child (child/runner.py) runs in its own process, in its own session and scratch folder,
with resource limits. The parent writes requests and reads replies through two dedicated pipes;
the child's stdout/stderr are drained separately and kept only up to a bounded excerpt, so a
submission that prints without end can neither block nor flood the grader.
"""
import fcntl
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from autograder.sandbox import isolation, protocol, zygote
from autograder.sandbox.problems import BadReply, StudentCrashed, StudentOverMemory, StudentTimedOut
from autograder.child import wire
from autograder.i18n import _

CHILD_DIR = Path(__file__).resolve().parents[1] / "child"
EXIT_WAIT = 10      # seconds


def child_env(scratch, plan):
    """A small, explicit environment: no grader secrets, one thread per library."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": scratch, "TMPDIR": scratch,
           "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    for key in ("CUDA_VISIBLE_DEVICES", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "LD_LIBRARY_PATH"):
        if key in os.environ:
            env[key] = os.environ[key]
    return env


OUTPUT_DRAIN_SECONDS = 120


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
    hide: folders that must stay covered even if they lie under a visible one (the submission's);
    imports: modules a warm start's zygote imports before it forks (contract.Step.child_imports)."""
    reply_budget = protocol.SMALL_REPLY      # set per request by `send` (protocol.reply_budget)

    def __init__(self, framework, limits, source, mode, hide=(), imports=()):
        self.framework, self.limits = framework, limits
        self.scratch = tempfile.mkdtemp(prefix="attention-kit-child-")
        self.plan = None
        fds = []
        try:
            self._start(framework, limits, source, mode, hide, imports, fds)
        except BaseException:
            # a child that could not start leaves nothing: its folder, cgroup and pipes go
            for fd in fds:
                try:
                    os.close(fd)
                except OSError:
                    pass
            if self.plan is not None:
                isolation.finish(self.plan)
            shutil.rmtree(self.scratch, ignore_errors=True)
            raise

    def _start(self, framework, limits, source, mode, hide, imports, fds):
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
        out_r, out_w = os.pipe()
        fds += [req_r, self.req_w, self.rep_r, rep_w, out_r, out_w]
        for fd in (self.req_w, rep_w):
            _widen_pipe(fd)
        if zygote.warm_for(framework):
            # warm start: forked from the zygote, which applies the same plan (see zygote.py)
            self.proc = zygote.spawn(framework, self.plan, child_env(self.scratch, self.plan), self.scratch,
                                     req_r, rep_w, out_w, imports)
        else:
            self.proc = self._popen(framework, req_r, rep_w, out_w)
        for fd in (req_r, rep_w, out_w):
            os.close(fd)
            fds.remove(fd)
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
        self.reply_budget = protocol.reply_budget(message)      # what its reply may cost this process
        self._guarded(what, seconds, lambda: self._write_all(data, deadline))

    def receive(self, what, deadline, seconds):
        """Read the reply to the request sent last."""
        def read():
            body, attached = wire.HEADER.unpack(self._read_exactly(wire.HEADER.size, deadline))
            budget = self.reply_budget
            if body > budget.json_bytes or attached > budget.attached_bytes:
                self.kill()                             # unread: the rest of it stays in the pipe
                raise BadReply(protocol.over_budget(body, attached, budget))
            return wire.unpack(self._read_exactly(body, deadline), self._read_exactly(attached, deadline),
                               max_nodes=budget.nodes)
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
                # (EXIT_WAIT is far above an exit's few milliseconds on a busy machine; a child that
                # closed its pipe and lives on costs only that long before it is killed)
                self.proc.wait(timeout=EXIT_WAIT)
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
        # each pipe closed once: a child is often killed twice (by the failed read, then by its
        # StepChild), and a second close of a number another thread has opened since (a child
        # starting beside this one) closed that thread's file (EBADF in a batch under Dask)
        fds, self.req_w, self.rep_r = [fd for fd in (self.req_w, self.rep_r) if fd is not None], None, None
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass
        # every writer of the output pipe is dead now: the trap reaches its end, however late its
        # thread runs on a busy machine (a 2 s wait once cut what the child printed last); the
        # bound only guards against a writer that somehow outlived kill_everything
        self.output.join(timeout=OUTPUT_DRAIN_SECONDS)
        shutil.rmtree(self.scratch, ignore_errors=True)
