"""Releasing the assignment: source/ is the master, everything here is derived from it.

`python -m autograder build` regenerates, from source/self_attention/*.ipynb:
  - solutions/stepNN_<name>.py: the imports cell and the solution cells, markers removed
    (the oracle of every hidden check), and
  - assignments/self_attention/*.ipynb: the student release, by nbgrader's own
    `generate_assignment` (configured in nbgrader_config.py, with `StepStubs` below),
  - assignments/zh/self_attention/*.ipynb: the same release in Simplified Chinese, by the same
    command with `--AttentionKit.language=zh` (`TranslateNotebook` below puts in the translations
    of autograder/locale/zh/LC_MESSAGES/notebooks.po, see autograder/notebook_i18n.py), and
  - autograder/locale/notebooks.pot: the catalogue template of the notebooks' text.
`python -m autograder build --check` regenerates into a temporary folder and fails on any
difference from the committed copies.
"""
import filecmp
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

from autograder import contract
from autograder.submitted_files import SKIPPED_FOLDERS
from autograder.commands import notebook_i18n

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "source" / contract.ASSIGNMENT
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"


# ------------------------------------------------------------------ solutions/ from source/
def is_imports_cell(cell):
    return cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade_id", "").endswith("_imports")


def is_solution_cell(cell):
    return cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution", False)


def solution_module(nb_path):
    """The reference module's text: imports cell + solution cells, solution markers dropped."""
    nb = nbformat.read(str(nb_path), as_version=4)
    blocks = []
    for cell in nb.cells:
        if is_imports_cell(cell) or is_solution_cell(cell):
            lines = [ln for ln in cell.source.split("\n") if BEGIN not in ln and END not in ln]
            blocks.append("\n".join(lines).strip("\n"))
    header = (f'"""Reference for step {nb.metadata["attention_kit"]["step"]}, generated from '
              f'source/{contract.ASSIGNMENT}/{nb_path.name}\nby `python -m autograder build`. Do not edit: '
              'edit the notebook and rebuild."""\n')
    return header + "\n\n\n".join(blocks) + "\n"


def solution_filename(stem):
    return f"step{stem}.py"          # "04_softmax" -> "step04_softmax.py", an importable name


def write_solutions(out_dir):
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "__init__.py").write_text(
        '"""Reference implementations, generated from source/ by `python -m autograder build`."""\n')
    for step in contract.STEPS:
        (out_dir / solution_filename(step.stem)).write_text(solution_module(SOURCE / f"{step.stem}.ipynb"))


# ------------------------------------------------------------------ assignments/ by nbgrader
def release_folder(lang):
    """Where the release in `lang` lives, relative to the repo: assignments/ for English,
    assignments/<lang>/ for the others (each holding self_attention/)."""
    return "assignments" if lang == "en" else f"assignments/{lang}"


def generate_assignment(release_dirs):
    """Run nbgrader's generate_assignment with the kit's config, once per {lang: release folder}
    of `release_dirs`, in that language (the course's setting c.AttentionKit.language,
    overridden on the command line). The runs go side by side: each is mostly nbgrader's start."""
    with tempfile.TemporaryDirectory() as tmp:
        # nbgrader runs `alembic` for its database: the venv's bin/ must be on PATH
        env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
        runs = {}
        for lang, release_dir in release_dirs.items():
            cmd = [sys.executable, "-m", "nbgrader", "generate_assignment", contract.ASSIGNMENT, "--force",
                   f"--CourseDirectory.release_directory={release_dir}",
                   f"--CourseDirectory.db_url=sqlite:///{tmp}/gradebook-{lang}.db", "--log-level=WARN",
                   f"--AttentionKit.language={lang}",
                   # a broken nbgrader_config.py must stop the build, not fall back to plain stubs
                   "--NbGraderApp.raise_config_file_errors=True"]
            runs[lang] = subprocess.Popen(cmd, cwd=ROOT, env=env)
        failed = [lang for lang, proc in runs.items() if proc.wait() != 0]
        if failed:
            raise subprocess.CalledProcessError(1, f"nbgrader generate_assignment ({', '.join(failed)})")


def master_notebooks():
    return [SOURCE / f"{step.stem}.ipynb" for step in contract.STEPS]


def write_template(path):
    """The gettext template (.pot) of every message in the masters."""
    notebook_i18n.write_catalogue(notebook_i18n.template(notebook_i18n.extract(master_notebooks(), ROOT)), path)


TEMPLATE = notebook_i18n.TEMPLATE.relative_to(ROOT).as_posix()      # autograder/locale/notebooks.pot


def build(out_root=ROOT):
    """Regenerate solutions/, assignments/ (every language) and the template under out_root
    (the repo itself by default)."""
    out_root = Path(out_root)
    write_solutions(out_root / "solutions")
    write_template(out_root / TEMPLATE)
    releases = {lang: out_root / release_folder(lang) for lang in notebook_i18n.LANGUAGES}
    for release in releases.values():
        if (release / contract.ASSIGNMENT).exists():
            shutil.rmtree(release / contract.ASSIGNMENT)
    generate_assignment(releases)


def generated_paths():
    """What `build` writes, relative to the repo: folders and files."""
    return (["solutions"] + [f"{release_folder(lang)}/{contract.ASSIGNMENT}" for lang in notebook_i18n.LANGUAGES]
            + [TEMPLATE])


def _files(folder):
    """The files of a generated folder, without what tools leave beside them (JupyterLab's
    .ipynb_checkpoints/, __pycache__/: submitted_files.SKIPPED_FOLDERS, which grading skips too)."""
    if folder.is_file():
        return {Path()}
    return {p.relative_to(folder) for p in folder.rglob("*")
            if p.is_file() and not SKIPPED_FOLDERS.intersection(p.relative_to(folder).parts)} \
        if folder.exists() else set()


def differences(out_root):
    """Files that differ between a fresh build in out_root and the committed copies."""
    diffs = []
    for rel in generated_paths():
        fresh, committed = Path(out_root) / rel, ROOT / rel
        for name in sorted(_files(fresh) | _files(committed)):
            a, b = fresh / name, committed / name
            if not (a.is_file() and b.is_file() and filecmp.cmp(a, b, shallow=False)):
                diffs.append(f"{rel}/{name}" if name != Path() else rel)
    return diffs


def check():
    """Exit status 1 and a list of files when the committed release drifted from source/."""
    with tempfile.TemporaryDirectory() as tmp:
        build(tmp)
        diffs = differences(tmp)
    for d in diffs:
        print(f"out of date: {d}")
    if diffs:
        print("run `python -m autograder build` and commit the result")
    return 1 if diffs else 0


# ------------------------------------------------------------------ nbgrader preprocessors
try:
    from nbgrader.preprocessors import ClearSolutions, NbGraderPreprocessor
    from traitlets import Unicode
    from traitlets.config import Configurable
except ImportError:          # grading needs no nbgrader; only releasing does
    ClearSolutions = NbGraderPreprocessor = Configurable = object
    Unicode = None


class AttentionKit(Configurable):
    """The course's settings for the kit, in nbgrader_config.py: `c.AttentionKit.language`."""
    language = Unicode("en", help="The course's language: the release's notebooks (generate_assignment) "
                                  "and the grader's messages (autograde, feedback). 'en' or 'zh'."
                       ).tag(config=True) if Unicode else "en"


def release_language(preprocessor):
    """c.AttentionKit.language as nbgrader sees it (config file, then command line); a language
    the notebooks are not translated into releases English, with a warning."""
    lang = AttentionKit(parent=preprocessor).language
    if lang not in notebook_i18n.LANGUAGES:
        preprocessor.log.warning("attention-kit: no notebooks in %r; releasing English", lang)
        return "en"
    return lang


class TranslateNotebook(NbGraderPreprocessor):
    """The master in the course's language, before anything else runs on it: text translated
    cell by cell (same cells, ids and metadata, so the checksums and grades nbgrader records are
    those of the translated release), a glossary cell first. English: nothing changes."""

    def preprocess(self, nb, resources):
        lang = release_language(self)
        if lang == "en":
            return nb, resources
        table = notebook_i18n.translations(lang)
        untranslated = [m for m in notebook_i18n.messages(nb) if (None, m) not in table]
        if untranslated:
            self.log.warning("attention-kit: %d message(s) of %s have no %s translation and stay in English",
                             len(untranslated), resources.get("unique_key", "a notebook"), lang)
        return notebook_i18n.translate_notebook(nb, lang), resources


class StepStubs(ClearSolutions):
    """nbgrader's ClearSolutions, with stubs that name the step and what to write:
    `raise NotImplementedError("Step 4: implement softmax")`, in the course's language."""

    def preprocess(self, nb, resources):
        self.step_number = nb.metadata.get("attention_kit", {}).get("step", "?")
        self.language = release_language(self)
        return super().preprocess(nb, resources)

    def _stub(self, indent, fn):
        lang = getattr(self, "language", "en")
        comment = notebook_i18n.gettext(lang, "YOUR CODE HERE")
        message = notebook_i18n.gettext(lang, "Step {step}: implement {name}").format(step=self.step_number,
                                                                                      name=fn or "this")
        literal = f'"{message}"' if '"' not in message and "\\" not in message else repr(message)
        return [indent + f"# {comment}", indent + f"raise NotImplementedError({literal})"]

    def _replace_solution_region(self, cell, language):
        if cell.cell_type != "code":
            return super()._replace_solution_region(cell, language)
        new, in_solution, replaced, cls, fn = [], False, False, None, None
        for line in cell.source.split("\n"):
            if m := re.match(r"class\s+(\w+)", line):
                cls = m.group(1)
            elif m := re.match(r"(\s*)def\s+(\w+)", line):
                fn = f"{cls}.{m.group(2)}" if m.group(1) and cls else m.group(2)
            if BEGIN in line:
                if in_solution:
                    raise RuntimeError("nested solution regions")
                in_solution, replaced = True, True
                new += self._stub(re.match(r"\s*", line).group(0), fn)
            elif END in line:
                in_solution = False
            elif not in_solution:
                new.append(line)
        if in_solution:
            raise RuntimeError("no end solution statement found")
        cell.source = "\n".join(new)
        return replaced
