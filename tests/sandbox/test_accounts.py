"""The wall under every account a course grades with (issue 24), each graded by ONE warm grader.

For each account (tests/sandbox/accounts.py: root, root without CAP_SYS_ADMIN, an ordinary
account, an ordinary account without user namespaces) one process grades, step 4 only: an honest
step, a plain wrong one (the baseline), the escape cases (tests/hostile/escape_*: each scores full
marks exactly when its escape works, else the baseline's score), the corpus's wall cases
(tests/harness/hostile.py ISOLATION_CASES, their exact expected outcomes), then cold children (no zygote,
as ATTENTION_KIT_WARM=0 and a GPU machine) for the honest step and the privilege probe. Where
the account cannot wall the child, the grader must refuse before any student code runs, in one
line. Outcomes are scores and messages, never times.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from autograder.sandbox import isolation
from conftest import ROOT
from harness import hostile

ACCOUNTS = Path(__file__).with_name("accounts.py")
CORPUS = ROOT / "tests" / "hostile"
ESCAPE_CASES = CORPUS / "escapes"      # issue 24: each scores full marks exactly when its escape works
USER = 54321                      # the ordinary account (no passwd entry needed)
ESCAPES = sorted(p.name.split(".")[0] for p in ESCAPE_CASES.glob("escape_*.04_softmax.py"))
WALL_CASES = sorted(hostile.ISOLATION_CASES)
pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                                reason="makes the other accounts: needs root and setpriv (CI runs as root)")

BATCH = """\
import json, os, sys
from autograder.commands.cli import start_warm_children
from autograder.grading import run as grading
from autograder.reports import gradescope_json as report
from autograder.sandbox import isolation, zygote
from autograder.sandbox.limits import Limits
isolation_level = sys.argv[1]
try:
    isolation.choose_mode(isolation_level)
except SystemExit as refused:
    print(json.dumps({"refused": str(refused)}))
    sys.exit(0)
start_warm_children(("numpy",))          # step 4 only: no torch zygote
grader, out = grading.Grader(), {}
for arg in sys.argv[2:]:
    name, sub, seconds = arg.split(":")
    if name == "cold":
        os.environ["ATTENTION_KIT_WARM"] = "0"   # from here on, a fresh python -I runner.py per child
        zygote.stop()
        continue
    limits = Limits(call_seconds=float(seconds), memory_bytes=1 << 30, isolation=isolation_level)
    out[name] = report.gradescope(grader.grade(sub, limits, ["04_softmax"]))
print(json.dumps(out))
"""


class Services:
    """What the instructor's machine offers on loopback: a TCP port and an abstract unix socket."""

    def __init__(self):
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.unix.bind(b"\0attention-kit-instructor")
        self.accepted = 0
        for s in (self.tcp, self.unix):
            s.listen()
            threading.Thread(target=self._serve, args=(s,), daemon=True).start()

    def _serve(self, s):
        while True:
            try:
                conn, _ = s.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self):
        for s in (self.tcp, self.unix):
            try:
                s.shutdown(socket.SHUT_RDWR)      # wakes the accept(), which then lets the name go
            except OSError:
                pass
            s.close()


def _cases():
    cases = [("honest", (ROOT / "samples" / "unusual_style" / "04_softmax.py").read_text()),
             ("wrong_baseline", (ESCAPE_CASES / "wrong_baseline.04_softmax.py").read_text())]
    cases += [(name, ((ESCAPE_CASES if name in ESCAPES else CORPUS) / f"{name}.04_softmax.py").read_text())
              for name in ESCAPES + WALL_CASES]
    cases += [("cold", None), ("cold_honest", cases[0][1]),
              ("cold_escape_privileges", (ESCAPE_CASES / "escape_privileges.04_softmax.py").read_text())]
    return cases


def _left_running(uid, log):
    """Live processes of this run's children: the uids its grader gave out (root), or anything of
    the ordinary account's (the grader itself has exited). Other graders on the machine are not ours."""
    uids = {int(u) for u in log.read_text().split()} if log.exists() else set()
    return sorted(pid for u in uids | ({uid} if uid else set()) for pid in isolation.processes_of(u))


def _describe(pid):
    """A live process left behind, told by its owner, state and command line (for the failure)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (pid, os.stat(f"/proc/{pid}").st_uid, stat[0], Path(f"/proc/{pid}/cmdline").read_bytes()[:200])
    except OSError:
        return (pid, "gone")


def graded_as(kind, level="auto"):
    """Grade every case as `kind`; returns (results by case, leftovers, output)."""
    uid = 0 if kind.startswith("root") else USER
    home = Path(tempfile.mkdtemp(prefix=f"attention-kit-account-{kind}-"))
    secret = Path(f"/var/tmp/attention-kit-instructor-{kind}")
    secret.mkdir(mode=0o700, exist_ok=True)
    (secret / "secret").write_text("the instructor's private notes\n")
    os.chmod(secret / "secret", 0o600)
    args = []
    for name, text in _cases():
        if text is None:
            args.append(f"{name}:-:0")
            continue
        (home / "subs" / name).mkdir(parents=True)
        (home / "subs" / name / "04_softmax.py").write_text(text)
        args.append(f"{name}:{home / 'subs' / name}:{hostile.call_seconds(name)}")
    for path in [home, secret, *home.rglob("*"), secret / "secret"]:
        os.chown(path, uid, uid)
    os.chmod(home, 0o700)
    tmp = home / "tmp"
    tmp.mkdir()
    os.chown(tmp, uid, uid)
    services, before, ipc_before = Services(), hostile.kit_fingerprint(), hostile.ipc_objects()
    try:
        env = {"PATH": os.environ["PATH"], "HOME": str(home), "TMPDIR": str(tmp), "LANG": "C.UTF-8",
               "ATTENTION_KIT_UID_LOG": str(home / "uids.log")}
        proc = subprocess.run([sys.executable, str(ACCOUNTS), kind, str(uid), "--", sys.executable, "-c", BATCH,
                               level, *args], cwd=ROOT, capture_output=True, text=True, timeout=1500, env=env)
    finally:
        services.close()
    assert proc.returncode == 0, proc.stderr[-3000:]
    left = {"kit changed": hostile.kit_fingerprint() != before, "connections": services.accepted,
            "files": sorted(str(p) for p in tmp.iterdir()), "ipc": sorted(hostile.ipc_objects() - ipc_before),
            "processes": [_describe(pid) for pid in _left_running(uid, home / "uids.log")]}
    shutil.rmtree(home, ignore_errors=True)
    shutil.rmtree(secret, ignore_errors=True)
    return json.loads(proc.stdout.strip().splitlines()[-1]), left, proc.stderr


# (account, --isolation): every account with the level `auto` picks, and root asking for userns
# (whose child was uid 0 inside before issue 24)
ACCOUNT_LEVELS = [("root", "auto"), ("root-no-sysadmin", "auto"), ("user", "auto"), ("root", "userns")]
CHOSEN = {("root", "auto"): "uid", ("root-no-sysadmin", "auto"): "userns", ("user", "auto"): "userns",
          ("root", "userns"): "userns"}


@pytest.fixture(scope="module", params=ACCOUNT_LEVELS, ids=[f"{k}-{lv}" for k, lv in ACCOUNT_LEVELS])
def account(request):
    kind, level = request.param
    return request.param, *graded_as(kind, level)


def test_every_account_walls_with_the_whole_guarantee(account):
    kind, results, left, _ = account
    assert "refused" not in results, results
    honest, baseline = results["honest"]["score"], results["wrong_baseline"]["score"]
    assert honest == 10 and baseline < honest
    assert results["honest"]["extra_data"]["isolation"]["walled"] is True
    layers = results["honest"]["extra_data"]["isolation"]["layers"]
    assert {"own session keyring", "no capabilities", "no_new_privs", "seccomp filter", "pivot_root"} <= set(layers)
    escaped = {name: results[name]["score"] for name in ESCAPES if results[name]["score"] != baseline}
    assert escaped == {}, f"as {kind}, these escapes worked: {escaped}"
    assert results["cold_honest"]["score"] == 10
    assert results["cold_escape_privileges"]["score"] == baseline
    assert left == {"kit changed": False, "connections": 0, "files": [], "ipc": [], "processes": []}


def test_the_corpus_wall_cases_hold_under_every_account(account):
    kind, results, _, _ = account
    for case in WALL_CASES:
        score, phrase = hostile.EXPECTED[case]
        got = results[case]
        assert got["score"] == score, (kind, case, [t["output"][:300] for t in got["tests"] if t["status"] == "failed"])
        if phrase:
            assert phrase in next(t["output"] for t in got["tests"] if t["status"] == "failed"), (kind, case)


def test_the_levels_chosen_are_the_strongest_each_account_allows(account):
    kind, results, _, _ = account
    expected = CHOSEN[kind]
    info = results["honest"]["extra_data"]["isolation"]
    assert info["mode"] == expected
    assert "same as grader" not in str(info["uid"]) and str(info["uid"]) != "0"


def test_landlock_alone_is_given_only_by_name_and_holds_but_for_the_bounding_set():
    """An ordinary account without user namespaces may ask for --isolation landlock: no view of its
    own, its own uid, but every escape still fails, except that the bounding set it cannot empty
    shows (escape_privileges), as docs/security.md says."""
    results, left, _ = graded_as("user-no-userns", "landlock")
    baseline = results["wrong_baseline"]["score"]
    assert results["honest"]["score"] == 10 and results["cold_honest"]["score"] == 10
    info = results["honest"]["extra_data"]["isolation"]
    assert info["mode"] == "landlock" and info["walled"] is True and "landlock ABI" in " ".join(info["layers"])
    escaped = {name for name in ESCAPES if results[name]["score"] != baseline}
    assert escaped == {"escape_privileges"}
    for case in ("read_solutions", "read_installed_kit"):
        assert results[case]["score"] == hostile.EXPECTED[case][0]
    assert left == {"kit changed": False, "connections": 0, "files": [], "ipc": [], "processes": []}


def test_an_account_without_user_namespaces_is_refused_in_one_line():
    results, left, _ = graded_as("user-no-userns")
    assert set(results) == {"refused"}
    line = results["refused"]
    assert "\n" not in line and "user namespaces" in line and "--isolation none-unsafe" in line
    assert left["files"] == [] and left["connections"] == 0
