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
import subprocess
import sys
from pathlib import Path

from harness.line_server import ROOT, LineServer

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


def fresh(argv):
    """(exit code, stdout + stderr) of `python -m autograder *argv` in a fresh process, from ROOT."""
    proc = subprocess.run([sys.executable, "-m", "autograder", *map(str, argv)], cwd=ROOT, capture_output=True,
                          text=True, timeout=TIMEOUT)
    return proc.returncode, proc.stdout + proc.stderr


class WarmCli:
    """run(argv) -> (exit code, stdout + stderr), as `python -m autograder *argv` from ROOT."""

    def __init__(self, folder):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.count = self.fresh = 0       # command lines run warm, and in a fresh process
        self.server = LineServer(SERVER, self.folder / "server.log", "the warm `autograder` process")

    def usable(self):
        """Whether a command line asked for now runs as it would in a fresh process: the same
        environment as when the server started, and the server alive."""
        return self.server.usable()

    def why_not(self):
        """None when usable, else why not (the server's end, or the variables that changed)."""
        return self.server.why_not()

    def run(self, argv):
        """(exit code, stdout + stderr) of `python -m autograder *argv`: warm where usable(), else
        in a fresh process (self.fresh counts those)."""
        if not self.usable():
            self.fresh += 1
            return fresh(argv)
        with self.server.lock:           # the count names the output files: one command line at a time
            self.count += 1
            out, err = self.folder / f"{self.count}.out", self.folder / f"{self.count}.err"
        code, _ = self.server.ask([[str(a) for a in argv], str(out), str(err)], TIMEOUT)
        return code, out.read_text() + err.read_text()

    def close(self):
        self.server.close()
