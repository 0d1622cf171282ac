"""Gradescope: `python -m autograder gradescope-zip OUT.zip [--assignment NAME]` builds the
autograder to upload.

Gradescope takes one autograder per assignment, so a zip grades one assignment of the kit
(the default assignment unless --assignment says otherwise; any registered one): its run_autograder grades that
assignment's steps only, so a submission holding nothing (or another assignment's files) is
scored out of this assignment's points, each missing step said by name, never graded as the
other assignment.

The zip holds, at its root, Gradescope's two entry points (from templates/gradescope/):
`setup.sh`, run once when Gradescope builds the image (installs CPU torch and the kit), and
`run_autograder`, run for every submission (grades /autograder/submission into
/autograder/results/results.json), with the assignment and its steps written in. Beside them:
the kit itself (pyproject.toml, autograder/, solutions/) and constraints.txt, which pins the
libraries to the versions this zip was built with, so that Gradescope grades with what the
instructor tested.
"""
import stat
import zipfile
from importlib import metadata
from pathlib import Path

from autograder import contract

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "templates" / "gradescope"
KIT_FILES = ["pyproject.toml"]
# pyproject's `readme` must exist for pip to install the kit; the zip needs no documentation, so it
# holds this line instead of the README (the documentation is the site built from docs/)
README_STUB = "attention-kit's grader, packaged for Gradescope by `python -m autograder gradescope-zip`.\n"
KIT_FOLDERS = ["autograder", "solutions"]
PINNED = ["torch", "numpy", "pytest", "nbformat"]
SKIP_PARTS = {"__pycache__", ".ipynb_checkpoints", ".pytest_cache"}
EXTRA = "extra"          # an assignment from outside the kit (contract.Assignment.home): extra/<name>/ in the zip


def constraints():
    """`name==version` lines for the libraries grading depends on, as installed here
    (local labels such as +cpu dropped: the CPU index serves them under the plain version)."""
    return "".join(f"{name}=={metadata.version(name).split('+')[0]}\n" for name in PINNED)


def kit_files():
    """(path on disk, name in the zip) for the kit's own files."""
    files = [(ROOT / name, name) for name in KIT_FILES]
    for folder in KIT_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*")):
            rel = path.relative_to(ROOT)
            if path.is_file() and not SKIP_PARTS & set(rel.parts) and path.suffix != ".pyc":
                files.append((path, rel.as_posix()))
    return files


def run_autograder(assignment):
    """templates/gradescope/run_autograder with `assignment` and its step stems written in."""
    if assignment not in contract.ASSIGNMENTS:
        raise SystemExit(f"gradescope-zip: unknown assignment {assignment!r}; the kit's are "
                         f"{', '.join(contract.ASSIGNMENTS)}")
    text = (TEMPLATES / "run_autograder").read_text()
    stems = ",".join(step.stem for step in contract.ASSIGNMENTS[assignment])
    home = contract.REGISTRY[assignment].home
    own_file = f"{EXTRA}/{assignment}/assignment.py" if home is not None else ""
    for mark, value in (("@ASSIGNMENT@", assignment), ("@STEPS@", stems), ("@ASSIGNMENT_FILE@", own_file)):
        assert text.count(mark) == 1, f"templates/gradescope/run_autograder must hold {mark} once"
        text = text.replace(mark, value)
    return text


def _add(zf, name, data, executable=False):
    info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))   # fixed: same kit, same zip
    info.external_attr = ((0o755 if executable else 0o644) | stat.S_IFREG) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, data)


def assignment_files(assignment):
    """(path on disk, name in the zip) of an assignment's own folder when it lies outside the kit
    (its assignment.py registers it: run_autograder names it in ATTENTION_KIT_ASSIGNMENTS)."""
    home = contract.REGISTRY[assignment].home
    if home is None:
        return []
    home = Path(home)
    return [(path, f"{EXTRA}/{assignment}/{path.relative_to(home).as_posix()}") for path in sorted(home.rglob("*"))
            if path.is_file() and not SKIP_PARTS & set(path.relative_to(home).parts) and path.suffix != ".pyc"]


def build_zip(out, assignment=contract.DEFAULT_ASSIGNMENT):
    """Write the autograder zip of `assignment` to `out`; return the names it holds."""
    if not (ROOT / "pyproject.toml").exists() or not TEMPLATES.is_dir():
        raise SystemExit(f"gradescope-zip needs the kit's checkout (pyproject.toml, templates/); not found at {ROOT}")
    with zipfile.ZipFile(out, "w") as zf:
        _add(zf, "setup.sh", (TEMPLATES / "setup.sh").read_bytes(), executable=True)
        _add(zf, "run_autograder", run_autograder(assignment), executable=True)
        _add(zf, "constraints.txt", constraints())
        _add(zf, "README.md", README_STUB)
        for path, name in kit_files() + assignment_files(assignment):
            _add(zf, name, path.read_bytes())
        return zf.namelist()
