"""The child's system-call filter: what student code never needs is refused (EPERM), in every level.

Built with libseccomp through `pyseccomp` (a ctypes binding to libseccomp.so, API-compatible with
libseccomp's own Python bindings, which Debian ships for the system Python only): libseccomp
resolves the syscall numbers per architecture, orders the rules and writes the BPF program, and it
refuses foreign-architecture calls (the x32 and i386 entry points) by itself. The filter is built
once per process (the zygote, before it forks any child) and only loaded in each child: loading
is one prctl, cheap enough for a warm fork.

Refused:
- new namespaces and joining others (unshare, setns, clone/clone3 with a CLONE_NEW* flag): the
  way back to capabilities from an unprivileged uid;
- mounts of every kind, pivot_root, chroot: the child's view stays the one it was given;
- the kernel keyrings (keyctl, add_key, request_key): no key of the grader's session read, none
  left for a later child;
- ptrace and reading or writing another process's memory, pidfd_getfd, kcmp;
- bpf, perf_event_open, userfaultfd, io_uring (whose operations bypass this filter);
- kernel modules, kexec, reboot, swap, clocks, host and domain names, accounting, quotas,
  open_by_handle_at (the classic container escape), iopl/ioperm, the terminal's TIOCSTI;
- every socket but AF_UNIX where the child shares the machine's network (the landlock level);
  with a network namespace of its own, AF_INET, AF_INET6 and AF_NETLINK too (nothing to reach
  there), never vsock and the other families no namespace walls;
- in a level without namespaces of its own, setsid and setpgid (everything the student starts
  stays in the child's process group and dies with it) and System V and POSIX IPC objects
  (which would outlive it on the machine).
"""
import ctypes
import errno
import functools
import os

try:
    import pyseccomp
except (ImportError, RuntimeError, OSError):      # RuntimeError: the binding found no libseccomp.so
    pyseccomp = None

AF_UNIX, AF_INET, AF_INET6, AF_NETLINK = 1, 2, 10, 16
AF_MAX = 64                    # above every family Linux has (46 in 6.x)
TIOCSTI = 0x5412

REFUSED = (
    "unshare", "setns",
    "mount", "umount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount", "fspick",
    "open_tree", "move_mount", "mount_setattr",
    "keyctl", "add_key", "request_key",
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot",
    "swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "settimeofday", "clock_settime",
    "clock_adjtime", "adjtimex", "sethostname", "setdomainname", "open_by_handle_at",
    "name_to_handle_at", "iopl", "ioperm", "lookup_dcookie", "vhangup", "syslog",
    "fanotify_init",
)
# refused only where the child shares the machine's PID and IPC namespaces (the landlock level):
# its processes stay in its process group, killed whole; no System V or POSIX IPC object outlives it
SESSION_CALLS = ("setsid", "setpgid", "shmget", "msgget", "semget", "mq_open")


def available():
    return pyseccomp is not None


@functools.lru_cache(maxsize=2)
def _filter(own_namespaces):
    """The filter (a pyseccomp.SyscallFilter), built once per process and kind."""
    f = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
    deny = pyseccomp.ERRNO(errno.EPERM)
    for name in REFUSED + (() if own_namespaces else SESSION_CALLS):
        try:
            f.add_rule(deny, name)
        except (OSError, ValueError):
            pass                  # a call this architecture does not have (umount on x86_64...)
    # clone with any namespace flag; clone3 passes its flags in memory the filter cannot read, so
    # it answers ENOSYS and libc falls back to clone (as Docker's and Flatpak's filters do)
    for bit in (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x00000080):
        f.add_rule(deny, "clone", pyseccomp.Arg(0, pyseccomp.MASKED_EQ, bit, bit))
    f.add_rule(pyseccomp.ERRNO(errno.ENOSYS), "clone3")
    # sockets: unix ones only where the child shares the machine's network; with a network
    # namespace of its own (no interface up) also inet and netlink, whose errors there are the
    # usual "network unreachable", but never the families no namespace walls (vsock reaches the
    # hypervisor's host, and the rest are never needed)
    allowed = (AF_UNIX, AF_INET, AF_INET6, AF_NETLINK) if own_namespaces else (AF_UNIX,)
    for family in range(AF_MAX):
        if family not in allowed:
            for call in ("socket", "socketpair"):
                f.add_rule(pyseccomp.ERRNO(errno.EAFNOSUPPORT), call, pyseccomp.Arg(0, pyseccomp.EQ, family))
    for call in ("socket", "socketpair"):      # a family this table does not know yet
        f.add_rule(pyseccomp.ERRNO(errno.EAFNOSUPPORT), call, pyseccomp.Arg(0, pyseccomp.GE, AF_MAX))
    f.add_rule(deny, "ioctl", pyseccomp.Arg(1, pyseccomp.MASKED_EQ, 0xFFFFFFFF, TIOCSTI))
    return f


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


_libc = ctypes.CDLL(None, use_errno=True)
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2


@functools.lru_cache(maxsize=2)
def _program(own_namespaces):
    """The filter compiled to BPF by libseccomp, held ready in this process: a child only hands
    it to the kernel (one prctl, no allocation: safe after a fork from a threaded grader)."""
    fd = os.memfd_create("attention-kit-seccomp")
    try:
        _filter(own_namespaces).export_bpf(open(fd, "wb", closefd=False))
        code = os.pread(fd, 1 << 20, 0)
    finally:
        os.close(fd)
    buffer = ctypes.create_string_buffer(code, len(code))
    return buffer, _SockFprog(len(code) // 8, ctypes.addressof(buffer))


def prepare():
    """Compile both filters now (the zygote before it forks, the grader before a cold child)."""
    if available():
        _program(True)
        _program(False)


def load(own_namespaces=True):
    """Install the filter on this process (and everything it starts). Needs no_new_privs set."""
    _, fprog = _program(own_namespaces)
    if _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"seccomp: {os.strerror(err)}")
