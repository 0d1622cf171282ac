"""Reading what a student handed in, as data: the trusted side's only way into a submission folder.

Whatever delivered it (a folder, a cloned repository, nbgrader's submitted/, an unpacked zip),
a submission may hold links, FIFOs, devices, sockets, huge files and trees nested thousands deep.
This module never follows a link, never opens anything but a regular file (opened with
O_NOFOLLOW | O_NONBLOCK, then checked with fstat on the open descriptor, so a file swapped for a
FIFO or a link between the look and the open is still refused), never reads more than a stated cap,
and walks iteratively with caps on depth, entries and bytes. What it refuses it says, in the
student's terms, per file; the rest of the submission is graded as usual.

    found = find(folder)      # Found: .files {stem: StepFile}, .refused {stem: message}, .notes [message]
    found = choose(files)     # the same choice among {relative path: bytes} already read (a zip's members)
    graded_code(step_file)    # the code the grader runs from a step file: what similarity compares

The one intake (issue 25): the grader, the batch workers, the class view's similarity and the
GitHub annotations all take a submission's step files from `find` or `choose` (one rule for which
file is a step's, the shallowest, a notebook before a .py at the same depth, never in one of
SKIPPED_FOLDERS, never deeper than MAX_DEPTH) and read a notebook's code through `graded_code`
(the cells the child runs, child/runner.py's rule, transformed as the child transforms them with
IPython's TransformerManager: `python_that_runs`; tests/e2e/test_assignment_matrix.py and
tests/sandbox/test_one_intake.py hold the two sides to agree).
"""
import ast
import errno
import json
import os
import stat
from collections import deque
from dataclasses import dataclass, field

from autograder import contract
from autograder.i18n import N_, _, render, translate

MAX_FILE_BYTES = 8 << 20          # one step file (notebooks with outputs can be a few MB)
MAX_SUBMISSION_BYTES = 32 << 20   # all of one submission's step files
MAX_DEPTH = 16                    # folders below the submission's root that are searched
MAX_ENTRIES = 20_000              # names looked at in one submission
SKIPPED_FOLDERS = {".ipynb_checkpoints", "__pycache__", ".git", "__MACOSX"}   # never a student's answer


class Unreadable(Exception):
    """A submission, or one of its files, that cannot be taken as data; str() says why."""


@dataclass
class StepFile:
    relative: str                 # posix path inside the submission, e.g. "work/04_softmax.ipynb"
    data: bytes

    @property
    def name(self):
        return self.relative.rsplit("/", 1)[-1]

    @property
    def suffix(self):
        return os.path.splitext(self.name)[1]


@dataclass
class Found:
    files: dict = field(default_factory=dict)     # step stem -> StepFile
    refused: dict = field(default_factory=dict)   # step stem -> why its file could not be taken
    notes: list = field(default_factory=list)     # what was passed over, for the report


def kind_of(mode):
    """A file type in words, for a refusal."""
    for test, words in ((stat.S_ISLNK, N_("a symbolic link")), (stat.S_ISFIFO, N_("a named pipe (FIFO)")),
                        (stat.S_ISSOCK, N_("a socket")), (stat.S_ISCHR, N_("a device")),
                        (stat.S_ISBLK, N_("a device")), (stat.S_ISDIR, N_("a folder"))):
        if test(mode):
            return translate(words)
    return translate(N_("not a regular file"))


def refusal(name, mode):
    if stat.S_ISLNK(mode):
        return _("{file} is a symbolic link: submit the file itself, not a link to it.", file=name)
    return _("{file} is {kind}, not a regular file: submit the file itself.", file=name, kind=kind_of(mode))


def read_regular(path, name, limit=MAX_FILE_BYTES, dir_fd=None):
    """The bytes of the regular file at `path` (relative to `dir_fd` when given), never following
    a link, never blocking on a FIFO, never reading past `limit`. Raises Unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):
            raise Unreadable(refusal(name, stat.S_IFLNK)) from None
        raise Unreadable(_("{file} could not be read ({error}).", file=name, error=exc.strerror)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Unreadable(refusal(name, st.st_mode))
        if st.st_size > limit:
            raise Unreadable(_("{file} is {size} MiB, over the limit of {limit} MiB for one file.",
                               file=name, size=f"{st.st_size / 2**20:.1f}", limit=f"{limit / 2**20:g}"))
        chunks, got = [], 0
        while True:                      # the size can lie (a file that grows): count what is read
            chunk = os.read(fd, min(1 << 20, limit + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
            if got > limit:
                raise Unreadable(_("{file} is over the limit of {limit} MiB for one file.",
                                   file=name, limit=f"{limit / 2**20:g}"))
        return b"".join(chunks)
    except OSError as exc:
        raise Unreadable(_("{file} could not be read ({error}).", file=name, error=exc.strerror)) from None
    finally:
        os.close(fd)


def find(submission):
    """The step files of a folder or of a single step file. The path given is the instructor's
    (it may be a link they made); everything below it is the student's and is treated as data.

    The shallowest file of a step wins; at the same depth a notebook wins over a .py.
    """
    found = Found()
    submission = os.fspath(submission)
    try:
        top = os.stat(submission)
    except OSError as exc:
        raise Unreadable(_("{file} could not be read ({error}).", file=submission, error=exc.strerror)) from None
    if stat.S_ISREG(top.st_mode):
        name = os.path.basename(submission)
        step = contract.step_for_stem(os.path.splitext(name)[0])
        if step and name in step.files:
            _take(found, step, name, submission, None)
        return found
    if not stat.S_ISDIR(top.st_mode):
        raise Unreadable(refusal(os.path.basename(submission), top.st_mode))
    best = {}                            # stem -> (depth, not a notebook, relative path, mode)
    entries, notes = 0, set()
    queue = deque([""])                  # folders to search, relative to the submission ("" is itself)
    while queue:                         # breadth first: a step's shallowest file is met first
        rel = queue.popleft()
        depth = rel.count("/")
        try:
            dir_fd = _open_folder(submission, rel)
        except OSError:
            continue
        try:
            names = []
            with os.scandir(dir_fd) as it:
                for entry in it:
                    entries += 1
                    if entries > MAX_ENTRIES:
                        notes.add(_("The submission holds more than {n} files and folders: only the first "
                                    "ones were searched.", n=MAX_ENTRIES))
                        queue.clear()
                        break
                    names.append(entry.name)
            for name in sorted(names):
                relative = f"{rel}{name}"
                try:
                    st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(st.st_mode):
                    if name in SKIPPED_FOLDERS:
                        pass
                    elif depth + 1 > MAX_DEPTH:
                        notes.add(_("Folders nested deeper than {n} levels were not searched.", n=MAX_DEPTH))
                    elif entries <= MAX_ENTRIES:
                        queue.append(relative + "/")
                    continue
                step = contract.step_of_file(name)        # of any registered assignment
                if step is None:
                    continue
                rank = (depth, not name.endswith(".ipynb"), relative)
                if step.stem in best and best[step.stem] <= rank:
                    continue
                best[step.stem] = rank
                found.files.pop(step.stem, None)
                found.refused.pop(step.stem, None)
                if stat.S_ISREG(st.st_mode):
                    _take(found, step, relative, name, dir_fd)
                else:
                    found.refused[step.stem] = refusal(relative, st.st_mode)
        finally:
            os.close(dir_fd)
    found.notes = sorted(notes, key=lambda note: render(note, "en"))      # messages: in the order of their English
    total = sum(len(f.data) for f in found.files.values())
    if total > MAX_SUBMISSION_BYTES:
        raise Unreadable(_("The submission's step files take {size} MiB together, over the limit of {limit} MiB.",
                           size=f"{total / 2**20:.1f}", limit=f"{MAX_SUBMISSION_BYTES / 2**20:g}"))
    return found


def _open_folder(submission, relative):
    """An fd for the folder `relative` below `submission`, opened one name at a time, never through a link."""
    fd = os.open(submission, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    for part in [p for p in relative.split("/") if p]:
        try:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
        finally:
            os.close(fd)
        fd = inner
    return fd


def _take(found, step, relative, path, dir_fd):
    try:
        found.files[step.stem] = StepFile(relative, read_regular(path, relative, dir_fd=dir_fd))
    except Unreadable as exc:
        found.refused[step.stem] = exc.args[0]          # its message, unrendered (autograder/i18n.py)


def skipped_path(relative):
    """Why `find` would never reach this path: a hidden or skipped folder on the way, or too deep."""
    parts = relative.split("/")
    folders = parts[:-1]
    return len(folders) > MAX_DEPTH or any(p in SKIPPED_FOLDERS or p in ("", ".", "..") for p in folders)


def choose(files, refused=None, notes=()):
    """A Found from {relative posix path: bytes} already read as data (a zip's members): the step
    files `find` would take from the same tree (shallowest, a notebook before a .py, never in a
    SKIPPED_FOLDERS folder, never deeper than MAX_DEPTH)."""
    found = Found(refused=dict(refused or {}), notes=list(notes))
    best = {}
    for relative in files:
        name = relative.rsplit("/", 1)[-1]
        step = contract.step_of_file(name)
        if step is None or skipped_path(relative):
            continue
        rank = (relative.count("/"), not name.endswith(".ipynb"), relative)
        if step.stem not in best or rank < best[step.stem]:
            best[step.stem] = rank
    for stem, (_depth, _nb, relative) in best.items():
        found.files[stem] = StepFile(relative, files[relative])
        found.refused.pop(stem, None)
    return found


# ------------------------------------------------------------------ the code the grader runs
def is_test_cell(cell):
    """A notebook cell the grader does not run: nbgrader's test cells (graded, not a solution),
    visible tests and demos. child/runner.py's _is_test_cell, which the child cannot import."""
    meta = cell.get("metadata") or {}
    meta = (meta.get("nbgrader") if isinstance(meta, dict) else None) or {}
    if not isinstance(meta, dict):          # a student's notebook may hold anything here
        meta = {}
    grade_id = str(meta.get("grade_id", ""))
    if meta.get("grade") and not meta.get("solution"):
        return True
    return grade_id.endswith("_tests") or grade_id.endswith("_demo")


def cell_source(cell):
    """A code cell's text as the child reads it (child/runner.py's _cell_source)."""
    src = cell.get("source", "")
    return "".join(str(x) for x in src) if isinstance(src, list) else str(src)


# ------------------------------------------------------------------ IPython, as the child runs it
# The child runs a notebook cell as IPython does: IPython's TransformerManager turns it into
# Python, and its `get_ipython()` runs the body of %time, %%time, %%capture and %prun as Python and
# nothing else of a magic, shell escape or help request (child/runner.py; tests hold the two sets
# equal). `python_that_runs` is that code on the trusted side, with the same transformer: what
# similarity compares is what the child runs, whatever the magics hide (`%time def f(): ...`
# defines f; a `%%writefile` cell's body is never run, so never compared).
RUN_LINE_MAGICS = {"time", "prun"}
RUN_CELL_MAGICS = {"time", "capture", "prun"}
# IPython's transformer tokenizes a whole cell once per escape it rewrites (up to 500 times): what
# one notebook may cost here, in (escape candidates + 1) x characters of each cell transformed. A
# notebook past it has its remaining cells compared as written: all their text, a superset of what
# runs, so nothing can hide behind the budget.
TRANSFORM_BUDGET = 2 << 20
MAX_MAGIC_DEPTH = 4
_TRANSFORMER = []


def ipython_code(source):
    """The Python IPython runs for one cell (the child's _ipython_code); the text unchanged when
    IPython cannot read it (the child then gives Python's own SyntaxError) or is not installed."""
    if not _TRANSFORMER:
        try:
            from IPython.core.inputtransformer2 import TransformerManager
            _TRANSFORMER.append(TransformerManager())
        except ImportError:
            _TRANSFORMER.append(None)
    if _TRANSFORMER[0] is None:
        return source
    try:
        return _TRANSFORMER[0].transform_cell(source)
    except Exception:
        return source


def transform_cost(source):
    """What transforming `source` may cost, in the units of TRANSFORM_BUDGET (an upper bound: every
    line holding %, ! or ? may be an escape)."""
    escapes = sum(1 for line in source.split("\n") if "%" in line or "!" in line or "?" in line)
    return (escapes + 1) * (len(source) + 1)


def _magic_call(node):
    """(method, [str args]) for get_ipython().<method>('...', ...), else None."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Call) and isinstance(node.func.value.func, ast.Name)
            and node.func.value.func.id == "get_ipython"):
        return None
    args = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return node.func.attr, args


def python_that_runs(source, budget=None, depth=0):
    """The Python the child runs for one cell's text: IPython's transformation, each get_ipython()
    call replaced by the body it runs (%time, %%time, %%capture, %prun), itself transformed, or by
    None (any other magic, a shell escape, help). `budget`: a one-item list of what is left of
    TRANSFORM_BUDGET, spent here; past it the text is returned as written."""
    budget = budget if budget is not None else [TRANSFORM_BUDGET]
    cost = transform_cost(source)
    if cost > budget[0] or depth > MAX_MAGIC_DEPTH:
        budget[0] = 0
        return source
    budget[0] -= cost
    code = ipython_code(source)
    if "get_ipython" not in code:
        return code
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return code
    lines = code.encode("utf-8", "surrogatepass").split(b"\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    raw = code.encode("utf-8", "surrogatepass")
    spans = []
    for node in ast.walk(tree):           # outer calls first: a call inside a replaced one goes with it
        magic = _magic_call(node)
        if magic is None or node.end_lineno is None:
            continue
        start = starts[node.lineno - 1] + node.col_offset
        end = starts[node.end_lineno - 1] + node.end_col_offset
        if any(a <= start < b for a, b, _r in spans):
            continue
        method, args = magic
        body = None
        if method == "run_line_magic" and len(args) >= 2 and args[0] in RUN_LINE_MAGICS:
            body = args[1]
        elif method == "run_cell_magic" and len(args) >= 3 and args[0] in RUN_CELL_MAGICS:
            body = args[2]
        text = "None" if body is None else python_that_runs(body, budget, depth + 1).strip("\n")
        text = text.replace("\n", "\n" + " " * node.col_offset)
        spans.append((start, end, text.encode("utf-8", "surrogatepass")))
    for start, end, text in sorted(spans, reverse=True):
        raw = raw[:start] + text + raw[end:]
    return raw.decode("utf-8", "surrogatepass")


def notebook_code(data, every_cell=False):
    """The code of the cells the grader runs from a notebook (bytes or text), joined; "" when it
    is no notebook. `every_cell`: the test cells too (a released stub's code, all of it given)."""
    try:
        nb = json.loads(data)
        cells = nb.get("cells", []) if isinstance(nb, dict) else []
        cells = cells if isinstance(cells, list) else []
    except (ValueError, TypeError, RecursionError):
        return ""
    budget = [TRANSFORM_BUDGET]
    parts = [python_that_runs(cell_source(c), budget) for c in cells
             if isinstance(c, dict) and c.get("cell_type") == "code" and (every_cell or not is_test_cell(c))]
    return "\n\n".join(p.strip("\n") for p in parts if p.strip())


def graded_code(step_file):
    """The code the grader runs from a StepFile: a notebook's non-test cells, a .py file whole."""
    if step_file.suffix == ".ipynb":
        return notebook_code(step_file.data)
    data = step_file.data
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)
