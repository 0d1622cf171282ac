"""Run a command as each kind of account a course grades with, from a root test process.

    python tests/sandbox/accounts.py KIND UID -- COMMAND...

KIND:
- root: as is (CI, Gradescope).
- root-no-sysadmin: root without CAP_SYS_ADMIN (Docker's default profile, many CI containers):
  dropped from the bounding set, so the exec'd command never holds it.
- user: the ordinary account UID (an instructor's own account, a JupyterHub, a CI runner), with
  no capabilities; in a mount namespace of its own where the interpreter is reachable (this
  machine's Python lives in /root, which only root may search).
- user-no-userns: the same, inside a user namespace whose max_user_namespaces is 0: the account
  cannot make user namespaces (a hardened distribution, a container without them).
The command's exit status is passed on.
"""
import ctypes
import os
import sys

CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
MS_BIND, MS_REC, MS_PRIVATE, MS_MOVE = 4096, 16384, 1 << 18, 8192
libc = ctypes.CDLL(None, use_errno=True)
KINDS = ("root", "root-no-sysadmin", "user", "user-no-userns")


def check(result, what):
    if result != 0:
        raise OSError(ctypes.get_errno(), what)


def mount(source, target, fstype, flags, data=None):
    enc = (lambda s: None if s is None else str(s).encode())
    check(libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


def reachable_python():
    """Make the interpreter's prefix searchable by anyone, in this mount namespace only: a 755
    tmpfs over /root holding just the Python installation, as on a machine where it is in /usr."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    prefix = os.path.realpath(sys.base_prefix)
    if not prefix.startswith("/root/") or os.stat("/root").st_mode & 0o001:
        return
    keep = "/run/attention-kit-test-python"
    os.makedirs(keep, exist_ok=True)
    mount(prefix, keep, None, MS_BIND | MS_REC)
    mount("tmpfs", "/root", "tmpfs", 0, "mode=755")
    os.makedirs(prefix)
    mount(keep, prefix, None, MS_MOVE)
    os.rmdir(keep)                            # empty again: nothing left on the machine


def reachable_kit():
    """The ordinary account imports the kit from this checkout: every folder on the way to it must be
    searchable by others. A private checkout (`mktemp -d` makes a 0700 folder, where CI clones) gets
    the search bit (o+x, never read) on the folders that lack it; the kit's own folders are 755."""
    kit = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = kit
    while path != "/":
        if not path.startswith("/root") and not os.stat(path).st_mode & 0o001:
            os.chmod(path, os.stat(path).st_mode | 0o001)
        path = os.path.dirname(path)


def drop_to(uid, argv):
    os.execvp("setpriv", ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
                          "--", *argv])


def main(kind, uid, argv):
    if kind == "root":
        os.execvp(argv[0], argv)
    if kind == "root-no-sysadmin":
        os.execvp("setpriv", ["setpriv", "--bounding-set=-sys_admin", "--inh-caps=-sys_admin", "--", *argv])
    if kind.startswith("user"):
        reachable_kit()
    if kind == "user":
        check(libc.unshare(CLONE_NEWNS), "unshare")
        reachable_python()
        drop_to(uid, argv)
    if kind == "user-no-userns":
        ready_r, ready_w = os.pipe()
        go_r, go_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(ready_r)
            os.close(go_w)
            check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare")
            os.write(ready_w, b"1")
            os.read(go_r, 1)                  # the maps are written
            with open("/proc/sys/user/max_user_namespaces", "w") as f:
                f.write("0")
            reachable_python()
            drop_to(uid, argv)
        os.close(ready_w)
        os.close(go_r)
        os.read(ready_r, 1)
        for name, text in (("uid_map", f"0 0 1\n{uid} {uid} 1\n"), ("gid_map", f"0 0 1\n{uid} {uid} 1\n")):
            with open(f"/proc/{pid}/{name}", "w") as f:
                f.write(text)
        os.write(go_w, b"1")
        _, status = os.waitpid(pid, 0)
        sys.exit(os.waitstatus_to_exitcode(status) & 0xFF)
    raise SystemExit(f"unknown account kind {kind!r} (one of {', '.join(KINDS)})")


if __name__ == "__main__":
    kind, uid, sep, *argv = sys.argv[1:]
    assert sep == "--"
    main(kind, int(uid), argv)
