"""Grade a whole class: `python -m autograder grade-all ROOT --results-dir OUT [--csv F] [--jobs N]`.

- Finding work: nbgrader's `submitted/<student>/self_attention/`, a folder per student, or one
  zip file per student (read in memory with limits: a zip is untrusted).
- A submission travels as plain data, {relative path: bytes} of its step files, so the same task
  runs in a local worker or on a Dask worker on another machine; the worker writes the files into
  a scratch folder of its own and grades them there with `grading.grade`, exactly as `grade` does.
- Warm workers: each worker process grades many submissions, so pytest, the suites and the
  references load once; its step children fork from a zygote (zygote.py) that imported numpy and
  torch once. Isolation and limits per child are the same as for `grade`.
- Resumable: each results file records a fingerprint of the submission's files and of the grader
  (its code, suites, references and limits); a rerun skips a student whose fingerprint is
  unchanged. Each result is written atomically as soon as it arrives, so an interruption loses
  none that finished.
"""
import csv
import hashlib
import io
import json
import os
import re
import shutil
import stat
import tempfile
import threading
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath

from . import __version__, contract, i18n
from .i18n import _

KIT_ROOT = Path(__file__).resolve().parent.parent
STEP_FILE_NAMES = {name for s in contract.STEPS for name in s.files}
MAX_FILE_BYTES = 8 << 20          # one step file (notebooks with outputs can be a few MB)
MAX_SUBMISSION_BYTES = 32 << 20   # all of one submission's step files
MAX_ZIP_MEMBERS = 2000            # entries looked at in one zip


class BadSubmission(Exception):
    """The submission cannot be read (bad zip, too large): the student scores 0, the batch goes on."""


@dataclass
class Submission:
    student: str
    source: str                    # the folder or zip it came from


# ------------------------------------------------------------------ finding submissions
def safe_name(student):
    """A student id usable as a folder name (never '..', never a path)."""
    name = re.sub(r"[^A-Za-z0-9._@+-]", "_", student).lstrip(".")
    return name[:100] or "_"


def discover(root):
    """The submissions under `root`, sorted by student."""
    root = Path(root)
    base = root / "submitted" if (root / "submitted").is_dir() else root
    found = {}
    for entry in sorted(base.iterdir()):
        if entry.name.startswith(".") or entry.is_symlink():
            continue
        if entry.is_dir():
            inner = entry / contract.ASSIGNMENT       # nbgrader: submitted/<student>/self_attention/
            found[safe_name(entry.name)] = Submission(safe_name(entry.name), str(inner if inner.is_dir() else entry))
        elif entry.suffix == ".zip":
            found.setdefault(safe_name(entry.stem), Submission(safe_name(entry.stem), str(entry)))
    return list(found.values())


# ------------------------------------------------------------------ reading one submission
def read_files(source):
    """{relative posix path: bytes} of the step files in a folder or zip, within the limits."""
    return _read_zip(source) if source.endswith(".zip") and os.path.isfile(source) else _read_folder(source)


def _read_folder(folder):
    files, total = {}, 0
    for dirpath, dirnames, filenames in os.walk(folder):     # does not follow links to folders
        dirnames[:] = sorted(d for d in dirnames if d != ".ipynb_checkpoints")
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if name not in STEP_FILE_NAMES or os.path.islink(path):
                continue
            size = os.path.getsize(path)
            total += size
            if size > MAX_FILE_BYTES or total > MAX_SUBMISSION_BYTES:
                raise BadSubmission(_("{file} makes the submission larger than the limit", file=name))
            with open(path, "rb") as f:
                files[Path(path).relative_to(folder).as_posix()] = f.read()
    return files


def _read_zip(path):
    """Step files from a zip, without trusting its headers: names are checked (no absolute paths,
    no '..', no links) and sizes are counted while decompressing (a zip bomb stops at the limit)."""
    files, total = {}, 0
    try:
        with zipfile.ZipFile(path) as zf:
            for n, info in enumerate(zf.infolist()):
                if n >= MAX_ZIP_MEMBERS:
                    raise BadSubmission(_("the zip holds too many entries"))
                name = PurePosixPath(info.filename.replace("\\", "/"))
                if (info.is_dir() or name.name not in STEP_FILE_NAMES or name.is_absolute()
                        or ".." in name.parts or ".ipynb_checkpoints" in name.parts or "__MACOSX" in name.parts
                        or stat.S_ISLNK(info.external_attr >> 16)):
                    continue
                data = bytearray()
                with zf.open(info) as member:
                    while chunk := member.read(1 << 16):
                        data += chunk
                        total += len(chunk)
                        if len(data) > MAX_FILE_BYTES or total > MAX_SUBMISSION_BYTES:
                            raise BadSubmission(_("{file} in the zip is larger than the limit", file=name.name))
                files[name.as_posix()] = bytes(data)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, RuntimeError, NotImplementedError) as exc:
        raise BadSubmission(_("the zip could not be read ({error})", error=f"{type(exc).__name__}: {exc}")) from None
    return files


# ------------------------------------------------------------------ fingerprints (resume)
_grader_hash = None
# the modules whose code decides a score or what results.json holds
GRADING_MODULES = ("checks.py", "contract.py", "grading.py", "inputs.py", "isolation.py", "misconceptions.py",
                   "report.py", "sandbox.py", "tolerances.py", "variants.py", "zygote.py", "__init__.py",
                   "gradients.py", "complexity.py", "forbidden_apis.toml",
                   "i18n.py", "locale")       # the messages' translations: the results hold them


def grader_fingerprint(limits):
    """Hash of everything that decides a grade besides the student's files: the hidden suites,
    the references, the grading code (not the command line or the other report formats), the limits."""
    global _grader_hash
    if _grader_hash is None:
        h = hashlib.sha256(__version__.encode())
        here = KIT_ROOT / "autograder"
        for folder in (here / "suites", here / "child", KIT_ROOT / "solutions", *(here / m for m in GRADING_MODULES)):
            for path in sorted(folder.rglob("*") if folder.is_dir() else [folder]):
                if path.is_file() and path.suffix in (".py", ".ini", ".json", ".toml") and "__pycache__" not in path.parts:
                    h.update(str(path.relative_to(KIT_ROOT)).encode() + b"\0" + path.read_bytes())
        _grader_hash = h.hexdigest()
    return hashlib.sha256((_grader_hash + json.dumps(asdict(limits), sort_keys=True, default=str)).encode()).hexdigest()


def fingerprint(files, limits, lang="en"):
    # the language too: the results hold the messages, so a rerun in another language regrades
    h = hashlib.sha256((grader_fingerprint(limits) + lang).encode())
    for name in sorted(files):
        h.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    return h.hexdigest()


def results_path(out_dir, student):
    return Path(out_dir) / student / "results.json"


def previous_result(out_dir, student, fp):
    """The stored results when they were made from the same files by the same grader, else None."""
    try:
        data = json.loads(results_path(out_dir, student).read_text())
        return data if data.get("extra_data", {}).get("batch", {}).get("fingerprint") == fp else None
    except (OSError, ValueError, AttributeError):
        return None


def write_atomically(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".results-", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2)
        f.write("\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


# ------------------------------------------------------------------ the task (runs in a worker)
_worker_lock = threading.Lock()   # a Dask worker runs tasks in threads; pytest and the zygote want one at a time


_grader = None                    # this worker's warm grader (grading.Grader): one pytest session


def warm_up():
    """Worker initializer: start the zygote now, so its `import torch` overlaps the grader's
    imports, and the worker's pytest session, which collects the suites once for all its tasks."""
    global _grader
    if os.environ.get("ATTENTION_KIT_WARM", "1") != "0":
        from . import zygote
        zygote.start()
    if _grader is None or not _grader.alive:
        from . import grading
        _grader = grading.Grader()


def grade_files(student, files, limits, lang="en"):
    """Grade one submission given as {relative path: bytes}, its messages in `lang`; returns
    Gradescope results (a dict). Runs in a worker process: local pool or Dask (the language
    travels with each task, as a worker on another machine knows nothing of the command line)."""
    from . import report
    with _worker_lock, i18n.language(lang):
        warm_up()
        scratch = tempfile.mkdtemp(prefix="attention-kit-batch-")
        try:
            folder = Path(scratch) / student
            folder.mkdir()
            for name, data in files.items():
                target = folder.joinpath(*PurePosixPath(name).parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            return report.gradescope(_grader.grade(str(folder), limits))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


def error_results(message):
    """Results for a submission that could not be graded at all (it scores 0 and says why)."""
    return {"score": 0, "output": message, "visibility": "visible", "stdout_visibility": "hidden", "tests": [],
            "extra_data": {"max_score": sum(s.points for s in contract.STEPS), "grader": f"attention-kit {__version__}",
                           "steps": {}, "error": message}}


# ------------------------------------------------------------------ executors: local pool or Dask
class LocalPool:
    """Warm worker processes on this machine (spawned: they share no memory with this process)."""

    def __init__(self, jobs):
        import concurrent.futures
        import multiprocessing
        self._cf = concurrent.futures
        self.pool = concurrent.futures.ProcessPoolExecutor(
            max_workers=jobs, mp_context=multiprocessing.get_context("spawn"), initializer=warm_up)

    def submit(self, fn, *args):
        return self.pool.submit(fn, *args)

    def as_completed(self, futures):
        return self._cf.as_completed(futures)

    def close(self):
        self.pool.shutdown(wait=True, cancel_futures=True)


class DaskPool:
    """The same tasks on a Dask distributed cluster (`--scheduler tcp://host:8786`)."""

    def __init__(self, address):
        from distributed import Client
        self.client = Client(address)

    def submit(self, fn, *args):
        return self.client.submit(fn, *args, pure=False)

    def as_completed(self, futures):
        from distributed import as_completed
        return as_completed(futures)

    def close(self):
        self.client.close()


# ------------------------------------------------------------------ the batch
STEP_STEMS = [s.stem for s in contract.STEPS]


def grade_all(root, out_dir, limits, jobs=None, scheduler=None, csv_path=None, progress=None, lang=None):
    """Grade every submission under `root` into `out_dir`/<student>/results.json, the messages in
    `lang` (default: the current language); returns {student: (outcome, results)} where outcome
    is "graded", "skipped" or "error"."""
    from .progress import Progress
    lang = lang or i18n.get_language()
    subs = discover(root)
    progress = progress or Progress(len(subs))
    outcomes, pending = {}, {}
    todo = []
    for sub in subs:
        try:
            files = read_files(sub.source)
        except BadSubmission as exc:
            outcomes[sub.student] = ("error", _store(out_dir, sub, None, error_results(str(exc))))
            progress.update(sub.student, "error")
            continue
        fp = fingerprint(files, limits, lang)
        old = previous_result(out_dir, sub.student, fp)
        if old is not None:
            outcomes[sub.student] = ("skipped", old)
            progress.update(sub.student, "skipped")
        else:
            todo.append((sub, files, fp))
    if todo:
        pool = DaskPool(scheduler) if scheduler else LocalPool(jobs or os.cpu_count() or 1)
        try:
            for sub, files, fp in todo:
                pending[pool.submit(grade_files, sub.student, files, limits, lang)] = (sub, fp)
            for future in pool.as_completed(list(pending)):
                sub, fp = pending.pop(future)
                try:
                    results, outcome = future.result(), "graded"
                except Exception as exc:   # the grader failed on this one: record it, go on
                    results, outcome, fp = error_results(_("grading failed: {error}",
                                                           error=f"{type(exc).__name__}: {exc}")), "error", None
                outcomes[sub.student] = (outcome, _store(out_dir, sub, fp, results))
                progress.update(sub.student, outcome, results["score"], results["extra_data"]["max_score"])
        finally:
            pool.close()
    if csv_path:
        write_csv(csv_path, {s: r for s, (_, r) in sorted(outcomes.items())})
    return outcomes


def _store(out_dir, sub, fp, results):
    """Write one student's results atomically; a result without a fingerprint is regraded next time."""
    results.setdefault("extra_data", {})["batch"] = {"student": sub.student, "source": sub.source, "fingerprint": fp}
    write_atomically(results_path(out_dir, sub.student), results)
    return results


def write_csv(path, results_by_student):
    """The gradebook: one row per student, a column per step, the total and the maximum."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["student"] + STEP_STEMS + ["total", "max_score", "error"])
    for student, results in results_by_student.items():
        steps = results["extra_data"].get("steps", {})
        w.writerow([student] + [f"{steps[s]['score']:g}" if s in steps else "0" for s in STEP_STEMS]
                   + [f"{results['score']:g}", f"{results['extra_data']['max_score']:g}",
                      results["extra_data"].get("error", "")])
    tmp = Path(str(path) + ".tmp")
    tmp.write_text(buf.getvalue(), encoding="utf-8")
    os.replace(tmp, path)
