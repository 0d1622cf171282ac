"""What the child holds of the grader's credentials: nothing. Run in the child, before student code.

- `new_session_keyring`: an anonymous session keyring of its own, joined before the uid changes
  (the zygote's fork would otherwise keep the grader's, and possession grants its permissions
  whatever the uid); the seccomp filter then refuses every keyring call.
- `become`: an unprivileged uid and gid, no supplementary groups.
- `drop_capabilities`: all five sets empty (bounding and ambient first, while CAP_SETPCAP is
  still held; then effective, permitted and inheritable with capset).
"""
import ctypes
import errno
import os
import platform

KEYCTL_JOIN_SESSION_KEYRING = 1
PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
SYS_KEYCTL = {"aarch64": 219, "riscv64": 219}.get(platform.machine(), 250)     # x86_64: 250

_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def new_session_keyring():
    """Join a new, empty, anonymous session keyring. Where the call is refused already (a
    container's own seccomp profile), the child cannot reach any keyring either: fine."""
    if _syscall(ctypes.c_long(SYS_KEYCTL), ctypes.c_long(KEYCTL_JOIN_SESSION_KEYRING),
                     ctypes.c_void_p(None)) < 0:
        err = ctypes.get_errno()
        if err not in (errno.ENOSYS, errno.EPERM):
            raise OSError(err, f"keyctl(JOIN_SESSION_KEYRING): {os.strerror(err)}")


def _last_capability():
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 63


LAST_CAPABILITY = _last_capability()     # read once, in the zygote or the grader, not per child


def drop_bounding_and_ambient(last=None):
    """Empty the bounding and ambient sets (needs CAP_SETPCAP: call it while still privileged;
    without it the bounding set stays, and no_new_privs keeps it unusable)."""
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    for cap in range((LAST_CAPABILITY if last is None else last) + 1):
        if _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != errno.EINVAL:
            if ctypes.get_errno() == errno.EPERM:
                return False
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")
    return True


def clear_capabilities():
    """Effective, permitted and inheritable sets empty (capset: lowering is always allowed)."""
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    if _libc.capset(ctypes.byref(header), data) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"capset: {os.strerror(err)}")


def become(uid):
    """Run as `uid` (real, effective, saved; the same gid; no supplementary groups)."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


def capability_sets():
    """{name: hex} of this process's five capability sets, from /proc/self/status (tests, probe)."""
    found = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")):
                key, value = line.split(":")
                found[key] = int(value.strip(), 16)
    return found
