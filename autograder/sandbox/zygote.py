"""Warm start for child processes: zygotes that have imported numpy (and torch) once, and fork.

Starting `python -I runner.py` costs an interpreter start plus `import numpy` (and `import torch`,
about 1.3 s, for steps 6-7) for every step of every submission. A zygote pays that once: it is
a separate, freshly exec'd Python (`python -I -u zygote.py FD FRAMEWORK`) that imports numpy (the
torch steps' zygote also torch, and runs torch's lazily built machinery once) and the child
runner (and, before the first child of a step that names them in contract.Step.child_imports,
the modules the grader's calls of that step import lazily), and never imports the grader, the
hidden suites or the references, so nothing secret is in the memory its children inherit. For each child the grader sends it the isolation plan,
the environment and the child's three pipe ends; the zygote forks, and the forked process
does exactly what `subprocess.Popen(..., start_new_session=True, preexec_fn=isolation.apply)`
followed by `exec python -I runner.py` would: new session, the pipes as stdio, the scratch folder
as cwd, the small environment, `isolation.apply(plan)` (its own session keyring, namespaces,
the extra fork into the new PID namespace, the pivot_root'ed view, the uid, no capabilities,
no_new_privs, Landlock, limits, the seccomp filter the zygote compiled once before forking),
then the runner's request loop. Under nbgrader, a notebook's walled kernel is forked the same way
(commands/nbgrader_wall.py): after the same `isolation.apply`, it runs ipykernel instead of the
runner (`_run_kernel`).

The zygote reaps its children and reports each exit status on a pipe the grader gave it, so the
grader sees a Popen-like object (`pid`, `poll`, `wait`, `returncode`) and kills everything the
same way (`isolation.kill_everything`). The zygote runs in its own session and exits when the
grader's end of the control socket closes.
"""
import gc
import importlib
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
from dataclasses import asdict
from pathlib import Path

HERE = Path(__file__).resolve()


# ------------------------------------------------------------------ grader side
class ZygoteChild:
    """A child forked by the zygote, seen through the Popen attributes sandbox.process.Child uses."""

    def __init__(self, pid, status_r):
        self.pid, self._status_r, self.returncode = pid, status_r, None

    def _collect(self, timeout):
        if self.returncode is not None:
            return True
        ready, _, _ = select.select([self._status_r], [], [], timeout)
        if not ready:
            return False
        data = os.read(self._status_r, 4)
        os.close(self._status_r)
        # no status at all: the zygote itself died, and with it our view of the child
        self.returncode = (os.waitstatus_to_exitcode(struct.unpack(">i", data)[0]) if len(data) == 4
                           else -signal.SIGKILL)
        return True

    def poll(self):
        self._collect(0)
        return self.returncode

    def send_signal(self, signum):
        """As Popen's: the signal to the child unless it has ended (jupyter_client's interrupt)."""
        if self.poll() is None:
            try:
                os.kill(self.pid, signum)
            except ProcessLookupError:
                pass

    def wait(self, timeout=None):
        if not self._collect(timeout):
            raise subprocess.TimeoutExpired("zygote child", timeout)
        return self.returncode


class Zygote:
    """The grader's handle on one zygote process, for the steps of one framework."""

    def __init__(self, framework):
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "PYTHONHASHSEED": "0",
               # read when numpy/torch load, which happens here once: as in every child's env
               "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
        for key in ("CUDA_VISIBLE_DEVICES", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "LD_LIBRARY_PATH"):
            if key in os.environ:
                env[key] = os.environ[key]
        # The zygote's command line is every child's /proc/self/cmdline (a fork keeps it): it names
        # no path of the kit's. The code that finds the kit comes through a pipe instead.
        boot_r, boot_w = os.pipe()
        os.write(boot_w, BOOT.format(kit=str(HERE.parents[2])).encode())
        os.close(boot_w)
        self.proc = subprocess.Popen([sys.executable, "-I", "-u", "-c", BOOT_READER, str(boot_r),
                                      str(theirs.fileno()), framework],
                                     pass_fds=(theirs.fileno(), boot_r), env=env, stdin=subprocess.DEVNULL,
                                     cwd="/", start_new_session=True)
        os.close(boot_r)
        theirs.close()
        self.ready = False
        self.lock = threading.Lock()   # one request and its reply at a time on the socket

    def _wait_ready(self):
        if not self.ready:
            if self.sock.recv(16) != b"ready":
                raise OSError("the zygote did not start")
            self.ready = True

    def spawn(self, framework, plan, env, cwd, req_r, rep_w, out_w, imports=(), kernel=None):
        """Fork a child; returns a ZygoteChild. Raises OSError when the zygote is gone.
        imports: modules the zygote imports first, once (contract.Step.child_imports).
        kernel: the arguments of an IPython kernel (["-f", connection file]) to run instead of
        the runner (nbgrader_wall's walled kernel); its stdout and stderr go to `out_w`."""
        status_r, status_w = os.pipe()
        try:
            msg = json.dumps({"framework": framework, "plan": asdict(plan), "env": env, "cwd": cwd,
                              "imports": list(imports), "kernel": kernel}).encode()
            with self.lock:
                self._wait_ready()
                socket.send_fds(self.sock, [msg], [req_r, rep_w, out_w, status_w])
                reply = self.sock.recv(16)
        finally:
            os.close(status_w)
        if len(reply) != 4:
            os.close(status_r)
            raise OSError("the zygote did not answer")
        return ZygoteChild(struct.unpack(">i", reply)[0], status_r)

    @property
    def alive(self):
        return self.proc.poll() is None

    def close(self):
        self.sock.close()              # the zygote exits on EOF
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


BOOT_READER = "import os, sys; exec(os.read(int(sys.argv[1]), 1 << 16))"
# -I keeps the kit off sys.path: the zygote reaches it from the path the grader sends (nothing else
# is imported from there), then forgets the boot pipe
BOOT = ("import sys\nos.close(int(sys.argv[1]))\nsys.path.insert(0, {kit!r})\n"
        "from autograder.sandbox import zygote\nzygote.serve(int(sys.argv[2]), sys.argv[3])\n")


# Two zygotes: the numpy steps' children fork from one that never imported torch. Forking, and
# later tearing down, a process with torch mapped costs several times more than one without
# (page tables, copy-on-write faults), and the numpy one is ready in a tenth of the time.
FRAMEWORKS = ("numpy", "torch")
_current = {}
_starting = threading.Lock()     # children may be started from several threads of one grader


def start(frameworks=FRAMEWORKS):
    """Start this process's zygotes (no-op for one that runs). Call it early: they import numpy
    and torch in the background while the grader loads pytest and the suites."""
    with _starting:
        for framework in frameworks:
            if framework not in _current or not _current[framework].alive:
                _current[framework] = Zygote(framework)
    return _current


def start_unless_disabled(frameworks=FRAMEWORKS):
    """Start the zygotes of `frameworks` unless ATTENTION_KIT_WARM=0 asks for a fresh `python -I
    runner.py` per child, or the machine has an NVIDIA GPU (forking CUDA-capable children from a
    warm torch is untested there); {framework: Zygote}, empty when cold. Cheap to import and call:
    `grade` calls it before the grader's own imports (pytest, torch), so the zygotes' imports run
    beside them."""
    if _warm_allowed():
        start(frameworks)
    return _current


def _warm_allowed():
    return os.environ.get("ATTENTION_KIT_WARM", "1") != "0" and not _gpu_present()


_started_cold = set()    # frameworks of which this process started a child cold, no zygote running


def warm_for(framework):
    """Whether this process's next child of `framework` forks from a zygote (process.Child asks).

    The commands, batch workers and nbgrader's process start the zygotes early. Any other process
    that grades (a script's or a test's `grading.grade`, a kernel's `grade_step`) starts the
    framework's zygote at its second child of that framework: a process grading one step pays
    nothing for a zygote it would use once, and one grading more forks the rest warm."""
    if framework in _current:       # started (spawn starts it again if it died)
        return True
    if not _warm_allowed():
        return False
    if framework not in _started_cold:
        _started_cold.add(framework)
        return False
    start((framework,))
    return True


def _gpu_present():
    from autograder.sandbox.isolation import gpu_present
    return gpu_present()


def current():
    """The running zygotes ({framework: Zygote}), or None when warm starts are off in this process."""
    return _current or None


def stop():
    while _current:
        _current.popitem()[1].close()


def spawn(framework, plan, env, cwd, req_r, rep_w, out_w, imports=(), kernel=None):
    """Fork a child from this process's zygote for `framework`, starting a fresh one once if it
    died (a submission running without namespaces could kill it)."""
    try:
        return _current[framework].spawn(framework, plan, env, cwd, req_r, rep_w, out_w, imports, kernel)
    except OSError:
        _current.pop(framework).close()
        start((framework,))
        return _current[framework].spawn(framework, plan, env, cwd, req_r, rep_w, out_w, imports, kernel)


# ------------------------------------------------------------------ zygote side
def _become_child(req, fds):
    """In the forked process: what Popen + preexec_fn + exec runner.py would have done."""
    from autograder.sandbox import isolation
    from autograder.child import runner
    status = 0
    try:
        req_r, rep_w, out_w = fds
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        isolation._libc.prctl(isolation.PR_SET_DUMPABLE, 1, 0, 0, 0)   # as exec would reset it
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_w, 1)
        os.dup2(out_w, 2)
        kernel = req.get("kernel")
        keep = {0, 1, 2} if kernel is not None else {0, 1, 2, req_r, rep_w}
        for fd in [int(x) for x in os.listdir("/proc/self/fd")]:   # the zygote's socket, other children's pipes
            if fd not in keep:
                try:
                    os.close(fd)
                except OSError:
                    pass
        os.chdir(req["cwd"])
        # what a runner.py child's argv holds (student code may look at it, e.g. for the reply fd)
        sys.argv = [os.path.join(req["cwd"], "runner.py"), str(req_r), str(rep_w), req["framework"]]
        sys.modules["__main__"].__dict__.pop("zygote", None)     # the boot code's name for this module
        os.environ.clear()
        os.environ.update(req["env"])
        import tempfile
        tempfile.tempdir = None
        if kernel is not None:
            # a kernel dies with the process that started it: here the zygote, which dies with
            # the grader (nbgrader_wall._start_walled does the same for a kernel started by exec)
            isolation._libc.prctl(isolation.PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        # limits, namespaces, the fork into the new PID namespace (this process stays outside
        # and only waits), the new root, the child's uid
        isolation.apply(isolation.Plan(**req["plan"]))
    except BaseException:
        os._exit(126)                  # the isolation could not be applied: no student code runs
    try:
        if sys.path and sys.path[0] == str(HERE.parents[2]):
            del sys.path[0]            # put there by __main__ below; a runner.py child never has it
        import numpy
        numpy.random.seed()            # a fresh process would not share the zygote's random state
        # the grader's package is not importable from a child (runner's blocker refuses it)
        for name in [n for n in sys.modules if n.split(".")[0] in runner.BLOCKED_PACKAGES]:
            del sys.modules[name]
        if kernel is not None:
            status = _run_kernel(kernel, isolation)
        else:
            runner.serve(req_r, rep_w, req["framework"])
    except BaseException:
        status = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        os._exit(status)


def _run_kernel(argv, isolation):
    """In a forked child, walled off already: the IPython kernel that nbgrader_wall.LAUNCHER runs
    after an exec, with the zygote's numpy (and torch) imported already. Returns its exit status.
    ipykernel itself is imported here, never in the zygote: the step children forked from it must
    not hold it (a notebook cell may ask `"ipykernel" in sys.modules` to act in the kernel only).
    `isolation`: the module, already imported (the kit is out of reach by now)."""
    import runpy
    # dies with the process waiting outside its PID namespace (a change of uid cleared the first)
    isolation._libc.prctl(isolation.PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    signal.signal(signal.SIGINT, signal.default_int_handler)      # the zygote ignores it; a kernel is interrupted by it
    sys.argv = ["ipykernel_launcher", *argv]
    try:
        runpy.run_module("ipykernel_launcher", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


def warm_up_torch():
    """Run once, in the torch steps' zygote, what the children's calls run: autograd and torch's Python
    modes (which the grad and measure ops use) build a lot of state lazily, about a second's
    worth in a fresh process. Every child forked afterwards inherits it built. Fixed inputs, no
    random numbers drawn: the children inherit the random state untouched."""
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    class Passing(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    class Dispatching(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls):
            return False        # as child/meters.py's mode: else the first use imports torch._dynamo

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    def attend(x, w):
        q = x @ w
        return torch.softmax(q @ x.transpose(-1, -2) / 2.0, dim=-1) @ x

    for dtype in (torch.float32, torch.float64):
        x = torch.linspace(-1, 1, 24, dtype=dtype).reshape(2, 3, 4).requires_grad_()
        w = torch.eye(4, dtype=dtype).requires_grad_()
        with Passing(), Dispatching():
            attend(x, w).sum().backward()
        lin = torch.nn.Linear(4, 4).to(dtype)
        torch.func.functional_call(lin, dict(lin.named_parameters()), (x,)).sum().backward()
    torch.autograd.grad(attend(x, w).sum(), [x, w])      # as the grad op's gradient check does


def import_once(names):
    """Import, here in the zygote, the modules a step's child would import lazily (what the grader's
    own calls pull in, as torch.optim does torch._dynamo: about a second per child otherwise), so
    every child forked after inherits them. Asked for by the grader, never by student code; the
    grader's own packages are never imported here. A module that fails to import is left to the
    child, as before."""
    from autograder.child import runner
    new = [n for n in names if isinstance(n, str) and n not in sys.modules
           and n.split(".")[0] not in runner.BLOCKED_PACKAGES]
    for name in new:
        try:
            importlib.import_module(name)
        except Exception:
            pass
    if new:
        gc.freeze()        # as at the start: the children's collections leave the new modules' pages alone


def serve(control_fd, framework):
    """The zygote's loop: import once, then fork a child per request."""
    import numpy  # noqa: F401  (the point of the zygote)
    # what every child uses right after the fork: imported once here, not once per child
    # (numpy.random loads lazily, 10 ms; tempfile pulls in random and shutil, 5 ms)
    import numpy.random  # noqa: F401
    import tempfile  # noqa: F401
    if framework == "torch":
        import torch  # noqa: F401
    from autograder.sandbox import isolation
    from autograder.child import runner  # noqa: F401
    try:    # a notebook's child turns its cells into Python with IPython's transformer: 0.1-0.3 s to import
        import IPython.core.inputtransformer2  # noqa: F401
    except ImportError:
        pass
    isolation.prepare_layers()     # the filter compiled once here: a child only loads it
    if framework == "torch":
        warm_up_torch()
    # everything imported so far stays alive in every child: out of the cycle collector's sight,
    # a child's collections neither walk it nor write to its pages (which would copy them all)
    gc.freeze()
    isolation._libc.prctl(isolation.PR_SET_DUMPABLE, 0, 0, 0, 0)
    sock = socket.socket(fileno=control_fd)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    status_fds, finished = {}, {}
    try:
        sock.send(b"ready")
    except OSError:
        return                     # the grader is gone already (e.g. `grade --help`)

    def reap():
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            finished[pid] = status
        
    def report():
        for pid in [p for p in finished if p in status_fds]:
            fd = status_fds.pop(pid)
            try:
                os.write(fd, struct.pack(">i", finished.pop(pid)))
            except OSError:
                pass
            os.close(fd)

    while True:
        ready, _, _ = select.select([sock, wake_r], [], [], 1.0)
        if wake_r in ready:
            try:
                while os.read(wake_r, 512):
                    pass
            except BlockingIOError:
                pass
        reap()
        report()
        if sock in ready:
            try:
                msg, fds, _, _ = socket.recv_fds(sock, 1 << 20, 4)
            except OSError:
                msg, fds = b"", []
            if not msg:
                break                  # the grader is gone
            req = json.loads(msg)
            import_once(req.get("imports") or ())
            pid = os.fork()
            if pid == 0:
                _become_child(req, fds[:3])
            for fd in fds[:3]:
                os.close(fd)
            status_fds[pid] = fds[3]
            sock.send(struct.pack(">i", pid))
            reap()
            report()
    for fd in status_fds.values():
        os.close(fd)
