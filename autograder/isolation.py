"""How a student child process is walled off from the grader, the kit and other submissions.

Three levels, the strongest the platform allows (`choose_mode`):

- "uid" (the grader runs as root: CI containers, Gradescope, Docker): the child gets new mount,
  network and PID namespaces and a root file system of its own that holds only what running
  Python needs (/usr, /etc, /dev, /proc, /sys, the Python prefix and the venv, read-only) and
  its scratch folder: no kit, no other submission, no home folder, wherever they are on the
  machine. It runs under a uid of its own, so it can neither read the grader's files nor
  signal the grader, and every process it starts can be found and killed by that uid.
- "userns" (not root, user namespaces allowed): the same view inside a user namespace; same
  uid as the grader, so the grader makes itself non-dumpable (its memory and /proc entries
  become unreadable to the child) and the PID namespace keeps the child from naming its pid.
- "process" (neither): a separate process in its own session with resource limits only.

All levels get: RLIMIT_DATA (memory), RLIMIT_CPU, RLIMIT_NPROC, RLIMIT_FSIZE, no core files.
This module only prepares and applies; sandbox.Child starts the process.
"""
import ctypes
import os
import resource
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

KIT_ROOT = Path(__file__).resolve().parent.parent
BASE_UID = 200_000   # child uids: BASE_UID + 100 * (grader pid % 10**6) + (child count % 100); no passwd entry needed
_children_started = 0

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18
PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 4, 38

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]


def _check(result, what):
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source, target, fstype, flags, data=None):
    enc = (lambda s: None if s is None else str(s).encode())
    _check(_libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


@dataclass
class Plan:
    """What one child gets. Built in the parent; `apply` runs in the child before exec."""
    mode: str                              # "uid", "userns" or "process"
    scratch: str                           # the child's own folder (its cwd and HOME)
    memory_bytes: int
    cpu_seconds: int
    max_processes: int
    file_bytes: int
    uid: int = None                        # "uid" mode only
    pid_namespace: bool = True             # off for torch steps on a GPU machine: CUDA does not start in one
    visible: list = field(default_factory=list)    # what the child's root file system holds
    hide: list = field(default_factory=list)       # covered even when under a visible folder
    shared: list = field(default_factory=list)     # host folders bound read-write at the same path (e.g. a kernel's sockets)

    @property
    def root(self):
        """Mount point of the child's new root: a root-owned folder inside its scratch folder."""
        return os.path.join(self.scratch, ".attention-kit-root")

    def info(self):
        """For results.json extra_data: what isolation applied."""
        return {"mode": self.mode, "uid": self.uid if self.mode == "uid" else "same as grader",
                "namespaces": (["mount", "network"] + (["pid"] if self.pid_namespace else [])
                               + (["user"] if self.mode == "userns" else [])) if self.mode != "process" else [],
                "visible_paths": self.visible if self.mode != "process" else "all",
                "network": "none" if self.mode != "process" else "not isolated",
                "memory_limit_bytes": self.memory_bytes, "cpu_seconds": self.cpu_seconds,
                "max_processes": self.max_processes, "max_file_bytes": self.file_bytes}


_probe_cache = {}


def choose_mode(requested="auto"):
    """The strongest level available here, or `requested` when it is not 'auto'."""
    if requested != "auto":
        return requested
    if os.geteuid() == 0:
        return "uid" if _probe("uid") else "process"
    return "userns" if _probe("userns") else "process"


def _probe(mode):
    """Can this machine set up `mode`? Tried once per grader process: a throwaway child must
    start Python, import numpy, and write in its scratch folder under that isolation."""
    if mode not in _probe_cache:
        import tempfile
        from types import SimpleNamespace
        with tempfile.TemporaryDirectory(prefix="attention-kit-probe-") as scratch:
            limits = SimpleNamespace(memory_bytes=2 << 30, cpu_seconds=30, max_processes=64, file_bytes=1 << 20)
            plan = make_plan(mode, scratch, limits)
            try:
                prepare_scratch(plan)
                # fork first, as the runner does: the PID namespace takes the second process
                code = ("import os\nif os.fork():\n    os._exit(os.waitstatus_to_exitcode(os.wait()[1]))\n"
                        "import numpy\nopen('probe', 'w').write('ok')\n")
                proc = subprocess.run([sys.executable, "-I", "-c", code],
                                      preexec_fn=lambda: apply(plan), cwd=scratch, capture_output=True, timeout=60)
                _probe_cache[mode] = proc.returncode == 0 and os.path.exists(os.path.join(scratch, "probe"))
            except (OSError, subprocess.SubprocessError):
                _probe_cache[mode] = False
    return _probe_cache[mode]


def next_uid():
    """A uid for the next child: its own, so RLIMIT_NPROC and the final kill see only its processes."""
    global _children_started
    _children_started += 1
    return BASE_UID + 100 * (os.getpid() % 10**6) + _children_started % 100


def gpu_present():
    """An NVIDIA device node is there (cheap: no torch import, no CUDA start)."""
    return os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/nvidia0")


# what running Python needs from the system, bound read-only into the child's root
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/dev", "/proc", "/sys")


def make_plan(mode, scratch, limits, hide_extra=(), uid=None, pid_namespace=True, shared=()):
    """What a child whose scratch folder is `scratch` may see, and its limits. `shared`: host
    folders the child may write and the grader reads too (bound at the same path)."""
    scratch = os.path.realpath(scratch)
    pythons = sorted({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix)}, key=len)
    visible = [p for p in SYSTEM_PATHS if os.path.lexists(p)] + pythons + [scratch] + [os.path.realpath(p) for p in shared]
    nproc = limits.max_processes
    if mode == "userns":   # RLIMIT_NPROC counts all of this user's processes: leave room for them
        nproc += _count_processes(os.getuid())
    return Plan(mode, scratch, limits.memory_bytes, limits.cpu_seconds, nproc, limits.file_bytes,
                uid=(uid or next_uid()) if mode == "uid" else None,
                pid_namespace=pid_namespace and mode != "process", visible=visible,
                hide=[os.path.realpath(p) for p in hide_extra], shared=[os.path.realpath(p) for p in shared])


def _count_processes(uid):
    n = 0
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and os.stat(f"/proc/{entry}").st_uid == uid:
                n += 1
        except OSError:
            pass
    return n


def prepare_scratch(plan):
    """Give the child uid its scratch folder (and nothing else); make the new root's mount point."""
    if plan.mode == "process":
        return
    if plan.mode == "uid":
        for root, dirs, files in os.walk(plan.scratch):
            for name in dirs + files:
                os.chown(os.path.join(root, name), plan.uid, plan.uid)
        os.chown(plan.scratch, plan.uid, plan.uid)
        os.chmod(plan.scratch, 0o700)
    os.mkdir(plan.root, 0o755)        # stays the grader's: the child cannot write there


# ------------------------------------------------------------------ in the child, before exec
def plan_namespaces(plan):
    """Enter new namespaces and build the child's view of the file system."""
    if plan.mode == "process":
        return
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWNS | CLONE_NEWNET | (CLONE_NEWPID if plan.pid_namespace else 0)
    if plan.mode == "userns":
        _check(_libc.unshare(CLONE_NEWUSER | flags), "unshare")
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
    else:
        _check(_libc.unshare(flags), "unshare")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    build_root(plan)


def build_root(plan):
    """A fresh root file system holding only plan.visible, then chroot into it."""
    root = plan.root
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=755")
    for path in plan.visible:
        inside = root + path
        if os.path.islink(path):                  # e.g. /lib -> usr/lib on merged-/usr systems
            os.makedirs(os.path.dirname(inside), exist_ok=True)
            if not os.path.lexists(inside):
                os.symlink(os.readlink(path), inside)
            continue
        os.makedirs(inside, exist_ok=True)
        if path == plan.scratch or path in plan.shared:   # writable, and not recursive: the new root
            _mount(path, inside, None, MS_BIND)   # mounted inside it must not appear there
            continue
        _mount(path, inside, None, MS_BIND | MS_REC)
        if path == "/dev":                        # device nodes must keep working (/dev/urandom)
            _mount("tmpfs", inside + "/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777")
            continue                              # a private /dev/shm, not the machine's
        _mount(None, inside, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    for path in plan.hide:                        # e.g. a submission folder under /usr
        if os.path.isdir(root + path):
            _mount("tmpfs", root + path, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "size=4k,mode=755")
    os.makedirs(root + "/tmp", exist_ok=True)     # exists, empty, not writable: TMPDIR is the scratch folder
    os.chroot(root)
    os.chdir(plan.scratch)


def apply(plan):
    """preexec_fn: limits, namespaces, then the unprivileged uid. Runs in the forked child."""
    for res, value in ((resource.RLIMIT_CORE, 0), (resource.RLIMIT_DATA, plan.memory_bytes),
                       (resource.RLIMIT_FSIZE, plan.file_bytes)):
        resource.setrlimit(res, (value, value))
    resource.setrlimit(resource.RLIMIT_CPU, (plan.cpu_seconds, plan.cpu_seconds + 5))
    plan_namespaces(plan)
    if plan.mode == "uid":
        os.setgroups([])
        os.setgid(plan.uid)
        os.setuid(plan.uid)
    if plan.mode != "process" or os.geteuid() != 0:
        resource.setrlimit(resource.RLIMIT_NPROC, (plan.max_processes, plan.max_processes))
    _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


# ------------------------------------------------------------------ in the parent
def protect_grader():
    """Make the grader non-dumpable: a child of the same uid can then neither ptrace it nor
    read its memory or environment through /proc."""
    _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


def _children(pid):
    """Pids of `pid`'s children: from the kernel's own list of each of its threads' children
    (/proc/PID/task/TID/children), else by reading every process's parent in /proc."""
    try:
        kids = []
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids += [int(k) for k in f.read().split()]
        return kids
    except FileNotFoundError:      # gone already, or a kernel without that file
        if not os.path.exists(f"/proc/{pid}/task"):
            return []
    except (OSError, ValueError):
        pass
    kids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(entry))
        except (OSError, ValueError, IndexError):
            pass
    return kids


def _pidfd(pid):
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _wait_gone(pidfds, seconds):
    """Wait until every process behind `pidfds` has exited (a pidfd turns readable then)."""
    deadline = time.monotonic() + seconds
    pending = list(pidfds)
    while pending and time.monotonic() < deadline:
        ready, _, _ = select.select(pending, [], [], deadline - time.monotonic())
        pending = [fd for fd in pending if fd not in ready]
    for fd in pidfds:
        os.close(fd)
    return not pending


def kill_everything(plan, pid):
    """Kill the child and every process it started: daemons, double forks and setsid included.

    The runner forks once into the new PID namespace; killing that inner init makes the kernel
    kill every process in the namespace. In "uid" mode, anything left under the child's uid is
    killed as well (a process that signals with that uid reaches exactly them).
    """
    kids = _children(pid)
    # the inner init of the PID namespace: it finishes exiting only after the kernel has killed and
    # reaped every other process in its namespace, so once it is gone they all are
    inits = [fd for fd in map(_pidfd, kids) if fd is not None] if plan.pid_namespace else []
    for kid in kids:
        _kill(kid)
    _kill(pid)
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if inits:
        _wait_gone(inits, 5)
    if plan.mode == "uid":
        # whatever the namespace did, nothing may be left under the child's uid: one look at
        # /proc confirms it (and, without a namespace, finds what to kill)
        deadline = time.monotonic() + 5
        pause = 0.001
        while leftover_processes(plan) and time.monotonic() < deadline:
            if pause < 0.03:
                # processes take a moment to die once killed (a torch child unmaps a few hundred
                # MB): wait for that before assuming something escaped the kills above
                time.sleep(pause)
                pause *= 2
                continue
            killer = os.fork()
            if killer == 0:                  # become that uid, then signal everything it owns
                try:
                    os.setgid(plan.uid)
                    os.setuid(plan.uid)
                    os.kill(-1, signal.SIGKILL)
                finally:
                    os._exit(0)
            os.waitpid(killer, 0)
            time.sleep(0.01)                 # the kernel tears a namespace down asynchronously


def finish(plan):
    """After kill_everything: release what the child's plan held outside it (its memory cgroup)."""


def _kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def leftover_processes(plan):
    """Live (not zombie) processes still running under the child's uid ("uid" mode)."""
    return [] if plan.mode != "uid" else processes_of(plan.uid)


def processes_of(uid):
    """Pids of the live processes owned by `uid` (zombies, already dead, are left out)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and os.stat(f"/proc/{entry}").st_uid == uid:
                with open(f"/proc/{entry}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                        found.append(int(entry))
        except (OSError, IndexError):
            pass
    return found
