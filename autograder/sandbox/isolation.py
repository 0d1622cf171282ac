"""How a student child process is walled off from the grader, the kit and other submissions.

The levels, strongest first; `choose_mode` tries each in turn and takes the first this machine
can set up (docs/security.md has the table):

- "uid" (root with CAP_SYS_ADMIN: CI containers, Gradescope): new mount, network, IPC and PID
  namespaces, a root file system of its own made with pivot_root (bubblewrap's way; no chroot
  trick leads out) holding only what running Python needs (/usr, /etc, /dev, /sys, the Python
  prefix, the venv and the other site folders, read-only, every installed copy of the kit
  covered), a /proc of its own PID namespace, a size-capped tmpfs as its scratch folder, /tmp and
  /dev/shm, and a uid never used before by this machine's graders (`next_uid`). Its memory is
  capped by a memory cgroup where the machine has one.
- "userns" (any account where user namespaces are allowed, and root without CAP_SYS_ADMIN): the
  same view inside a user namespace, where the child runs as INNER_UID (never 0). Root first
  becomes a fresh uid (`next_uid`) so that nothing of root's is mapped in; an ordinary account's
  child stays its uid outside, made powerless by the view, Landlock and the filter.
- "landlock" (no namespaces at all): no view of its own; Landlock alone limits what it may read
  (the system and Python folders, the kit covered) and write (its scratch folder), and forbids
  TCP, abstract sockets and signals outside; root first becomes a fresh uid.
- "process": no wall, limits only. Only on an explicit request whose name says so
  (`--isolation none-unsafe`); `choose_mode` never falls back to it.

Every walled level then gives the same guarantee (`apply`): its own empty session keyring, all
five capability sets empty (where the level can empty the bounding set), no_new_privs, Landlock
where the kernel has it, and the seccomp filter of sandbox/seccomp.py (no namespaces, mounts,
keyrings, ptrace, bpf, perf, modules, no socket but AF_UNIX). Limits in all: RLIMIT_DATA,
RLIMIT_CPU, RLIMIT_NPROC, RLIMIT_FSIZE, no core files; where no memory cgroup can be made,
RLIMIT_AS bounds each process's address space instead.
This module only prepares and applies; sandbox.process.Child starts the process.
"""
import ctypes
import fcntl
import functools
import os
import resource
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from autograder.i18n import _, render
from autograder.sandbox import credentials, landlock, seccomp

KIT_ROOT = Path(__file__).resolve().parents[2]
BASE_UID = 200_000          # child uids count up from here (see next_uid); no passwd entry needed
MAX_UID = 2**31 - 2
UID_COUNTER = "/run/attention-kit-uids"      # shared by every grader on the machine (root only)
LIBRARY_ADDRESS_SPACE = 1 << 30              # RLIMIT_AS fallback: room for mapped libraries (torch maps ~0.7 GB)

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x10000000, 0x20000000, 0x40000000
CLONE_NEWIPC = 0x08000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 32, 4096, 16384, 1 << 18
PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 4, 38
PR_SET_PDEATHSIG = 1
MNT_DETACH = 2
SYS_PIVOT_ROOT = {"aarch64": 41, "riscv64": 41}.get(os.uname().machine, 155)
INNER_UID = 1000            # the child's uid inside its user namespace: never 0
LEVELS = ("uid", "userns", "landlock")       # walled levels, strongest first
UNSAFE = ("none-unsafe", "process")          # no wall: only when asked by name ("process": the old name)

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
    mode: str                              # "uid", "userns", "landlock" or "process" (no wall)
    scratch: str                           # the child's own folder (its cwd and HOME)
    memory_bytes: int
    cpu_seconds: int
    max_processes: int
    file_bytes: int
    uid: int = None                        # a fresh uid: "uid" mode, and the others when the grader is root
    pid_namespace: bool = True             # off for torch steps on a GPU machine: CUDA does not start in one
    visible: list = field(default_factory=list)    # what the child's root file system holds
    hide: list = field(default_factory=list)       # covered even when under a visible folder
    shared: list = field(default_factory=list)     # host folders bound read-write at the same path (e.g. a kernel's sockets)
    disk_bytes: int = 128 << 20            # the scratch tmpfs (with /tmp and /dev/shm): all the child may write
    cgroup: str = None                     # its memory cgroup's folder, when the machine gives one
    cuda: bool = False                     # a torch child on a GPU machine (no PID namespace, no RLIMIT_AS)

    @property
    def root(self):
        """Mount point of the child's new root: a root-owned folder inside its scratch folder."""
        return os.path.join(self.scratch, ".attention-kit-root")

    @property
    def namespaces(self):
        return self.mode in ("uid", "userns")

    def info(self):
        """For results.json extra_data: what isolation applied. `walled` is the field reports read:
        False means the student's code ran with the grader's rights (`--isolation none-unsafe`)."""
        walled = self.mode != "process"
        ns = self.namespaces
        if self.mode == "process":
            uid = "same as grader"
        elif self.mode == "userns":
            uid = (f"{INNER_UID} inside its user namespace, "
                   + ("a fresh uid outside" if self.uid else "the grader's uid outside"))
        else:
            uid = self.uid if self.uid else "same as grader (Landlock and the filter take its rights)"
        return {"mode": self.mode, "walled": walled,
                "warning": None if walled else ("NO WALL: student code ran with the grader's own rights "
                                                "(--isolation none-unsafe)"),
                "uid": uid,
                "namespaces": (["mount", "network", "ipc"] + (["pid"] if self.pid_namespace else [])
                               + (["user"] if self.mode == "userns" else [])) if ns else [],
                "layers": ([] if not walled else [x for x in
                           ["own session keyring", "no capabilities", "no_new_privs",
                            "seccomp filter" if seccomp.available() else None,
                            f"landlock ABI {min(landlock.abi(), 7)}" if landlock.abi() else None]
                           + (["pivot_root"] if ns else []) if x]),
                "visible_paths": self.visible if walled else "all",
                "proc": ("a /proc of its own PID namespace" if self.pid_namespace else
                         "a /proc showing only its own uid's processes (hidepid)") if ns else
                        ("the machine's, other processes' details refused by Landlock" if walled else "the machine's"),
                "network": "none" if walled else "not isolated",
                "memory": memory_limit_kind(self),
                "memory_limit_bytes": self.memory_bytes, "cpu_seconds": self.cpu_seconds,
                "max_processes": self.max_processes, "max_file_bytes": self.file_bytes,
                "disk": (f"a tmpfs of {self.disk_bytes} bytes for its scratch folder, /tmp and /dev/shm together"
                         if ns else "not capped in total (no mount namespace)")}


def memory_limit_kind(plan):
    """How the child's memory is bounded, in words (results.json)."""
    if plan.cgroup:
        return {"kind": "memory cgroup", "counts": "all its processes' memory, shared mappings and tmpfs pages included",
                "limit_bytes": plan.memory_bytes}
    if plan.cuda:
        return {"kind": "RLIMIT_DATA only (no memory cgroup on this machine; CUDA reserves more address space "
                        "than RLIMIT_AS could allow)", "per_process_bytes": plan.memory_bytes}
    return {"kind": "per-process address space (RLIMIT_AS; no memory cgroup on this machine)",
            "per_process_bytes": plan.memory_bytes + LIBRARY_ADDRESS_SPACE,
            "total_bound_bytes": (plan.memory_bytes + LIBRARY_ADDRESS_SPACE) * plan.max_processes}


_probe_cache = {}
_reasons = {}


class WallUnavailable(SystemExit):
    """No level can wall the child off here: grading untrusted work is refused. A SystemExit,
    so the command stops with the one line, never a traceback."""


def choose_mode(requested="auto"):
    """The level to grade with: the strongest this machine can set up ('auto'), or the one asked
    for. Never a weaker one than asked, and never no wall unless asked by name (UNSAFE)."""
    if requested in UNSAFE:
        _warn_unsafe()
        return "process"
    levels = candidate_levels() if requested == "auto" else (requested,)
    for level in levels:
        if level in LEVELS and _probe(level):
            if requested == "auto" and level != levels[0] and level not in _told:
                _told.add(level)
                _tell(_("attention-kit: walling student code with the {level} level ({why})", level=level,
                        why="; ".join(f"{m}: {_reasons[m]}" for m in levels[:levels.index(level)])))
            return level
    raise WallUnavailable(refusal(levels))


_told = set()


def strongest_available():
    """The level `auto` would choose here, or None where the grader would refuse (tests, docs)."""
    try:
        return choose_mode("auto")
    except WallUnavailable:
        return None


def candidate_levels():
    """The levels that give the whole guarantee on this account, strongest first. An ordinary
    account without user namespaces gets no 'landlock' unless it asks for it by name: there the
    child keeps the grader's uid and the bounding set it cannot empty (docs/security.md)."""
    return LEVELS if os.geteuid() == 0 else ("userns",)


def refusal(levels):
    """The one line that says why nothing can be graded here, and what the instructor can do."""
    why = "; ".join(f"{m}: {_reasons.get(m, 'unknown level')}" for m in levels)
    return render(_("attention-kit: refusing to run student code: this machine cannot wall it off ({why}). "
                    "Run the grader as root, or enable user namespaces (sysctl user.max_user_namespaces=10000; "
                    "on Debian and Ubuntu also kernel.unprivileged_userns_clone=1 and, on Ubuntu 24.04, "
                    "kernel.apparmor_restrict_unprivileged_userns=0), or install libseccomp2 if it is missing; "
                    "--isolation landlock walls with Landlock alone (the child keeps this account's uid); "
                    "--isolation none-unsafe grades without any wall, for code you trust", why=why))


def _warn_unsafe():
    if "unsafe" not in _told:
        _told.add("unsafe")
        _tell(_("attention-kit: WARNING: grading WITHOUT a wall (--isolation none-unsafe): student code runs "
                "with this account's rights; results.json says so (extra_data.isolation.walled = false)"))


def _tell(message):
    """One line for the instructor on stderr, in the language the command was asked for."""
    print(render(message), file=sys.stderr)


def _probe(mode):
    """Can this machine set up `mode`? Tried once per grader process: a throwaway child must
    start Python, read numpy's files, and write in its scratch folder under that isolation."""
    if mode not in _probe_cache:
        if not seccomp.available():
            _probe_cache[mode], _reasons[mode] = False, "libseccomp (libseccomp2) is not installed"
            return False
        if mode == "uid" and not credentials.capability_sets().get("CapEff", 0) & (1 << 21):
            _probe_cache[mode], _reasons[mode] = False, "root without CAP_SYS_ADMIN (e.g. Docker's default)"
            return False
        if mode == "userns" and (err := _user_namespace_error()):
            _probe_cache[mode], _reasons[mode] = False, f"no user namespaces here ({err})"
            return False
        if mode == "landlock" and landlock.abi() == 0:
            _probe_cache[mode], _reasons[mode] = False, "the kernel has no Landlock"
            return False
        import tempfile
        from types import SimpleNamespace
        with tempfile.TemporaryDirectory(prefix="attention-kit-probe-") as scratch:
            limits = SimpleNamespace(memory_bytes=2 << 30, cpu_seconds=30, max_processes=64, file_bytes=1 << 20,
                                     disk_bytes=1 << 20)
            plan = None
            try:
                plan = make_plan(mode, scratch, limits)
                prepare_scratch(plan)
                # cheap (no site, no numpy import: 20 ms, not 250, on a cold grade's critical path),
                # yet what a child needs: its folder writable, numpy's files readable inside the new root
                import importlib.util
                numpy_init = importlib.util.find_spec("numpy").origin
                # (the landlock level writes nothing: its folder is read-only there)
                code = ("import sys\nif sys.argv[2] == 'rw': open('probe', 'w').write('ok')\n"
                        "open(sys.argv[1], 'rb').read(1)\nprint(open('probe').read() if sys.argv[2] == 'rw' else 'ok')\n")
                proc = subprocess.run([sys.executable, "-I", "-S", "-c", code, numpy_init,
                                       "rw" if plan.namespaces else "ro"],
                                      preexec_fn=lambda: _apply_telling(plan), cwd=scratch, capture_output=True,
                                      timeout=60)
                _probe_cache[mode] = proc.returncode == 0 and proc.stdout.strip() == b"ok"
                why = [ln for ln in proc.stderr.decode(errors="replace").splitlines() if ln.strip()]
                why = why[-1][-300:] if why else f"exit code {proc.returncode}"
            except (OSError, subprocess.SubprocessError) as exc:
                _probe_cache[mode] = False
                why = f"{type(exc).__name__}: {exc}"
                if isinstance(exc, subprocess.SubprocessError) and getattr(exc, "__notes__", None) is None:
                    why = "the level's set-up failed in the child"
            finally:
                if plan is not None:
                    finish(plan)
        _reasons[mode] = why
    return _probe_cache[mode]


def _user_namespace_error():
    """Why this account cannot make a user namespace, or None when it can (tried in a fork)."""
    pid = os.fork()
    if pid == 0:
        code = 0 if _libc.unshare(CLONE_NEWUSER) == 0 else ctypes.get_errno() or 255
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    err = os.waitstatus_to_exitcode(status)
    if err == 0:
        return None
    hint = {28: "user.max_user_namespaces is 0 or reached", 1: "refused by the kernel's policy or a seccomp profile",
            22: "the kernel has none"}.get(err, "")
    return f"{os.strerror(err)}{': ' + hint if hint else ''}"


def _apply_telling(plan):
    """apply, and on failure its reason on stderr (Popen says only 'Exception occurred in preexec_fn')."""
    try:
        apply(plan)
    except BaseException as exc:
        os.write(2, f"\n{exc}\n".encode(errors="replace"))
        raise


_uids_taken = 0


def next_uid():
    """A uid for the next child, never given before on this machine (until 2**31 are used): a
    counter in a root-only file, taken under a lock, shared by every grader process. A uid that
    still owns a process is passed over. Without the file (not root), a per-process count."""
    global _uids_taken
    try:
        fd = os.open(UID_COUNTER, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError:
        _uids_taken += 1
        return BASE_UID + (os.getpid() % 4096) * 100_000 + _uids_taken
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            last = int(os.pread(fd, 32, 0) or BASE_UID)
        except ValueError:
            last = BASE_UID
        uid = last
        while True:
            uid = uid + 1 if uid < MAX_UID else BASE_UID + 1
            if not processes_of(uid):
                break
        os.pwrite(fd, b"%-31d" % uid, 0)
    finally:
        os.close(fd)
    log = os.environ.get("ATTENTION_KIT_UID_LOG")      # an audit trail of this grader's children (tests)
    if log:
        with open(log, "a") as f:
            f.write(f"{uid}\n")
    return uid


def last_uid():
    """The last child uid given on this machine (the counter's value), or None without the file."""
    try:
        with open(UID_COUNTER) as f:
            return int(f.read().strip() or BASE_UID)
    except (OSError, ValueError):
        return None


def gpu_present():
    """An NVIDIA device node is there (cheap: no torch import, no CUDA start)."""
    return os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/nvidia0")


# what running Python needs from the system, bound read-only into the child's root
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/dev", "/sys")


def prepare_layers():
    """Ready, in this process, what every child's `apply` then only hands to the kernel: the
    compiled seccomp filters and the Landlock ABI (the zygote calls it before it forks)."""
    seccomp.prepare()
    landlock.abi()


def make_plan(mode, scratch, limits, hide_extra=(), uid=None, pid_namespace=True, shared=(), make_cgroup=True):
    """What a child whose scratch folder is `scratch` may see, and its limits. `shared`: host
    folders the child may write and the grader reads too (bound at the same path)."""
    prepare_layers()
    scratch = os.path.realpath(scratch)
    visible = _under_none([p for p in SYSTEM_PATHS if os.path.lexists(p)] + list(python_paths()))
    shared = [os.path.realpath(p) for p in shared]
    nproc = limits.max_processes
    # root's children always get a fresh uid (root without CAP_SYS_ADMIN still has CAP_SETUID);
    # an ordinary account's children keep its uid outside
    fresh = mode == "uid" or (mode in LEVELS and os.geteuid() == 0)
    if mode in LEVELS and not fresh:   # RLIMIT_NPROC counts all of this user's processes: leave room for them
        nproc += _count_processes(os.getuid())
    uid = (uid or next_uid()) if fresh else None
    plan = Plan(mode, scratch, limits.memory_bytes, limits.cpu_seconds, nproc, limits.file_bytes,
                uid=uid, pid_namespace=pid_namespace and mode in ("uid", "userns"), cuda=not pid_namespace,
                visible=visible + [scratch] + shared,
                hide=[p for p in kit_paths(tuple(visible)) + [os.path.realpath(p) for p in hide_extra]
                      if not any(p == s or p.startswith(s + "/") for s in [scratch] + shared)],
                shared=shared, disk_bytes=getattr(limits, "disk_bytes", 128 << 20))
    if uid:              # make_cgroup=False: a plan only described (results.json), never started
        plan.cgroup = memory_cgroup(uid, limits.memory_bytes) if make_cgroup else (
            "(one per child)" if cgroups_available() else None)
    return plan


def cgroups_available():
    """Can this process make memory cgroups for its children (as far as it knows yet)?"""
    global _cgroups
    if _cgroups == "unknown":
        _cgroups = _cgroup_base() if os.geteuid() == 0 else None
    return bool(_cgroups)


@functools.lru_cache(maxsize=None)
def python_paths():
    """The Python installation and every site folder the interpreter reads (the venv, a .pth's
    target): the child needs them to import numpy and torch."""
    found = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    for entry in sys.path:
        real = os.path.realpath(entry or ".")
        if os.path.basename(real) in ("site-packages", "dist-packages") and os.path.isdir(real):
            found.add(real)
    return tuple(sorted(found))


def _under_none(paths):
    """`paths` without those inside another of them (a bind of the outer one holds them)."""
    paths = sorted(set(paths), key=len)
    kept = []
    for p in paths:
        if not any(p == k or p.startswith(k.rstrip("/") + "/") for k in kept if not os.path.islink(k)):
            kept.append(p)
    return kept


KIT_PACKAGES = ("autograder", "solutions")


@functools.lru_cache(maxsize=None)
def kit_paths(visible):
    """Every place under a visible folder where the kit lies, however it was installed: its
    packages in a site folder (`pip install .`, a wheel, the Gradescope venv), its dist-info, the
    editable install's .pth and finder, and the kit's own folder (the master notebooks, the tests)
    when it sits inside a visible one. The child's root covers each (see build_root)."""
    import importlib.metadata
    found = set()
    here = os.path.realpath(KIT_ROOT)
    sites = set(python_paths())
    # the kit's installed distributions: their metadata folders in the site folders (a listing,
    # not importlib.metadata.distributions(), which reads every package's metadata: 0.1 s)
    dists = [importlib.metadata.PathDistribution(Path(folder, entry)) for folder in sites
             for entry in _listing(folder)
             if entry.lower().replace("-", "_").startswith("attention_kit")
             and entry.endswith((".dist-info", ".egg-info"))]
    for dist in dists:
        if (dist.metadata["Name"] or "").lower().replace("_", "-") != "attention-kit":
            continue
        for f in dist.files or []:
            parts = str(f).split("/")
            if parts[0] in ("..", "__pycache__") or len(parts) == 1:
                found.add(os.path.realpath(dist.locate_file(f)))        # a file of its own (.pth, finder, script)
            else:
                found.add(os.path.realpath(dist.locate_file(parts[0])))  # a package or the dist-info folder
    for folder in python_paths():
        for name in KIT_PACKAGES:
            path = os.path.join(folder, name)
            if os.path.isdir(path) and _looks_like_kit(path, name):
                found.add(os.path.realpath(path))
        for entry in _listing(folder):
            low = entry.lower()
            if "attention_kit" in low.replace("-", "_") and (low.endswith((".pth", ".dist-info", ".egg-info",
                                                                         ".egg-link")) or "__editable__" in low):
                found.add(os.path.realpath(os.path.join(folder, entry)))
    for name in KIT_PACKAGES:
        found.add(os.path.join(here, name))
    # the kit's own folder inside a visible one (e.g. a checkout under /usr/src): cover all of it
    # but the Python installation that may live in it (a .venv at its root)
    checkout = here not in sites and os.path.exists(os.path.join(here, "pyproject.toml"))   # not a site folder
    if checkout and any(here.startswith(v.rstrip("/") + "/") for v in visible if not os.path.islink(v)):
        pythons = python_paths()
        for entry in os.listdir(here):
            path = os.path.join(here, entry)
            if not any(p == path or p.startswith(path + "/") for p in pythons):
                found.add(path)
    return sorted(p for p in found if p and os.path.lexists(p)
                  and any(p.startswith(v.rstrip("/") + "/") for v in visible if not os.path.islink(v)))


@functools.lru_cache(maxsize=None)
def _listing(folder):
    try:
        return tuple(os.listdir(folder))
    except OSError:
        return ()


def _looks_like_kit(path, name):
    marker = {"autograder": "contract.py", "solutions": "__init__.py"}[name]
    if name == "solutions":
        return os.path.exists(os.path.join(path, marker)) and any(
            n.startswith("0") and n.endswith(".py") for n in os.listdir(path))
    return os.path.exists(os.path.join(path, marker)) and os.path.isdir(os.path.join(path, "suites"))


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
    if plan.uid:
        for root, dirs, files in os.walk(plan.scratch):
            for name in dirs + files:
                os.chown(os.path.join(root, name), plan.uid, plan.uid)
        os.chown(plan.scratch, plan.uid, plan.uid)
        os.chmod(plan.scratch, 0o700)
    if plan.namespaces:
        os.mkdir(plan.root, 0o755)    # stays the grader's: the child cannot write there


# ------------------------------------------------------------------ memory cgroups
def _cgroup_base():
    """(version, folder) of a memory cgroup under which this process may make children, or None."""
    try:
        with open("/proc/self/cgroup") as f:     # closed: an unclosed file's ResourceWarning reached every notebook's
            lines = f.read().splitlines()          # hidden-test cell as "the grader logged diagnostics"
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            for mount in ("/sys/fs/cgroup/memory", "/sys/fs/cgroup/memory,cpuacct"):
                folder = mount + path
                if os.path.exists(os.path.join(folder, "memory.limit_in_bytes")):
                    return 1, folder
    for line in lines:
        if line.startswith("0::"):
            for mount in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                folder = mount + line[3:]
                try:
                    if "memory" in open(os.path.join(folder, "cgroup.subtree_control")).read().split():
                        return 2, folder
                except OSError:
                    pass
    return None


_cgroups = "unknown"


def memory_cgroup(uid, memory_bytes):
    """A fresh memory cgroup for one child, limited to `memory_bytes` (swap included where the
    machine counts it); None where the machine gives none (then RLIMIT_AS applies)."""
    global _cgroups
    if not cgroups_available():
        return None
    version, base = _cgroups
    folder = os.path.join(base, f"attention-kit-{uid}")
    try:
        os.mkdir(folder)
        if version == 1:
            _write(folder, "memory.limit_in_bytes", memory_bytes)
            if os.path.exists(os.path.join(folder, "memory.memsw.limit_in_bytes")):
                _write(folder, "memory.memsw.limit_in_bytes", memory_bytes)
        else:
            _write(folder, "memory.max", memory_bytes)
            if os.path.exists(os.path.join(folder, "memory.swap.max")):
                _write(folder, "memory.swap.max", 0)
        return folder
    except OSError:
        try:
            os.rmdir(folder)
        except OSError:
            pass
        _cgroups = None            # not allowed here: the fallback, for this process's lifetime
        return None


def _write(folder, name, value):
    with open(os.path.join(folder, name), "w") as f:
        f.write(str(value))


def memory_exceeded(plan):
    """Did the kernel kill one of the child's processes for going over the memory cgroup's limit?"""
    if not plan.cgroup:
        return False
    for name, key in (("memory.events", "oom_kill"), ("memory.oom_control", "oom_kill")):
        try:
            for line in open(os.path.join(plan.cgroup, name)):
                k, _, v = line.partition(" ")
                if k == key and int(v) > 0:
                    return True
        except (OSError, ValueError):
            pass
    return False


def finish(plan):
    """After kill_everything: release what the child's plan held outside it (its memory cgroup)."""
    if plan.cgroup:
        for _ in range(200):
            try:
                os.rmdir(plan.cgroup)
                break
            except FileNotFoundError:
                break
            except OSError:          # its last processes are still exiting
                time.sleep(0.005)


# ------------------------------------------------------------------ in the child, before exec
def apply(plan):
    """preexec_fn: limits, a session keyring of its own, namespaces, a fork into the new PID
    namespace, the new root, the unprivileged uid, no capabilities, no_new_privs, Landlock, the
    seccomp filter. Runs in the forked child, before any student code; any failure raises, and
    the child then never runs student code."""
    if plan.cgroup:
        with open(os.path.join(plan.cgroup, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    if plan.mode == "process":        # no wall, asked for by name (--isolation none-unsafe)
        set_limits(plan, nproc=os.geteuid() != 0)
        return
    credentials.new_session_keyring()         # before the uid changes: the grader's is left behind
    if plan.uid and plan.mode == "landlock":
        # root that cannot make namespaces: a fresh uid, so that Landlock walls a powerless one
        credentials.drop_bounding_and_ambient()
        credentials.become(plan.uid)
    if plan.namespaces:
        enter_namespaces(plan)
        if plan.pid_namespace:
            fork_into_pid_namespace()
        build_root(plan)
        credentials.drop_bounding_and_ambient()   # CAP_SETPCAP is still held here (root, or the user namespace's)
        if plan.mode == "uid":
            credentials.become(plan.uid)
        elif plan.uid:                            # root's user namespace: from its 0 to INNER_UID, the fresh uid outside
            credentials.become(INNER_UID)
    credentials.clear_capabilities()
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    if plan.namespaces:
        # the view is the wall; Landlock keeps writes to the child's own tmpfs. TCP is left to the
        # network namespace (no interface up: the usual "network unreachable", not EACCES)
        # `shared` (a kernel's connection file and sockets, outside the tmpfs): sockets only, whatever
        # the account (issue 25: no folder the child writes lies outside its disk cap)
        landlock.restrict(read=["/"], write=[plan.scratch, "/tmp", "/dev/shm"], sockets=plan.shared,
                          write_files=DEVICE_FILES, devices=gpu_devices(plan), tcp=True)
    # no view of its own: nothing written on the machine's disk, which no tmpfs caps here (the
    # scratch folder is only read; in `shared`, a kernel's connection file and sockets, sockets are made)
    elif landlock.restrict(read=landlock_readable(plan) + [plan.scratch, "/proc"], sockets=plan.shared,
                           write_files=DEVICE_FILES, devices=gpu_devices(plan)) == 0:
        raise OSError("no Landlock in this kernel: the 'landlock' level cannot wall the child")
    set_limits(plan)
    seccomp.load(own_namespaces=plan.namespaces)


def set_limits(plan, nproc=True):
    """The resource limits, set last: a cold child is a fork of the grader, whose address space
    and data (torch, pytest) are already over them, and the set-up above must still allocate;
    an exec then starts the child's program small, under them."""
    for res, value in ((resource.RLIMIT_CORE, 0), (resource.RLIMIT_DATA, plan.memory_bytes),
                       (resource.RLIMIT_FSIZE, plan.file_bytes)):
        resource.setrlimit(res, (value, value))
    resource.setrlimit(resource.RLIMIT_CPU, (plan.cpu_seconds, plan.cpu_seconds + 5))
    if not plan.cgroup and not plan.cuda:   # no cgroup: bound each process's address space, shared mappings included
        limit = plan.memory_bytes + LIBRARY_ADDRESS_SPACE
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    if nproc:
        resource.setrlimit(resource.RLIMIT_NPROC, (plan.max_processes, plan.max_processes))


DEVICE_FILES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")


def gpu_devices(plan):
    """The NVIDIA device files a CUDA child opens read-write and drives by ioctl (none otherwise)."""
    if not plan.cuda:
        return []
    try:
        return ["/dev/" + name for name in os.listdir("/dev") if name.startswith("nvidia")]
    except OSError:
        return []


def landlock_readable(plan):
    """What a child without a view of its own may read: the visible folders, each one that holds
    a hidden path (the kit inside a checkout's venv...) split into its entries but that path."""
    hidden = set(plan.hide)
    readable = []

    def add(path):
        if path in hidden:
            return
        if os.path.isdir(path) and not os.path.islink(path) and any(h.startswith(path.rstrip("/") + "/") for h in hidden):
            for name in _listing(path):
                add(os.path.join(path, name))
        else:
            readable.append(path)
    for path in plan.visible:
        if path != plan.scratch and path not in plan.shared:
            add(os.path.realpath(path) if os.path.islink(path) else path)
    return readable


def enter_namespaces(plan):
    """New mount, network, IPC and PID (and, in "userns" mode, user) namespaces.

    In the user namespace the child ends as INNER_UID, never 0. An ordinary account maps its own
    uid there (the only one it may map). Root (without CAP_SYS_ADMIN, e.g. Docker's default) has
    a helper, forked before and still root outside, write the maps: 0 -> 0 (so the mounts can be
    made with root's rights of search) and INNER_UID -> the child's fresh uid, which `apply`
    becomes before any student code; root's files are then 0's inside, out of the child's reach."""
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | (CLONE_NEWPID if plan.pid_namespace else 0)
    if plan.mode == "userns":
        if plan.uid:
            maps = {"setgroups": "allow", "uid_map": f"0 0 1\n{INNER_UID} {plan.uid} 1\n", "gid_map": f"0 0 1\n{INNER_UID} {plan.uid} 1\n"}
            _unshare_with_helper(CLONE_NEWUSER | flags, maps)
        else:
            # a cold child is a fork of the grader, which made itself non-dumpable: /proc/self
            # would then be root's, and its maps could not be written (the crash of issue 24)
            _libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
            _check(_libc.unshare(CLONE_NEWUSER | flags), "unshare")
            for name, text in (("setgroups", "deny"), ("uid_map", f"{INNER_UID} {uid} 1"),
                               ("gid_map", f"{INNER_UID} {gid} 1")):
                with open(f"/proc/self/{name}", "w") as f:
                    f.write(text)
    else:
        _check(_libc.unshare(flags), "unshare")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)


def _unshare_with_helper(flags, maps):
    """unshare(flags), the user namespace's maps written by a forked helper from outside."""
    me = os.getpid()
    go_r, go_w = os.pipe()
    done_r, done_w = os.pipe()
    helper = os.fork()
    if helper == 0:
        ok = b"0"
        try:
            os.close(go_w)
            os.close(done_r)
            if os.read(go_r, 1) == b"1":
                for name in ("setgroups", "uid_map", "gid_map"):
                    with open(f"/proc/{me}/{name}", "w") as f:
                        f.write(maps.get(name, "deny"))
                ok = b"1"
        finally:
            os.write(done_w, ok)
            os._exit(0)
    os.close(go_r)
    os.close(done_w)
    result = _libc.unshare(flags)
    err = ctypes.get_errno()
    os.write(go_w, b"1" if result == 0 else b"0")
    os.close(go_w)
    answer = os.read(done_r, 1)
    os.close(done_r)
    os.waitpid(helper, 0)
    if result != 0:
        raise OSError(err, f"unshare: {os.strerror(err)}")
    if answer != b"1":
        raise OSError("the user namespace's maps could not be written")


def fork_into_pid_namespace():
    """Fork once: the new process is the first of the new PID namespace, and everything the
    student's code starts lives and dies with it (the kernel kills them all when it ends). This
    process only waits and passes on how it ended: it closes every file descriptor first, so the
    grader sees the pipes close, and Popen its exec, exactly when the inner process's happen."""
    pid = os.fork()
    if pid == 0:
        # a process group of its own: kill(0, ...) from student code cannot reach the outer process
        os.setpgid(0, 0)
        return
    os.closerange(0, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def build_root(plan):
    """A fresh root file system holding only plan.visible (the kit's copies covered), a /proc
    of the child's own, and one size-capped tmpfs for its scratch folder, /tmp and /dev/shm;
    then pivot_root into it.

    Order matters: the child's /tmp goes in first, so that a visible folder under the host's /tmp
    (a venv there, the scratch folder itself) is bound on top of it, not covered by it."""
    root = plan.root
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=755")
    fs = _scratch_tmpfs(plan, root)
    os.makedirs(root + "/tmp", exist_ok=True)
    _mount(fs + "/tmp", root + "/tmp", None, MS_BIND)
    for path in plan.visible:
        inside = root + path
        if os.path.islink(path):                  # e.g. /lib -> usr/lib on merged-/usr systems
            os.makedirs(os.path.dirname(inside), exist_ok=True)
            if not os.path.lexists(inside):
                os.symlink(os.readlink(path), inside)
            continue
        if path == plan.scratch or path in plan.shared:
            continue                              # below
        os.makedirs(inside, exist_ok=True)
        # /dev and /sys without what is mounted below them (the machine's /dev/shm, /dev/mqueue,
        # its cgroup file systems, writable there); the rest with it, read-only. A user namespace
        # may only take them whole (the kernel locks submounts together): /dev/shm and
        # /dev/mqueue are then covered below, and the grader's uid owns no cgroup file.
        whole = plan.mode == "userns" or path not in ("/dev", "/sys")
        _mount(path, inside, None, MS_BIND | (MS_REC if whole else 0))
        _mount(None, inside, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | (MS_NODEV if path != "/dev" else 0))
    if os.path.isdir(root + "/dev/shm"):
        _mount(fs + "/shm", root + "/dev/shm", None, MS_BIND)
    if os.path.isdir(root + "/dev/mqueue"):       # POSIX queues: those of its own IPC namespace only
        _mount("mqueue", root + "/dev/mqueue", "mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.makedirs(root + plan.scratch, exist_ok=True)
    _mount(fs + "/work", root + plan.scratch, None, MS_BIND)
    _check(_libc.umount2(fs.encode(), MNT_DETACH), f"umount {fs}")    # the binds stay
    os.rmdir(fs)
    for path in plan.shared:                      # writable, and not recursive: the new root
        os.makedirs(root + path, exist_ok=True)   # mounted inside it must not appear there
        _mount(path, root + path, None, MS_BIND)
    _mount_proc(plan, root)
    empty = root + "/.attention-kit-hidden"
    open(empty, "w").close()
    os.chmod(empty, 0o444)
    for path in plan.hide:                        # the kit's installed copies, a submission folder...
        target = root + path
        if os.path.isdir(target) and not os.path.islink(target):
            _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "size=4k,mode=755")
        elif os.path.isfile(target) and not os.path.islink(target):
            _mount(empty, target, None, MS_BIND)
            _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
    pivot_into(root)
    os.chdir(plan.scratch)


def pivot_into(root):
    """Make `root` this mount namespace's root and detach the old one entirely, as bubblewrap
    does (pivot_root(".", ".") then unmount the old root stacked on top): unlike chroot, no
    path, open folder or chroot trick leads back to the machine's file system."""
    os.chdir(root)
    _check(_libc.syscall(SYS_PIVOT_ROOT, b".", b"."), "pivot_root")
    _check(_libc.umount2(b".", MNT_DETACH), "umount the old root")
    os.chdir("/")


def _scratch_tmpfs(plan, root):
    """One tmpfs of plan.disk_bytes for all the child may write, bound at three places by build_root:
    its scratch folder (`work`: a copy of what the grader put in the host's, the runner and the
    student's file), /tmp and /dev/shm. Returns where it is mounted for now."""
    owner = group = plan.uid if plan.mode == "uid" else INNER_UID
    fs = root + "/.attention-kit-scratch"
    os.mkdir(fs, 0o700)
    _mount("tmpfs", fs, "tmpfs", MS_NOSUID | MS_NODEV, f"size={plan.disk_bytes},nr_inodes=16384,mode=755")
    for name in ("work", "tmp", "shm"):
        os.mkdir(os.path.join(fs, name), 0o700)
        os.chown(os.path.join(fs, name), owner, group)
    _copy_scratch(plan.scratch, os.path.join(fs, "work"), owner, group)
    return fs


def _copy_scratch(src_folder, dst_folder, owner, group, depth=4):
    """The grader's files in the host's scratch folder, into the tmpfs: regular files, and the
    folders (not hidden: the new root's mount point is one; `depth` deep) that the nbgrader wall puts
    there for the course's data (the decoder's data/corpus.txt); never a link."""
    for entry in os.scandir(src_folder):
        target = os.path.join(dst_folder, entry.name)
        if entry.is_file(follow_symlinks=False):
            with open(entry.path, "rb") as src, open(target, "wb") as dst:
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
            os.chown(target, owner, group)
        elif entry.is_dir(follow_symlinks=False) and not entry.name.startswith(".") and depth > 0:
            os.mkdir(target, 0o755)
            os.chown(target, owner, group)
            _copy_scratch(entry.path, target, owner, group, depth - 1)


def _mount_proc(plan, root):
    os.makedirs(root + "/proc", exist_ok=True)
    if plan.pid_namespace:     # we are the new PID namespace's first process: its /proc shows its processes only
        _mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        return
    try:                       # no PID namespace (CUDA): a /proc that shows the child's own uid's processes only
        _mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible")
    except OSError:
        _mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2")


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
    if plan.uid:
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


def _kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def leftover_processes(plan):
    """Live (not zombie) processes still running under the child's uid ("uid" mode)."""
    return processes_of(plan.uid) if plan.uid else []


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
