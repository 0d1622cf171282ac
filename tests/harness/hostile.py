"""The hostile corpus (tests/hostile/): each case's exact outcome, the grading of a case and the traces it must not leave. Read by tests/sandbox/test_hostile.py and tests/sandbox/test_accounts.py (every account)."""
import hashlib
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from autograder.sandbox import isolation
from conftest import ROOMY_SECONDS, ROOT

CORPUS = ROOT / "tests" / "hostile"
STEPS = ["01_projection", "02_scores", "03_scaling", "04_softmax", "05_weighted_sum"]
MODE = isolation.strongest_available() or "refused"   # refused: no wall here (not root, no user namespaces)
NEEDS_ISOLATION = pytest.mark.skipif(MODE == "refused", reason="no namespaces or uid separation on this "
                                     "machine (run as root, or allow user namespaces)")

# case -> (score of the hostile step, a phrase its first failed check's message must hold).
# Code that runs keeps 4.9 (vectorised) and 4.10 (no library softmax), a point each, whatever it
# returns: those judge how it computes, the other checks what (tests/checks/test_rules.py).
EXPECTED = {
    "base_exception": (0, "softmax(...) raised Escape: out of here"),
    "daemon": (10, None),
    "endless_recursion": (0, "raised RecursionError"),
    "exit_in_call": (0, "softmax(...) raised SystemExit: 0"),
    "forge_protocol": (0, "Your code's result could not be read back"),
    "forge_shape": (0, "Your code's result could not be read back: malformed array (malformed shape)"),
    "forge_load": (0, "Your code's result could not be read back: malformed reply to loading the file"),
    "disk_filler": (0, "softmax(...) wrote more than 128 MiB of files"),
    "shm_fill": (0, "softmax(...) wrote more than 128 MiB of files"),
    "ipc_leave": (10, None),
    "proc_snoop": (10, None),
    "read_installed_kit": (3, "42 of 42 values differ from the expected ones"),
    "fork_bomb": (10, None),
    "keyboard_interrupt": (0, "softmax(...) raised KeyboardInterrupt: ha"),
    "lazy_array": (0, "softmax(...) timed out after 2 s"),
    "list_result": (2, "should return a numpy array; it returned a list of 2 items"),
    "loop_at_import": (0, "04_softmax.py (loading it) timed out after 2 s"),
    "memory_hog": (0, "softmax(...) used more than 1 GiB of memory (the limit)"),
    # a shared mapping, which RLIMIT_DATA does not count: the memory cgroup's limit (RLIMIT_AS without one)
    "shm_hog": (0, "softmax(...) used more than 1 GiB of memory (the limit"),
    "nan_result": (3, "42 of 42 values are NaN or infinite where the expected values are finite"),
    "network": (10, None),
    "object_array": (2, "it returned a numpy.ndarray of dtype object"),
    "os_exit_at_import": (0, "your code exited (exit code 3) while running 04_softmax.py (loading it)"),
    "os_exit_in_call": (0, "your code exited (exit code 7) while running softmax(...)"),
    "patch_numpy": (3, "42 of 42 values differ from the expected ones"),
    # its 5 MB strings, made in every call, are memory the call holds: the memory check (4.9) sees them
    "print_flood": (9, "times the memory its results take"),
    "read_solutions": (3, "42 of 42 values differ from the expected ones"),
    "segfault": (0, "your code crashed (signal 11, SIGSEGV) while running softmax(...)"),
    "signal_grader": (10, None),
    "sleep_in_call": (0, "softmax(...) timed out after 2 s"),
    "sneaky_subclass": (2, "returned a submission.Always, a subclass of numpy.ndarray"),
    "stderr_warning": (10, None),
    "syntax_error": (0, "could not be read (SyntaxError), so nothing in it was graded"),
    "tamper_kit": (10, None),
    "wrong_dtype": (3, "has dtype float16; expected float64"),
}
# cases whose expected outcome holds only when the child is walled off (namespaces / own uid)
ISOLATION_CASES = {"daemon", "network", "read_solutions", "tamper_kit", "signal_grader", "disk_filler", "shm_fill",
                   "ipc_leave", "proc_snoop", "read_installed_kit"}
# The limit each case is about, reached whatever the machine's speed, and every other limit far
# above what honest work needs on a busy machine. The time-out cases loop or sleep for ever, so
# they reach a 2 s call limit whatever the load; they are graded on their own step alone, so that
# no honest step is held to 2 s. Every other case, those that mean to reach the memory or the disk
# limit included, gets conftest.ROOMY_SECONDS a call: honest calls take milliseconds (the load's
# clock starts when the child begins running the file, see protocol.checked_started), and filling
# 1 GiB takes a fraction of a second idle, seconds under load, so the time limit is never reached first.
TIME_CASES = {case for case, (_, phrase) in EXPECTED.items() if phrase and "timed out after 2 s" in phrase}
CALL_SECONDS = {case: 2 for case in TIME_CASES}
HONEST_SECONDS = ROOMY_SECONDS


def call_seconds(case):
    return CALL_SECONDS.get(case, HONEST_SECONDS)


def kit_fingerprint():
    h = hashlib.sha256()
    for folder in ("autograder/suites", "autograder/child", "solutions", "source", "samples", "assignments"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                h.update(str(path).encode() + path.read_bytes())
    return h.hexdigest()


def submission_with(tmp_path, case_file):
    sub = tmp_path / "sub"
    sub.mkdir()
    for stem in STEPS:
        shutil.copy(ROOT / "samples" / "unusual_style" / f"{stem}.py", sub)
    shutil.copy(case_file, sub / f"{case_file.name.split('.')[1]}.py")
    return sub


def grade(sub, results, call_seconds=HONEST_SECONDS, steps=STEPS):
    """Grade in a fresh grader process (`autograder grade`); returns the finished Popen, with `uids`:
    the uids of its children (in uid mode; the grader lists them in ATTENTION_KIT_UID_LOG)."""
    log = Path(results).with_name("uids.log")
    proc = subprocess.Popen([sys.executable, "-m", "autograder", "grade", str(sub), "--results", str(results),
                             "--steps", ",".join(steps), "--call-timeout", str(call_seconds), "--memory-gib", "1"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, ATTENTION_KIT_UID_LOG=str(log)))
    proc.output = proc.communicate(timeout=600)[0]
    proc.uids = {int(u) for u in log.read_text().split()} if log.exists() else None
    return proc


# One warm grader (grading.Grader, as a batch worker holds it) grades case after case: each line
# on stdin is a case, each "graded" line on stdout says its results.json is written. The CLI's
# `grade --results R --steps S --call-timeout T --memory-gib 1`, without a new Python, pytest
# session and zygote per case (issue 27: the corpus's 36 tests took 59 s with a process per case,
# 51 s so; most of what is left is the time-out cases' waiting).
CASE_BATCH = """\
import json, sys
from autograder.commands.cli import start_warm_children
from autograder.grading import run as grading
from autograder.reports import gradescope_json as report
from autograder.sandbox.limits import Limits
start_warm_children(("numpy",))
grader = grading.Grader()
for line in sys.stdin:
    sub, results, seconds, steps = json.loads(line)
    report.write_results(grader.grade(sub, Limits(call_seconds=seconds, memory_bytes=1 << 30), steps), results)
    print("graded", flush=True)
grader.close()
"""
CASE_SECONDS = 600          # one case's grading, far above what any needs on a busy machine


class WarmGrader:
    """grade(sub, results, call_seconds, steps) as the module-level grade() does, in one grader
    process shared by the cases of a test module; what it returns tells, for this case alone,
    `returncode` (0 once its results.json is written), `output` (the grader's stderr so far) and
    `uids` (the uids the grader gave this case's children). Between two cases the grader holds no
    child: whatever a test finds alive after a case, that case left."""

    def __init__(self, folder):
        self.log, self.stderr = Path(folder) / "uids.log", Path(folder) / "stderr.log"
        self.proc = subprocess.Popen([sys.executable, "-c", CASE_BATCH], cwd=ROOT, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr.open("w"), bufsize=0,
                                     env=dict(os.environ, ATTENTION_KIT_UID_LOG=str(self.log)))
        self.uids_seen, self.pending = 0, b""

    def grade(self, sub, results, call_seconds=HONEST_SECONDS, steps=STEPS):
        if self.proc.poll() is not None:        # an earlier case ended it: this one is not graded
            return SimpleNamespace(returncode=self.proc.returncode or -1, uids=None,
                                   output="the shared grader had ended:\n" + self.stderr.read_text()[-5000:])
        self.proc.stdin.write((json.dumps([str(sub), str(results), call_seconds, list(steps)]) + "\n").encode())
        graded = self._wait_for_graded()
        lines = self.log.read_text().split() if self.log.exists() else []
        uids, self.uids_seen = {int(u) for u in lines[self.uids_seen:]}, len(lines)
        return SimpleNamespace(returncode=0 if graded else (self.proc.poll() or -1),
                               output=self.stderr.read_text()[-5000:], uids=uids if self.log.exists() else None)

    def _wait_for_graded(self):
        """True once the grader says "graded"; False if it ended, or took CASE_SECONDS (killed)."""
        while b"graded\n" not in self.pending:
            ready, _, _ = select.select([self.proc.stdout], [], [], CASE_SECONDS)
            chunk = os.read(self.proc.stdout.fileno(), 4096) if ready else b""
            if not chunk:
                self.proc.kill()
                return False
            self.pending += chunk
        self.pending = self.pending.split(b"graded\n", 1)[1]
        return True

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=120)


class Listener:
    """A loopback listener on the ports the `network` case tries; counts connections."""

    def __init__(self):
        self.socks, self.accepted = [], 0
        for port in range(40000, 40100):
            try:
                s = socket.socket()
                s.bind(("127.0.0.1", port))
                s.listen()
                s.settimeout(0.2)
                self.socks.append(s)
                break
            except OSError:
                continue
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.is_set():
            for s in self.socks:
                try:
                    conn, _ = s.accept()
                    self.accepted += 1
                    conn.close()
                except OSError:
                    pass

    def close(self):
        self.stop.set()
        self.thread.join()
        for s in self.socks:
            s.close()


def live_child_processes(uids=None):
    """Live processes left by children whose uid is in `uids` (in uid mode: those a grading gave
    out, see grade()), else by any child (uid from BASE_UID up, or a runner's command line)."""
    left = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue                      # already dead, waiting to be reaped
            uid = os.stat(f"/proc/{entry}").st_uid
            if uids is not None and MODE == "uid":
                if uid in uids:
                    left.append(int(entry))
            elif uid >= isolation.BASE_UID or b"attention-kit-child" in Path(f"/proc/{entry}/cmdline").read_bytes():
                left.append(int(entry))
        except OSError:
            pass
    return left


def ipc_objects():
    """The machine's System V IPC objects and POSIX queues (keys and names), as the host sees them."""
    found = set()
    for kind in ("shm", "msg", "sem"):
        try:
            found |= {(kind, line.split()[0]) for line in open(f"/proc/sysvipc/{kind}").read().splitlines()[1:]}
        except OSError:
            pass
    if os.path.isdir("/dev/mqueue"):
        found |= {("mq", name) for name in os.listdir("/dev/mqueue")}
    return found


IPC_BEFORE = ipc_objects()


def leftover_files():
    return [p for p in ("/tmp/attention-kit-leak", "/dev/shm/attention-kit-leak") if os.path.lexists(p)]


def leftover_cgroups(uids):
    if uids is None:
        return []
    base = isolation._cgroup_base()          # the grader runs in this process's cgroup, and makes them there
    return [] if base is None else [uid for uid in uids if os.path.exists(f"{base[1]}/attention-kit-{uid}")]


# ------------------------------------------------------------------ the corpus against a step of the second assignment
# Every attack again, in modern_attention's step 5: the file is the attack, then the step's correct
# code, then tests/hostile/bridges/05_kv_cache.py, which moves the attack into the student's KVCache
# (each append(k, v) calls the attack's softmax, and returns what it returned in this step's terms).
# The cache is the object of the student's class that the grader's requests leave in the child: a
# cache on its own (5.2), forward chunk by chunk through one (5.4-5.8, 5.12, 5.13). The attacks
# that look for the step's reference and suite look for this step's (NEW_STEP_NAMES), and a
# reference they found would give them the right answer.
NEW_STEP = "05_kv_cache"
NEW_STEP_NAMES = {"solutions/step04_softmax.py": "solutions/modern_attention/step05_kv_cache.py",
                  "solutions.step04_softmax": "solutions.modern_attention.step05_kv_cache",
                  "step04_softmax": "step05_kv_cache",
                  'ns["softmax"](x, axis)': "_correct_softmax(x, axis)"}
APPEND = "KVCache().append(k, v)"
# case -> (score of step 5, a phrase its first failed check's message must hold). Checks that never
# touch the cache keep their points whatever append does, once the file loads: 5.1 (the module's
# parameters, 1) and 5.3 (forward without a cache, 1.5); 5.7 (complexity) and 5.8 (api), a point
# each, judge how the code computes, so an append that returns (wrong values) keeps them too.
NEW_EXPECTED = {
    "base_exception": (2.5, f"{APPEND} raised Escape: out of here"),
    "daemon": (10, None),
    "disk_filler": (2.5, f"{APPEND} wrote more than 128 MiB of files"),
    "endless_recursion": (2.5, f"{APPEND} raised RecursionError"),
    "exit_in_call": (2.5, f"{APPEND} raised SystemExit: 0"),
    "forge_load": (0, "Your code's result could not be read back: malformed reply to loading the file"),
    "forge_protocol": (2.5, "Your code's result could not be read back"),
    # 5.3 kept: the child that forged is not asked again (the real reply behind the forged one
    # would have been read as 5.3's)
    "forge_shape": (2.5, "Your code's result could not be read back: malformed array (malformed shape)"),
    "fork_bomb": (10, None),
    "ipc_leave": (10, None),
    "keyboard_interrupt": (2.5, f"{APPEND} raised KeyboardInterrupt: ha"),
    "lazy_array": (2.5, f"{APPEND} timed out after 2 s"),
    "list_result": (2.5, "k_all should return a torch tensor; it returned a list of 2 items"),
    "loop_at_import": (0, "05_kv_cache.py (loading it) timed out after 2 s"),
    "memory_hog": (2.5, f"{APPEND} used more than 1 GiB of memory (the limit)"),
    "nan_result": (4.5, "144 of 144 values are NaN or infinite where the expected values are finite"),
    "network": (10, None),
    "object_array": (2.5, "it returned a numpy.ndarray of dtype object"),
    "os_exit_at_import": (0, "your code exited (exit code 3) while running 05_kv_cache.py (loading it)"),
    "os_exit_in_call": (2.5, f"your code exited (exit code 7) while running {APPEND}"),
    "patch_numpy": (4.5, "144 of 144 values differ from the expected ones"),
    "print_flood": (10, None),
    "proc_snoop": (10, None),
    "read_installed_kit": (4.5, "144 of 144 values differ from the expected ones"),
    "read_solutions": (4.5, "144 of 144 values differ from the expected ones"),
    "segfault": (2.5, f"your code crashed (signal 11, SIGSEGV) while running {APPEND}"),
    "shm_fill": (2.5, f"{APPEND} wrote more than 128 MiB of files"),
    "shm_hog": (2.5, f"{APPEND} used more than 1 GiB of memory (the limit"),
    "signal_grader": (10, None),
    "sleep_in_call": (2.5, f"{APPEND} timed out after 2 s"),
    # compared in the grader: a tensor subclass that claims equality is its values, zeros
    "sneaky_subclass": (4.5, "144 of 144 values differ from the expected ones"),
    "stderr_warning": (10, None),
    "syntax_error": (0, "could not be read (SyntaxError), so nothing in it was graded"),
    "tamper_kit": (10, None),
    "wrong_dtype": (2.5, "k_all has dtype float16; expected float64"),
    # the step's own attacks (tests/hostile/*.05_kv_cache.py), on what the runner does with the
    # student's cache: len() of it, encoding what append returned, dropping it
    "cache_len_lies": (2.5, f"{APPEND} raised OverflowError"),
    "cache_del_exit": (2.5, f"your code exited (exit code 0) while running {APPEND}"),
}


def correct_kv_cache():
    """Step 5's correct code: the reference's, without its docstring (which names the reference)."""
    text = (ROOT / "solutions" / "modern_attention" / "step05_kv_cache.py").read_text()
    return text.split('"""', 2)[2]


def new_step_variant(case_file):
    """The attack `case_file` as a 05_kv_cache.py: one written for this step comes after the step's
    correct code (and redefines what it attacks); one written for 04_softmax goes through the bridge."""
    text = case_file.read_text()
    if case_file.name.endswith(f".{NEW_STEP}.py"):
        return correct_kv_cache() + "\n\n" + text
    for old, new in NEW_STEP_NAMES.items():
        text = text.replace(old, new)
    return "\n\n".join([text, correct_kv_cache(), (CORPUS / "bridges" / "05_kv_cache.py").read_text()])


# One warm grader (the batch worker's, grading.Grader) grades an honest step 5, every attack, and the
# honest one again: the batch goes on through all of them, and grades the honest one as before.
NEW_STEP_BATCH = """\
import json, sys
from autograder.commands.cli import start_warm_children
from autograder.grading import run as grading
from autograder.reports import gradescope_json as report
from autograder.sandbox.limits import Limits
start_warm_children()
grader, out = grading.Grader(), {}
for arg in sys.argv[2:]:
    name, sub, seconds = arg.split(":")
    graded = grader.grade(sub, Limits(call_seconds=float(seconds), memory_bytes=1 << 30), [sys.argv[1]])
    out[name] = report.gradescope(graded)
print(json.dumps(out))
"""
