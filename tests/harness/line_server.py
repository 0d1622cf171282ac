"""A warm test process that answers one JSON request per line: the client side shared by the warm
command line (warm_cli.WarmCli) and the grading harness (grade_many), issue 27.

The process runs `python -c CODE FD` from the repository's root: it reads one request per line on
stdin and writes one reply per line on the pipe FD (its stdout and stderr go to a log file, so
that nothing it prints can be taken for a reply). Its loop ends with its input: close() closes
stdin, waits, and kills it after a grace period. It is usable while it is alive and the test
worker's environment is the one it started in (the kit reads its settings from the environment,
so a test that changed one must not be served by a process that read the old value).
"""
import json
import os
import select
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

# Set in a test worker's environment by what runs in it, not by the tests, and no different for a
# request whether a warm process or a fresh one serves it (seen in a full run, where they sent every
# later request of that worker to a fresh process):
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


def environment():
    """The worker's environment as the kit's code would read it (less what NOT_THE_TESTS names)."""
    return {k: v for k, v in os.environ.items() if k not in NOT_THE_TESTS}


class LineServer:
    """One warm process running `code`; ask(request) -> its reply, both plain JSON."""

    def __init__(self, code, log_path, name):
        self.name = name                  # for messages: "the warm `autograder` process", ...
        self.env = environment()
        self.lock = threading.Lock()      # one request at a time (a test may ask from two threads)
        self.log_path = Path(log_path)
        # the process appends to its log; this side reads it through its own handle (no shared offset)
        with open(self.log_path, "ab") as log:
            read, write = os.pipe()
            self.proc = subprocess.Popen([sys.executable, "-c", code, str(write)], cwd=ROOT, text=True,
                                         stdin=subprocess.PIPE, stdout=log, stderr=log, pass_fds=(write,))
            os.close(write)
        self.replies = os.fdopen(read, "r")
        self.log = open(self.log_path, "rb")

    def why_not(self):
        """None while usable, else why not (the process's end, or the variables that changed)."""
        if self.proc.poll() is not None:
            return f"{self.name} ended ({self.proc.returncode})"
        now = environment()
        changed = sorted(k for k in set(now) | set(self.env) if now.get(k) != self.env.get(k))
        return f"the environment changed since {self.name} started: {', '.join(changed)}" if changed else None

    def usable(self):
        return self.why_not() is None

    def ask(self, request, timeout):
        """(reply, what the process logged while answering). No reply in `timeout` seconds, or
        the process ended: it is killed and AssertionError carries the log's tail."""
        with self.lock:
            self.log.seek(0, os.SEEK_END)
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            ready, _, _ = select.select([self.replies], [], [], timeout)
            line = self.replies.readline() if ready else ""
            logged = self.log.read().decode("utf-8", "replace")
        if not line:
            self.close(grace=0)
            raise AssertionError(f"{self.name} gave no answer to {request!r:.300} "
                                 f"({'ended' if ready else 'timed out'}):\n{logged[-3000:]}")
        return json.loads(line), logged

    def close(self, grace=60):
        """End the process (its loop ends with its input), killed after `grace` seconds."""
        if self.log.closed:
            return
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.proc.wait()
        self.replies.close()
        self.log.close()
