"""The graded corpus: each submission graded once per run with the same options, whichever test
file and whichever xdist worker asks first (issue 27). conftest's `graded` fixture reads it.

Workers share it through files: the store is a folder of the run's temporary root (under xdist,
the parent of every worker's basetemp). A worker claims a submission by creating its folder
(mkdir is atomic: one worker wins), grades it into that folder and writes `done.json` last (by
rename: complete or absent). Another worker that wants it waits for `done.json` while the
claimer lives; if the claimer died first, it says so instead of waiting for ever. Each read is
a fresh copy of the results (a test may change what it is given).
"""
import hashlib
import json
import os
import time


def store(tmp_path_factory):
    """The run's corpus folder: shared by the workers of one run, new for every run."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "graded-corpus"
    root.mkdir(exist_ok=True)
    return root


class Corpus:
    def __init__(self, root, grade):
        """grade(submission, folder, *options) -> (exit code, output, results): writes in folder."""
        self.root, self.grade = root, grade

    def key(self, submission, options):
        return hashlib.sha256(json.dumps([str(submission), list(options)]).encode()).hexdigest()[:20]

    def get(self, submission, *options):
        folder = self.root / self.key(submission, options)
        done = folder / "done.json"
        try:
            folder.mkdir()
        except FileExistsError:
            return self._wait(folder, done)
        (folder / "claim").write_text(str(os.getpid()))
        try:
            code, output, results = self.grade(submission, folder, *options)
            entry = {"code": code, "output": output, "results": results}
        except BaseException as exc:
            entry = {"error": f"grading {submission} {options} failed in pid {os.getpid()}: {exc!r}"}
            raise
        finally:
            tmp = folder / "done.json.partial"
            tmp.write_text(json.dumps(entry if "entry" in locals() else {"error": "interrupted"}))
            os.replace(tmp, done)
        return self._read(done)

    def folder(self, submission, *options):
        """The folder that `grade` wrote for (submission, options), once complete: written here, or
        by whichever worker asked first (a build that is not a grading: an nbgrader release)."""
        self.get(submission, *options)
        return self.root / self.key(submission, options)

    def _read(self, done):
        entry = json.loads(done.read_text())
        if "error" in entry:
            raise RuntimeError(entry["error"])
        return entry["code"], entry["output"], entry["results"]

    def _wait(self, folder, done):
        while not done.exists():
            claim = folder / "claim"
            if claim.exists() and claim.read_text().strip():
                try:
                    os.kill(int(claim.read_text()), 0)
                except ProcessLookupError:
                    if not done.exists():
                        raise RuntimeError(f"the worker that claimed {folder.name} died before grading it")
            time.sleep(0.1)
        return self._read(done)
