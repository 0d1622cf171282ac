"""The floor of grading: the same checks on the same submissions, the student's code called in-process
(a benchmark-only adapter, never a grading mode: it runs only the benchmark's own generated samples).

    .venv/bin/python benchmarks/floor.py ASSIGNMENT SUBMISSION... [--jobs J]

Each submission is graded through `grading.run.grade` with warm `Suites`, exactly as a batch worker
does, but every step's `StepChild` is replaced by `InProcessStepChild`: the child's own runner
(`autograder/child/runner.py`, a fresh copy of the module per step, so each step has its own
namespace) is loaded here and its `handle(request)` answers every request the suites send. What is
left out is the process: no fork, no wall (isolation "process": no probe, no uid, no cgroup), no
pipes and no deadlines. What stays: the suites, the references, pytest, the requests built by
`sandbox.protocol`, the wire's encoding (one in-memory `wire.pack`/`wire.unpack` of each request and
each reply, so that the values are the very ones a pipe carries), and every reply checked by
`sandbox.protocol` before use.

The seam is a monkeypatch of `grading.run.StepChild` in this process (the name `Job` builds its
children with); nothing in the package changes. With --jobs J the submissions are split among J
worker processes, as `grade-all --jobs J` splits them, so that the floor of a batch is measured on
the same cores. Prints one JSON object: {submission: "score/max"} (the benchmark checks that the
floor gives every submission the grade the kit gives it, before it reports a ratio).
"""
import argparse
import importlib.util
import io
import itertools
import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from autograder.child import wire  # noqa: E402
from autograder.grading import run  # noqa: E402
from autograder.sandbox import protocol  # noqa: E402
from autograder.sandbox.limits import Limits  # noqa: E402
from autograder.sandbox.problems import MissingStep  # noqa: E402
from autograder.sandbox.step_child import StepChild  # noqa: E402

RUNNER = ROOT / "autograder" / "child" / "runner.py"
_COPIES = itertools.count()


def fresh_runner():
    """A new copy of the child's runner module: its own student namespace (`STUDENT`) and warm-up
    set (`_MEASURED`), as a fresh child has. Its `wire` and `meters` are imported once per process
    (as a zygote's fork shares them)."""
    spec = importlib.util.spec_from_file_location(f"_floor_runner_{next(_COPIES)}", RUNNER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def across_the_wire(message):
    """`message` as the other end of a pipe reads it (tuples become lists, keys strings, bytes stay)."""
    data = wire.pack(message)
    body, attached = wire.HEADER.unpack(data[:wire.HEADER.size])
    start = wire.HEADER.size
    return wire.unpack(data[start:start + body], data[start + body:start + body + attached])


_printing = threading.local()      # .into: where this thread's prints go while it runs student code


class ThreadOutput:
    """sys.stdout and sys.stderr of the floor's process: a thread running a step's student code
    (its load, or a request) writes into that step's buffer, anything else to the real stream.
    `contextlib.redirect_stdout` swaps one stream for the whole process, so two steps loading
    side by side would mix their prints."""

    def __init__(self, real):
        self.real = real

    def write(self, text):
        return (getattr(_printing, "into", None) or self.real).write(text)

    def flush(self):
        (getattr(_printing, "into", None) or self.real).flush()

    def __getattr__(self, name):
        return getattr(self.real, name)


class InProcessStepChild(StepChild):
    """A StepChild whose "child" is a copy of runner.py in this process (see the module's doc).

    As a real child's, its load starts at `start()` and runs beside the other steps' loads and
    pytest's collection (here in a thread of its own: a student's slow import, a `sleep` in the
    benchmark's slow kind, is waited for once per submission, not once per step); the step's
    first request waits for it."""
    runner = None
    loading = None
    printed_here = ""

    def start(self):
        if self.source is None or self.load_problem is not None or self.runner is not None:
            return
        self.runner = fresh_runner()
        self.loaded = {}
        self.loading = threading.Thread(target=self._load_in_thread, daemon=True)
        self.loading.start()

    def _load_in_thread(self):
        try:
            with tempfile.TemporaryDirectory(prefix="attention-kit-floor-") as scratch:
                path = os.path.join(scratch, "submission" + self.source.suffix)
                with open(path, "wb") as f:
                    f.write(self.source.data)
                self.loaded["reply"] = self._handle(protocol.load_request(path, self.display))
        except BaseException as exc:  # noqa: BLE001 - re-raised on the grading thread
            self.loaded["error"] = exc

    def _ensure_child(self):
        if self.load_problem is not None:
            raise self.load_problem
        if self.source is None:
            raise MissingStep(self.step)
        if self.runner is None:
            self.start()
        if self.loading is not None:
            self.loading.join()
            self.loading = None
            if "error" in self.loaded:
                raise self.loaded["error"]
            self.load_reply = protocol.checked_load_reply(self.loaded["reply"])
        return self.runner

    def _handle(self, message):
        printed, before = io.StringIO(), getattr(_printing, "into", None)
        _printing.into = printed
        try:
            reply = self.runner.handle(across_the_wire(message))
        finally:
            _printing.into = before
        self.printed_here += printed.getvalue()[:self.limits.output_bytes]
        return across_the_wire(reply)

    def request(self, message, what):
        self._ensure_child()
        return protocol.checked_answer(self._handle(message), what, self.limits, self.display, self.load_reply)

    def _retire(self):
        if self.loading is not None:
            self.loading.join()
            self.loading = None
        self.runner = None

    def printed(self):
        return self.printed_here

    @property
    def isolation_info(self):
        return None


def submissions_of(course, assignment):
    """course/submitted/<student>/<assignment>, sorted (the benchmark's layout)."""
    return sorted(str(p) for p in Path(course, "submitted").glob(f"*/{assignment}") if p.is_dir())


def grade_in_process(assignment, submissions):
    """{submission: "score/max"}, each graded in this process with the floor's children."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False     # as runner.serve does in a torch child
    torch.backends.cudnn.allow_tf32 = False
    run.StepChild = InProcessStepChild
    sys.stdout, sys.stderr = ThreadOutput(sys.stdout), ThreadOutput(sys.stderr)
    limits = Limits(isolation="process")
    grades = {}
    with run.Suites(run.graded_steps(assignment)) as suites:
        for sub in submissions:
            report = run.grade(sub, limits, suites=suites)
            grades[sub] = f"{report.score:g}/{report.max_score:g}"
    return grades


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("assignment")
    ap.add_argument("submissions", nargs="+")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (default %(default)s: this one)")
    args = ap.parse_args()
    if args.jobs <= 1:
        print(json.dumps(grade_in_process(args.assignment, args.submissions)))
        return
    shares = [args.submissions[i::args.jobs] for i in range(args.jobs)]
    workers = [subprocess.Popen([sys.executable, __file__, args.assignment, *share], stdout=subprocess.PIPE, text=True)
               for share in shares if share]
    grades = {}
    for w in workers:
        out, _ = w.communicate()
        if w.returncode != 0:
            raise SystemExit(f"a floor worker failed (exit {w.returncode})")
        grades.update(json.loads(out))
    print(json.dumps(grades))


if __name__ == "__main__":
    main()
