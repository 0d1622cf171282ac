"""Grade a whole class: `python -m autograder grade-all ROOT --results-dir OUT [--csv F] [--jobs N]`.

- Finding work: a folder per student, one zip file per student (.zip in any case; read in memory
  with limits: a zip is untrusted), or nbgrader's `submitted/<student>/<assignment>/` when ROOT
  is a course (nbgrader_base: decided by what a student cannot create). Every entry is accounted
  for (survey): graded, or scored 0 with the reason (a link, a stray file, two entries of one
  student), or, hidden, listed as left out. OUT/<safe_name>/results.json is one-to-one with the
  students' exact names, whatever their script, case or punctuation (safe_text.file_name).
- A submission travels as plain data, {relative path: bytes} of its step files, so the same task
  runs in a local worker or on a Dask worker on another machine; the worker writes the files into
  a scratch folder of its own and grades them there with `grading.grade`, exactly as `grade` does.
- Warm workers: each worker process grades many submissions, so pytest, the suites and the
  references load once; its step children fork from a zygote (zygote.py) that imported numpy and
  torch once. Isolation and limits per child are the same as for `grade`.
- Results as data: a worker answers with the Report's data (grading/run.py `to_data()`: every
  message unrendered, misconception ids apart); this process writes OUT/<key>/graded.json (that
  data, reports/stored.py) and renders results.json from it in the language asked for.
- Resumable: graded.json records a fingerprint of the submission's files and of the grader (its
  code, suites, references and limits; not the language, which decides no grade); a rerun skips a
  student whose fingerprint is unchanged and rewrites results.json from graded.json, in this
  run's language. Each result is written atomically as soon as it arrives, so an interruption
  loses none that finished.
"""
import contextlib
import csv
import hashlib
import io
import json
import os
import shutil
import stat
import sys
import tempfile
import threading
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath

from autograder import __version__, atomic, contract, i18n, submitted_files, safe_text
from autograder.i18n import _, render

KIT_ROOT = Path(__file__).resolve().parents[2]
MAX_FILE_BYTES = submitted_files.MAX_FILE_BYTES               # one step file
MAX_SUBMISSION_BYTES = submitted_files.MAX_SUBMISSION_BYTES   # all of one submission's step files
MAX_ZIP_MEMBERS = 2000            # entries looked at in one zip


class BadSubmission(Exception):
    """The submission cannot be read (bad zip, too large): the student scores 0, the batch goes on."""


@dataclass
class Submission:
    student: str                   # the student's name exactly as ROOT spells it (folder, or zip without .zip)
    source: str                    # the folder or zip it came from
    key: str = ""                  # its name under OUT and in the feedback pages: safe_name(), one-to-one
    problem: str = None            # why it cannot be graded (a link, two entries, not a submission), else None


# ------------------------------------------------------------------ finding submissions
ARCHIVE_SUFFIX = ".zip"            # recognised however it is written: .zip, .ZIP, .Zip
NBGRADER_FILES = ("nbgrader_config.py", "gradebook.db")
NBGRADER_FOLDERS = {"submitted", "source", "release", "autograded", "feedback"}


def safe_name(student, hashed=False):
    """The student's name as a file name (OUT/<name>/results.json), one-to-one by construction:
    a plain name (ASCII letters, digits, . _ @ + -) as it is, any other a readable part, `~` and a
    hash of the exact name (safe_text.file_name). `hashed` for a plain name that another student's
    differs from only in case."""
    return safe_text.file_name(student, hashed)


def nbgrader_base(root):
    """ROOT/submitted when ROOT is an nbgrader course, else None. Decided by what a student
    cannot create: ROOT holds nbgrader's own files (nbgrader_config.py or gradebook.db, plain
    files), or nothing but nbgrader's course folders; a student's folder that happens to be
    called `submitted`, beside the other students, does not make ROOT a course."""
    root = Path(root)
    sub = root / "submitted"
    if sub.is_symlink() or not sub.is_dir():
        return None
    if any((root / f).is_file() and not (root / f).is_symlink() for f in NBGRADER_FILES):
        return sub
    others = [e for e in root.iterdir() if not e.name.startswith(".") and e.name not in NBGRADER_FOLDERS]
    return sub if not others else None


def _student_of(entry, st):
    """(student name, kind) of one entry: kind is "folder", "zip", "link" or "other"."""
    name = entry.name
    is_zip = name.casefold().endswith(ARCHIVE_SUFFIX) and len(name) > len(ARCHIVE_SUFFIX)
    if stat.S_ISLNK(st.st_mode):
        return (name[:-len(ARCHIVE_SUFFIX)] if is_zip else name), "link"
    if stat.S_ISDIR(st.st_mode):
        return name, "folder"
    if stat.S_ISREG(st.st_mode) and is_zip:
        return name[:-len(ARCHIVE_SUFFIX)], "zip"
    return name, "other"


def survey(root):
    """(submissions sorted by student, [(entry, reason)] of the entries left out): every entry
    of ROOT (or of ROOT/submitted/ in an nbgrader course) is one or the other. Hidden entries
    (.DS_Store, .ipynb_checkpoints) are left out, with the reason; any other entry gets a
    submission: a folder or .zip (any case) to grade, or one with the `problem` that stops it
    (a symbolic link, which is never followed; two entries of one student; a file that is not a
    .zip), which scores 0 with that reason."""
    root = Path(root)
    base = nbgrader_base(root) or root
    by_student, left_out = {}, []
    for entry in sorted(base.iterdir(), key=lambda e: e.name):
        try:
            st = entry.lstat()
        except OSError as exc:          # removed while we look: say so
            left_out.append((entry.name, f"{type(exc).__name__}: {exc.strerror}"))
            continue
        if entry.name.startswith("."):
            left_out.append((entry.name, "hidden"))
            continue
        student, kind = _student_of(entry, st)
        by_student.setdefault(student, []).append((entry, kind))
    # plain names that differ only in case would share one folder on a case-insensitive disk
    folded = {}
    for student in by_student:
        if safe_text.is_plain(student):
            folded.setdefault(student.casefold(), []).append(student)
    subs = []
    for student, entries in sorted(by_student.items()):
        key = safe_name(student, hashed=len(folded.get(student.casefold(), ())) > 1)
        subs.append(_submission(student, key, entries))
    keys = {}
    for sub in subs:      # cannot happen (a 40-bit hash would have to collide): refused, never silent
        other = keys.setdefault(sub.key.casefold(), sub)
        if other is not sub:
            raise RuntimeError(f"two students map to one results folder: {other.student!a} and {sub.student!a}")
    return subs, left_out


def _submission(student, key, entries):
    if len(entries) > 1:
        names = ", ".join(e.name + ("/" if kind == "folder" else "") for e, kind in entries)
        return Submission(student, str(entries[0][0]), key,
                          _("more than one submission for this student ({entries}): keep one and grade again",
                            entries=names))
    entry, kind = entries[0]
    if kind == "link":
        return Submission(student, str(entry), key,
                          _("{name} is a symbolic link; links are not followed, so it was not graded",
                            name=entry.name))
    if kind == "other":
        return Submission(student, str(entry), key,
                          _("{name} is not a submission: only folders and .zip archives are graded",
                            name=entry.name))
    if kind == "zip":
        return Submission(student, str(entry), key)
    # nbgrader: submitted/<student>/<assignment>/, for whichever registered assignment it is; a
    # student folder holding two assignments' folders is graded whole (and refused as a mix, by name)
    inner = [entry / name for name in contract.ASSIGNMENTS if (entry / name).is_symlink() or (entry / name).is_dir()]
    if len(inner) == 1 and inner[0].is_symlink():
        return Submission(student, str(inner[0]), key,
                          _("{name} is a symbolic link; links are not followed, so it was not graded",
                            name=f"{entry.name}/{inner[0].name}"))
    return Submission(student, str(inner[0] if len(inner) == 1 else entry), key)


def discover(root):
    """The submissions under `root`, sorted by student (those that cannot be graded included,
    with their `problem`); see survey() for the entries left out."""
    return survey(root)[0]


# ------------------------------------------------------------------ reading one submission
def read_files(source):
    """{relative posix path: bytes} of the step files in a folder or zip, within the limits."""
    return (_read_zip(source) if source.lower().endswith(".zip") and os.path.isfile(source)
            and not os.path.islink(source) else _read_folder(source))


class Files(dict):
    """{relative posix path: bytes} of a submission's step files, and what was refused, as data
    (a plain dict with two attributes: it pickles to a local worker or a Dask one unchanged)."""

    def __init__(self, files=(), refused=None, notes=()):
        super().__init__(files)
        self.refused = dict(refused or {})      # step stem -> why its file was not taken
        self.notes = list(notes)                # what the search passed over


def _read_folder(folder):
    """The step files of a student's folder, read as data by submitted_files (links, FIFOs and
    devices refused with a message, never followed or opened; caps on depth, entries and bytes)."""
    try:
        found = submitted_files.find(folder)
    except submitted_files.Unreadable as exc:
        raise BadSubmission(_message(exc)) from None
    return Files({f.relative: f.data for f in found.files.values()}, found.refused, found.notes)


def _read_zip(path):
    """Step files from a zip (of any assignment), without trusting its headers: names are checked
    (no absolute paths, no '..', no links) and sizes are counted while decompressing (a zip bomb
    stops at the limit); of what is left, each step's file is the one submitted_files.choose takes,
    the rule of a folder's search (the one intake: what is graded is what similarity compares)."""
    files, total = {}, 0
    try:
        with zipfile.ZipFile(path) as zf:
            for n, info in enumerate(zf.infolist()):
                if n >= MAX_ZIP_MEMBERS:
                    raise BadSubmission(_("the zip holds too many entries"))
                name = PurePosixPath(info.filename.replace("\\", "/"))
                if (info.is_dir() or contract.step_of_file(name.name) is None or name.is_absolute()
                        or ".." in name.parts or submitted_files.skipped_path(name.as_posix())
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
    found = submitted_files.choose(files)
    return Files({f.relative: f.data for f in found.files.values()}, found.refused, found.notes)


# ------------------------------------------------------------------ fingerprints (resume)
_grader_hash = None
# what decides a score or what results.json holds: derived, not listed (grading_files)
GRADING_ROOTS = ("grading/run.py", "commands/batch.py")      # the run of one submission, from a folder or from plain data
# not locale/: the translations decide no grade (results are kept as messages, rendered when written)
GRADING_DATA = ("suites", "child", "checks/forbidden_apis.toml")


def grading_files():
    """The kit's files that decide a grade: every module of the package that grading.py or
    batch.py (the worker's side) or a hidden suite imports, followed import by import through the
    package, plus the suites, the child's code, the forbidden-API list and the references. Derived
    from the code, so a new module is counted without anyone listing it."""
    import ast
    here = KIT_ROOT / "autograder"
    todo = [here / m for m in GRADING_ROOTS] + sorted((here / "suites").glob("*.py"))
    for assignment in contract.REGISTRY.values():     # a registered assignment's own suites, and its folder
        todo += sorted(Path(assignment.suites).glob("*.py"))
        if assignment.home is not None:                # (its reference beside them)
            todo += sorted(p for p in Path(assignment.home).rglob("*.py") if "__pycache__" not in p.parts)
    seen = set()
    while todo:
        path = todo.pop()
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        package = path.parent
        for node in ast.walk(ast.parse(path.read_bytes())):
            names = []
            if isinstance(node, ast.ImportFrom):
                base = (node.module or "").split(".")
                if node.level:                          # from . import x / from .x import y
                    root = package
                    for _level in range(node.level - 1):
                        root = root.parent
                    parts = [p for p in base if p]
                elif base[0] == "autograder":           # from autograder.x import y
                    root, parts = here, base[1:]
                else:
                    continue
                names = [parts + [a.name] for a in node.names] + [parts]
            elif isinstance(node, ast.Import):
                root = here
                names = [a.name.split(".")[1:] for a in node.names if a.name.split(".")[0] == "autograder"]
            for parts in names:
                target = root.joinpath(*parts) if parts else root
                todo += [target.with_suffix(".py"), target / "__init__.py"]
    files = set(seen)
    for name in GRADING_DATA:
        target = here / name
        files |= set(target.rglob("*")) if target.is_dir() else {target}
    files |= set((KIT_ROOT / "solutions").rglob("*"))
    return sorted(p for p in files if p.is_file() and p.suffix in (".py", ".ini", ".json", ".toml")
                  and "__pycache__" not in p.parts)


def grader_fingerprint(limits):
    """Hash of everything that decides a grade besides the student's files (grading_files: the
    hidden suites, the references, the grading code) and the limits."""
    global _grader_hash
    if _grader_hash is None:
        h = hashlib.sha256(__version__.encode())
        for path in grading_files():
            name = path.relative_to(KIT_ROOT) if path.is_relative_to(KIT_ROOT) else path   # a registered folder elsewhere
            h.update(str(name).encode() + b"\0" + path.read_bytes())
        _grader_hash = h.hexdigest()
    return hashlib.sha256((_grader_hash + json.dumps(asdict(limits), sort_keys=True, default=str)).encode()).hexdigest()


def fingerprint(files, limits):
    """Hash of the submission's files and the grader (not the language: graded.json holds messages
    unrendered, so another language is written from it without grading)."""
    h = hashlib.sha256(grader_fingerprint(limits).encode())
    for name in sorted(files):
        h.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    return h.hexdigest()


def results_path(out_dir, key):
    """OUT/<key>/results.json, `key` a submission's safe_name (one path component, always)."""
    if not key or key in (".", "..") or "/" in key or "\0" in key:
        raise ValueError(f"not a results folder name: {key!a}")
    return Path(out_dir) / key / "results.json"


def previous_result(out_dir, sub, fp):
    """The stored results (reports/stored.py's Stored) when they were made for this student from the
    same files by the same grader, else None."""
    from autograder.reports import stored
    found = stored.read(results_path(out_dir, sub.key).parent)
    if found is None or found.fingerprint != fp or found.student != sub.student:
        return None
    if not found.authentic:       # not signed by this grader (stored.py): whatever it says, grade again
        print(render(_("{student}: the stored results were not written by this grader (their signature does "
                       "not match): graded again", student=safe_text.for_terminal(sub.student, newlines=False))),
              file=sys.stderr)
        return None
    return found


# ------------------------------------------------------------------ the task (runs in a worker)
_worker_lock = threading.Lock()   # a Dask worker runs tasks in threads; pytest and the zygote want one at a time


_grader = None                    # this worker's warm grader (grading.Grader): one pytest session
_frameworks = None                # the zygotes this worker starts (LocalPool's initializer); None: all
_grading = False                  # a submission is in hand (grade_data): SIGTERM stops it


def _stop(_signum, _frame):
    """SIGTERM, sent by an interrupted client (LocalPool.close(now=True)): the submission in hand
    is dropped at once, through the grader's own clean-up (its step children and their processes
    killed, its scratch folder removed); an idle worker just ends."""
    if _grading:
        raise KeyboardInterrupt
    os._exit(0)


def warm_up(frameworks=None):
    """Worker initializer: start the zygotes now, so their `import torch` overlaps the grader's
    imports, and the worker's pytest session, which collects the suites once for all its tasks.
    `frameworks`: the zygotes to start, those of the class's step files (frameworks_of_files; a
    torch zygote costs some 1.5 s of CPU, for nothing in a class that hands in numpy steps only);
    remembered for the worker's later calls; None, all of them (a Dask worker). A step of another
    framework is still graded: its child starts cold, and its zygote with the second (zygote.warm_for).
    Ctrl-C is the client's to handle (it says what finished): a worker ignores it, instead of
    printing its own traceback, and the client stops it (SIGTERM, `_stop`)."""
    global _grader, _frameworks
    if frameworks is not None:
        _frameworks = tuple(frameworks)
    import signal
    import threading
    if threading.current_thread() is threading.main_thread():    # a Dask worker runs tasks in a thread of its own
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, _stop)
    if os.environ.get("ATTENTION_KIT_WARM", "1") != "0":
        from autograder.sandbox import zygote
        zygote.start(zygote.FRAMEWORKS if _frameworks is None else _frameworks)
    if _grader is None or not _grader.alive:
        from autograder.grading import run as grading
        _grader = grading.Grader()


def grade_data(student, files, limits):
    """Grade one submission given as {relative path: bytes}; returns its Report as data
    (`Report.to_data()`: JSON-safe, messages unrendered). Runs in a worker process, local pool or
    Dask: what comes back is plain data, in no language (the client renders it)."""
    with _worker_lock:
        warm_up()
        with in_hand():
            return _grade_in_scratch(student, files, limits)


@contextlib.contextmanager
def in_hand():
    """A submission is being graded in this worker: SIGTERM (`_stop`) stops it, through the
    clean-up of the code inside (step children killed, scratch removed), and the worker ends
    there: no one waits for its answer."""
    global _grading
    _grading = True
    try:
        yield
    except KeyboardInterrupt:
        os._exit(130)
    finally:
        _grading = False


def _grade_in_scratch(student, files, limits):
    """grade_data's work: the files written into a scratch folder of their own, graded, removed."""
    scratch = tempfile.mkdtemp(prefix="attention-kit-batch-")
    try:
        folder = Path(scratch) / student
        folder.mkdir()
        for name, data in files.items():
            target = folder.joinpath(*PurePosixPath(name).parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        found = submitted_files.find(folder)
        for stem, why in getattr(files, "refused", {}).items():     # refused where the files were read
            if stem not in found.files:
                found.refused[stem] = why
        found.notes = _merged_notes(found.notes, getattr(files, "notes", []))
        return _grader.grade(str(folder), limits, found=found).to_data()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _merged_notes(*lists):
    """The file search's notes of both searches (where the files were read, and here), each once, in
    the order of their English text."""
    unique = {render(n, "en"): n for notes in lists for n in notes}
    return [unique[k] for k in sorted(unique)]


def grade_files(student, files, limits, lang="en"):
    """Gradescope results (a dict) for one submission given as {relative path: bytes}, its messages
    in `lang`: grade_data's answer rendered as grade-all writes it (scripts/results_snapshot.py)."""
    from autograder.grading.run import Report
    from autograder.reports import gradescope_json
    data = grade_data(student, files, limits)
    with i18n.language(lang):
        return gradescope_json.gradescope(Report.from_data(json.loads(json.dumps(data))))


def error_results(message):
    """Results for a submission that could not be graded at all (it scores 0 and says why), in the
    current language (reports/gradescope_json.py holds the one skeleton of a results file)."""
    from autograder.reports import gradescope_json
    return gradescope_json.error_results(message)


# ------------------------------------------------------------------ executors: local pool or Dask
WORKER_STOP_SECONDS = 60    # a stopped worker kills its children and ends: this is far above that on a busy machine
WAKE_SECONDS = 0.5          # the client's main thread wakes this often while it waits (LocalPool.as_completed)


class LocalPool:
    """Warm worker processes on this machine (spawned: they share no memory with this process)."""

    def __init__(self, jobs, frameworks=None):
        """`frameworks`: the zygotes each worker starts (warm_up); None, all of them."""
        import concurrent.futures
        import multiprocessing
        self._cf = concurrent.futures
        self.pool = concurrent.futures.ProcessPoolExecutor(
            max_workers=jobs, mp_context=multiprocessing.get_context("spawn"), initializer=warm_up,
            initargs=(frameworks,))

    def submit(self, fn, *args):
        return self.pool.submit(fn, *args)

    def as_completed(self, futures):
        """As concurrent.futures.as_completed, never blocked for long. A Ctrl-C that the kernel hands
        to another thread of this process (the pool's manager thread, a queue's feeder) is only
        marked pending for the main thread, whose handler (KeyboardInterrupt) runs when it next runs
        Python: blocked without a timeout, it would wait for the submission in hand to end."""
        pending = set(futures)
        while pending:
            done, pending = self._cf.wait(pending, timeout=WAKE_SECONDS, return_when=self._cf.FIRST_COMPLETED)
            yield from done

    def close(self, now=False):
        """Wait for the workers to end; `now` (the client was interrupted): what is queued is
        dropped and what is in hand stopped (SIGTERM: each worker kills its student's processes,
        then ends), and this returns once they have ended, however long their steps would run."""
        # concurrent.futures has no public way to stop a running task before Python 3.14
        # (terminate_workers): its workers are its private _processes, read before shutdown clears them
        workers = list((self.pool._processes or {}).values()) if now else []
        manager = self.pool._executor_manager_thread        # private as well, and cleared by shutdown
        self.pool.shutdown(wait=not now, cancel_futures=True)
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.join(WORKER_STOP_SECONDS)
        # At exit, concurrent.futures wakes the pool's manager thread without a lock, while that
        # thread may be closing its wake-up pipe: "OSError: [Errno 9] Bad file descriptor" and a
        # traceback after an interrupted batch's one line (seen in a busy run; CPython gh-125451,
        # mended in later Pythons than 3.11). Once the thread has ended there is nothing to wake.
        if manager is not None:
            manager.join(WORKER_STOP_SECONDS)


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

    def close(self, now=False):
        """The client closed; on the cluster, a task in hand runs to its end (Dask cannot stop a
        running task's thread), its result unread."""
        self.client.close()


# ------------------------------------------------------------------ the batch


def grade_all(root, out_dir, limits, jobs=None, scheduler=None, csv_path=None, progress=None, lang=None,
              only=None):
    """Grade every submission under `root` into `out_dir`/<key>/results.json (key: safe_name of
    the student's name), the messages in `lang` (default: the current language; graded.json beside
    it keeps them unrendered, reports/stored.py); returns
    {student: (outcome, results)} where outcome is "graded", "skipped" or "error". Every entry
    under `root` is accounted for: it has an outcome (an entry that cannot be graded scores 0 with
    the reason, in its results, the CSV's error column and the progress output), or it is a
    hidden entry, listed with the reason in the progress output and its summary. `only`: the
    names of students to grade again even if unchanged (`grade-all --student`); the others as
    in any rerun, so the gradebook stays whole."""
    from autograder.commands.progress import Progress
    from autograder.grading.run import Report
    from autograder.reports.stored import Stored
    lang = lang or i18n.get_language()
    subs, left_out = survey(root)
    if progress is None:
        progress = Progress(len(subs))
    progress.total = len(subs)
    for name, reason in left_out:
        progress.left_out(name, reason)
    outcomes, pending = {}, {}
    todo = []
    for sub in subs:
        try:
            if sub.problem:
                raise BadSubmission(sub.problem)
            files = read_files(sub.source)
            _store_code(out_dir, sub, files)
        except BadSubmission as exc:
            why = _message(exc)
            outcomes[sub.student] = ("error", _store(out_dir, sub, Stored(sub.student, error=why), lang))
            progress.update(sub.student, "error", reason=render(why, lang))
            continue
        fp = fingerprint(files, limits)
        old = None if only and sub.student in only else previous_result(out_dir, sub, fp)
        if old is not None:
            # graded before, from the same files by the same grader: written again in this run's language
            outcomes[sub.student] = ("skipped", _store(out_dir, sub, old, lang, cached=True))
            progress.update(sub.student, "skipped")
        else:
            todo.append((sub, files, fp))
    if todo:
        pool = DaskPool(scheduler) if scheduler else LocalPool(jobs or os.cpu_count() or 1,
                                                               frameworks_of_files(files for _s, files, _f in todo))
        interrupted = False
        try:
            for sub, files, fp in todo:
                # the key, not the name, names the worker's scratch folder: always one safe component
                pending[pool.submit(grade_data, sub.key, files, limits)] = (sub, fp)
            for future in pool.as_completed(list(pending)):
                sub, fp = pending.pop(future)
                reason = None
                try:
                    graded, outcome = Stored(sub.student, fp, Report.from_data(future.result())), "graded"
                except Exception as exc:   # the grader failed on this one: record it, go on
                    reason = _("grading failed: {error}", error=f"{type(exc).__name__}: {exc}")
                    graded, outcome = Stored(sub.student, error=reason), "error"
                results = _store(out_dir, sub, graded, lang)
                outcomes[sub.student] = (outcome, results)
                unreadable = unreadable_files(results)
                progress.update(sub.student, outcome, results["score"], results["extra_data"]["max_score"],
                                reason=render(reason, lang) if reason is not None
                                else render(_("unreadable: {files}", files=unreadable), lang) if unreadable else None)
        except KeyboardInterrupt:
            interrupted = True         # Ctrl-C: stop now, not when the submissions in hand are done
            raise
        finally:
            pool.close(now=interrupted)
    if csv_path:
        write_csv(csv_path, {s: r for s, (_, r) in sorted(outcomes.items())})
    return outcomes


def frameworks_of_files(file_sets):
    """The frameworks ("numpy", "torch") of the step files named in `file_sets` ({relative path:
    bytes} each, as read_files gives them), in the zygotes' order: the zygotes the workers start."""
    names = contract.step_file_names()
    found = {names[PurePosixPath(path).name].framework for files in file_sets for path in files
             if PurePosixPath(path).name in names}
    from autograder.sandbox import zygote
    return tuple(f for f in zygote.FRAMEWORKS if f in found)


def _message(exc):
    """The message an exception was raised with (a message stays one, unrendered)."""
    return exc.args[0] if len(exc.args) == 1 else str(exc)


def _store_code(out_dir, sub, files):
    """OUT/<key>/code.json: the student's own code per step, for the class report's similarity
    (similarity.store_code; the files as read here, never run). It never stops the batch."""
    try:
        from autograder.reports import similarity
        similarity.store_code(results_path(out_dir, sub.key).parent, files)
    except Exception as exc:      # noqa: BLE001 (a report's input, not a grade: say so and go on)
        print(f"attention-kit: the code of {safe_text.for_terminal(sub.student, newlines=False)} was not "
              f"stored for the class report ({type(exc).__name__})", file=sys.stderr)


def _store(out_dir, sub, graded, lang, cached=False):
    """Write one student's graded.json (unless `cached`: it is the one read back) and results.json,
    rendered from it in `lang`, atomically; returns the results. A result without a fingerprint (it
    could not be graded) is tried again next time. results.json's extra_data.batch holds the
    student's exact name (the CSV shows it), the entry it came from and its results folder."""
    from autograder.reports import stored
    path = results_path(out_dir, sub.key)
    if not cached:
        stored.write(path.parent, graded)
    with i18n.language(lang):
        results = graded.results()
    results["extra_data"]["batch"] = {"student": sub.student, "source": sub.source, "results": sub.key,
                                      "fingerprint": graded.fingerprint}
    text = json.dumps(results, indent=2) + "\n"
    if not atomic.same_content(path, text.encode()):      # a rerun in the same language changes nothing
        atomic.write_text(path, text)
    return results


def split_by_assignment(results_by_student):
    """{assignment: {student: results}}, in the registry's order: each student under the assignment
    their files were graded as. A submission that could not be graded (no assignment known) goes
    under every assignment of the class (the default one when none was graded), so that each
    gradebook lists it with its reason."""
    from autograder.reports.gradescope_json import results_assignment
    known = {s: results_assignment(r) for s, r in results_by_student.items()}
    present = [a for a in contract.REGISTRY if a in known.values()] or [contract.DEFAULT_ASSIGNMENT]
    return {a: {s: r for s, r in results_by_student.items() if known[s] in (a, None)} for a in present}


def gradebook_paths(path, outcomes):
    """The gradebooks grade_all wrote for its `outcomes` ({student: (outcome, results)})."""
    return list(csv_paths(path, list(split_by_assignment({s: r for s, (_o, r) in outcomes.items()}))).values())


def csv_paths(path, assignments):
    """{assignment: its gradebook's path}: `path` itself for a class of one assignment; for a class
    that mixes assignments, one file per assignment beside it, `<stem>.<assignment><suffix>`."""
    path = Path(path)
    if len(assignments) == 1:
        return {assignments[0]: path}
    return {a: path.with_name(f"{path.stem}.{a}{path.suffix or '.csv'}") for a in assignments}


def unreadable_files(results):
    """The step files of a graded submission that could not be read (a notebook that is not JSON,
    bytes that are not UTF-8, a syntax error: their checks carry the `unreadable` tag), as text."""
    steps = results["extra_data"].get("steps", {})
    stems = sorted({t["tags"][0].split(":", 1)[1] for t in results.get("tests", [])
                    if "unreadable" in t.get("tags", ()) and t["tags"] and t["tags"][0].startswith("step:")})
    return ", ".join(str((steps.get(stem) or {}).get("file") or stem) for stem in stems)


def write_csv(path, results_by_student):
    """The gradebook: one row per student, a column per step of their assignment, the total and
    the maximum. A class that mixes assignments gets one gradebook per assignment (csv_paths),
    each with that assignment's steps as its columns. The student's name and the error are written
    for a spreadsheet (safe_text.for_csv_cell): a cell that would start a formula gets a leading
    quote, control characters are shown as escapes. Returns the paths written."""
    groups = split_by_assignment(results_by_student)
    paths = csv_paths(path, list(groups))
    for assignment, rows in groups.items():
        atomic.write_text(paths[assignment], _csv_text(assignment, rows))
    return list(paths.values())


def _csv_text(assignment, results_by_student):
    stems = contract.REGISTRY[assignment].stems
    top = contract.REGISTRY[assignment].max_score
    buf = io.StringIO()
    buf.write("\ufeff")         # UTF-8's byte order mark: how Excel knows the file is UTF-8 (names in any script)
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["student"] + stems + ["total", "max_score", "error"])
    for student, results in results_by_student.items():
        steps = results["extra_data"].get("steps", {})
        w.writerow([safe_text.for_csv_cell(student)]
                   + [f"{steps[s]['score']:g}" if s in steps else "0" for s in stems]
                   + [f"{results['score']:g}", f"{(results['extra_data'].get('max_score') or top):g}",
                      safe_text.for_csv_cell(results["extra_data"].get("error", "")
                                             or (str(_("unreadable: {files}", files=unreadable_files(results)))
                                                 if unreadable_files(results) else ""))])
    return buf.getvalue()
