"""Landlock: a wall any process may raise around itself, no privilege needed (Linux 5.13+).

A small ctypes wrapper over the three syscalls, written here because the PyPI binding
(`landlock` 1.0.0.dev5) handles file-system rights only (no TCP rules, ABI 4; no scoping of
abstract sockets and signals, ABI 6), checks errors by a possibly stale errno, and rewrites
libc's shared `syscall` prototype for the whole process. Used per child after the fork: creating
the ruleset and adding a few rules costs a handful of syscalls.

Rights are taken as far as the running kernel's ABI knows them (1..7): on an older kernel the
newer rights are simply not handled (the namespaces and seccomp still stand).
"""
import ctypes
import os

SYS = (444, 445, 446)    # landlock_create_ruleset, _add_rule, _restrict_self: one number on every architecture
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

# file-system rights (include/uapi/linux/landlock.h)
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR, MAKE_REG = 1 << 4, 1 << 5, 1 << 6, 1 << 7, 1 << 8
MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1, 5: (1 << 16) - 1}
NET_BIND_TCP, NET_CONNECT_TCP = 1, 2
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1, 2

READ = EXECUTE | READ_FILE | READ_DIR
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV

_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long


class RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class PathBeneathAttr(ctypes.Structure):
    _pack_ = 1                     # the kernel's struct is packed
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _call(number, *args):
    result = _syscall(ctypes.c_long(number), *args)
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"landlock syscall {number}: {os.strerror(err)}")
    return result


_abi = None


def abi():
    """The kernel's Landlock ABI version (0: none, or disabled at boot)."""
    global _abi
    if _abi is None:
        try:
            _abi = _call(SYS[0], None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
        except OSError:
            _abi = 0
    return _abi


SOCKETS_ONLY = READ | MAKE_SOCK | REMOVE_FILE    # a folder of unix sockets: bind them, read, unlink; no bytes


def restrict(read=(), write=(), write_files=(), devices=(), tcp=False, sockets=()):
    """Restrict this process (and what it starts) for good: read and execute beneath `read`,
    everything beneath `write`, writing the single files `write_files` (/dev/null), read, write
    and ioctl on the device files `devices` (a GPU's /dev/nvidia*), in the folders `sockets` only
    reading, binding unix sockets and removing (SOCKETS_ONLY: no file or folder made, nothing
    written, so nothing there takes bytes outside a disk cap), no TCP bind or
    connect unless `tcp`, no abstract unix socket or signal outside its own domain. Paths that do
    not exist are passed over. Needs no_new_privs. Returns the ABI used (0: Landlock absent)."""
    version = min(abi(), 7)
    if version == 0:
        return 0
    fs = FS_BY_ABI.get(version, FS_BY_ABI[5])
    attr = RulesetAttr(fs, (NET_BIND_TCP | NET_CONNECT_TCP) if version >= 4 and not tcp else 0,
                       (SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL) if version >= 6 else 0)
    size = 8 if version < 4 else 16 if version < 6 else 24
    ruleset = _call(SYS[0], ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    try:
        for paths, rights in ((read, READ), (write, fs), (write_files, READ_FILE | WRITE_FILE),
                              (devices, READ_FILE | WRITE_FILE | IOCTL_DEV), (sockets, SOCKETS_ONLY)):
            for path in paths:
                try:
                    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    continue
                try:
                    allowed = rights & fs
                    if not os.path.isdir(path):
                        allowed &= FILE_RIGHTS
                    rule = PathBeneathAttr(allowed, fd)
                    _call(SYS[1], ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH), ctypes.byref(rule),
                          ctypes.c_uint32(0))
                finally:
                    os.close(fd)
        _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        _call(SYS[2], ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)
    return version
