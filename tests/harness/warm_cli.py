"""`python -m autograder grade ...` run warm: one process per test worker runs command lines one
after another through the command line's own code (autograder.commands.entry.run), with the
same output on stdout and stderr, the same exit code and the same files (issue 27).

A fresh `grade` process of a whole assignment costs some 3 s of CPU: its interpreter, its
pytest session and its `import torch`, and its zygotes' (numpy, torch). Here those are paid once
per worker, and a grading costs what its checks and its step children cost (some 0.9 s). The
graded corpus (conftest's `graded`) and the tests that read what `grade` writes, not how its
process starts or ends, go through it; a test about the process itself (its zygotes, its
isolation level, its refusals, Ctrl-C) starts the real command (conftest.run_grader).

The server's zygotes start before its first command line, with its own stdout and stderr (the
log file), never a command's: a command's output files are only its own. A command line is run
warm only in the environment the server was started in (a test that changed os.environ gets a
fresh process, conftest.run_grader), and from the repository's root, as run_grader runs it.
"""
import json
import os
import select
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

SERVER = r'''
import json, os, sys
from autograder.sandbox import zygote
zygote.start_unless_disabled()          # before any command: the zygotes' stdout and stderr are this process's
from autograder.commands import entry
replies = os.fdopen(int(sys.argv[1]), "w")
for line in sys.stdin:
    argv, out, err = json.loads(line)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(out, "wb") as o, open(err, "wb") as e:
        os.dup2(o.fileno(), 1)
        os.dup2(e.fileno(), 2)
        try:
            code = entry.run(argv)
        except SystemExit as exc:       # argparse's own exits, as `python -m autograder` ends with them
            code = exc.code if isinstance(exc.code, int) else 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
    replies.write(json.dumps(code) + "\n")
    replies.flush()
'''

TIMEOUT = 900       # as run_grader's: far above any grading on a busy machine
# Set in a test worker's environment by what runs in it, not by the tests, and no different for a
# command line whether it runs warm or fresh (seen in a full run, where they sent every later
# command line of that worker to a fresh process):
NOT_THE_TESTS = {
    "PYTEST_CURRENT_TEST",          # pytest: the running test's name
    "KMP_DUPLICATE_LIB_OK",         # threadpoolctl, once it has looked at the math libraries
    # the command line sets these itself to 1 (entry.run), in a fresh process as in the warm one; a
    # test that runs the kit's code in the worker sets them in the worker's environment
    "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
    # Dask's nanny, for the workers it spawns (a LocalCluster in test_batch's Dask path): malloc's
    # trim threshold, a fixed hash seed (no check depends on hashing: every check is
    # deterministic), its process title's parent
    "MALLOC_TRIM_THRESHOLD_", "PYTHONHASHSEED", "__DASK_PARENT_PID",
}


def fresh(argv):
    """(exit code, stdout + stderr) of `python -m autograder *argv` in a fresh process, from ROOT."""
    proc = subprocess.run([sys.executable, "-m", "autograder", *map(str, argv)], cwd=ROOT, capture_output=True,
                          text=True, timeout=TIMEOUT)
    return proc.returncode, proc.stdout + proc.stderr


def environment():
    return {k: v for k, v in os.environ.items() if k not in NOT_THE_TESTS}


class WarmCli:
    """run(argv) -> (exit code, stdout + stderr), as `python -m autograder *argv` from ROOT."""

    def __init__(self, folder):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.env = environment()
        self.count = self.fresh = 0       # command lines run warm, and in a fresh process
        self.lock = threading.Lock()      # one command line at a time (a test may grade from two threads)
        read, write = os.pipe()
        self.log = open(self.folder / "server.log", "wb")
        self.proc = subprocess.Popen([sys.executable, "-c", SERVER, str(write)], cwd=ROOT, stdin=subprocess.PIPE,
                                     stdout=self.log, stderr=self.log, pass_fds=(write,), text=True)
        os.close(write)
        self.replies = os.fdopen(read, "r")

    def usable(self):
        """Whether a command line asked for now runs as it would in a fresh process: the same
        environment as when the server started, and the server alive."""
        return self.why_not() is None

    def why_not(self):
        """None when usable, else why not (the server's end, or the variables that changed)."""
        if self.proc.poll() is not None:
            return f"the warm process ended ({self.proc.returncode})"
        now = environment()
        changed = sorted(k for k in set(now) | set(self.env) if now.get(k) != self.env.get(k))
        return f"the environment changed since it started: {', '.join(changed)}" if changed else None

    def run(self, argv):
        """(exit code, stdout + stderr) of `python -m autograder *argv`: warm where usable(), else
        in a fresh process (self.fresh counts those)."""
        if not self.usable():
            self.fresh += 1
            return fresh(argv)
        with self.lock:
            return self._run_warm(argv)

    def _run_warm(self, argv):
        self.count += 1
        out, err = self.folder / f"{self.count}.out", self.folder / f"{self.count}.err"
        self.proc.stdin.write(json.dumps([[str(a) for a in argv], str(out), str(err)]) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.replies], [], [], TIMEOUT)
        line = self.replies.readline() if ready else ""
        if not line:
            self.proc.kill()
            raise AssertionError(f"the warm `autograder` process gave no answer to {argv} "
                                 f"({'ended' if ready else 'timed out'}):\n{self.log_tail()}")
        return json.loads(line), out.read_text() + err.read_text()

    def log_tail(self):
        self.log.flush()
        return (self.folder / "server.log").read_text(errors="replace")[-3000:]

    def close(self):
        end(self.proc)
        self.replies.close()
        self.log.close()


def end(proc, grace=60):
    """End a server that reads its requests from stdin (its loop ends with its input), killed
    after `grace` seconds; also the grading harness's (tests/harness/grade_many.py)."""
    if proc.poll() is None:
        proc.stdin.close()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
    proc.wait()
