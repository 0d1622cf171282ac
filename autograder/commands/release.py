"""Releasing the assignments: source/ is the master, everything here is derived from it.

`python -m autograder build` regenerates, from source/<assignment>/*.ipynb for every assignment
of the registry whose masters are the kit's (`kit_assignments`: self_attention, modern_attention):
  - the references: the imports cell and the solution cells, markers removed (the oracle of
    every hidden check): solutions/stepNN_<name>.py for self_attention, and
    solutions/<assignment>/stepNN_<name>.py (a package) for the others,
  - assignments/<assignment>/*.ipynb: the student release, by nbgrader's own
    `generate_assignment` (configured in nbgrader_config.py, with `StepStubs` below),
  - assignments/zh/<assignment>/*.ipynb: the same release in Simplified Chinese, by the same
    command with `--AttentionKit.language=zh` (`TranslateNotebook` below puts in the translations
    of the assignment's catalogue, autograder/locale/zh/LC_MESSAGES/notebooks*.po, see
    notebook_i18n.py), for every assignment whose catalogue has translations (both have), and
  - autograder/locale/notebooks*.pot: the catalogue template of each assignment's text.
`python -m autograder build --check` regenerates into a temporary folder and fails on any
difference from the committed copies.
"""
import ast
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
from autograder.reference import mutants

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "source" / contract.DEFAULT_ASSIGNMENT          # the default assignment's masters
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"


def kit_assignments():
    """{name: steps} of the registered assignments whose masters are the kit's (source/<name>/): one
    registered from a folder of its own (contract.Assignment.home, e.g. tests/third_assignment/)
    brings its released stubs with it and is not built here."""
    return {name: a.steps for name, a in contract.REGISTRY.items() if a.home is None}


class ReleaseError(RuntimeError):
    """source/ and the contract disagree: a folder or notebook without its contract entry, or a step
    without its notebook."""


def source_folder(assignment=contract.DEFAULT_ASSIGNMENT):
    return ROOT / "source" / assignment


def check_sources():
    """Raise ReleaseError unless every folder of source/ is an assignment of the contract and holds
    exactly its steps' notebooks (nbgrader would release any notebook it finds there)."""
    problems = []
    for folder in sorted(p for p in (ROOT / "source").iterdir() if p.is_dir() and not p.name.startswith(".")):
        if folder.name not in kit_assignments():
            problems.append(f"source/{folder.name}/ is not an assignment of autograder/contract.py (ASSIGNMENTS)")
    for assignment, steps in kit_assignments().items():
        found = {p.stem for p in source_folder(assignment).glob("*.ipynb")}
        stems = {step.stem for step in steps}
        problems += [f"source/{assignment}/{stem}.ipynb is not a step of autograder/contract.py: add its Step"
                     for stem in sorted(found - stems)]
        problems += [f"source/{assignment}/{stem}.ipynb is missing (a step of autograder/contract.py)"
                     for stem in sorted(stems - found)]
    if problems:
        raise ReleaseError("\n".join(problems))


# ------------------------------------------------------------------ solutions/ from source/
def is_imports_cell(cell):
    return cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade_id", "").endswith("_imports")


def is_solution_cell(cell):
    return cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution", False)


def solution_module(nb_path, assignment=contract.DEFAULT_ASSIGNMENT):
    """The reference module's text: imports cell + solution cells, solution markers dropped."""
    nb = nbformat.read(str(nb_path), as_version=4)
    blocks = []
    for cell in nb.cells:
        if is_imports_cell(cell) or is_solution_cell(cell):
            lines = [ln for ln in cell.source.split("\n") if BEGIN not in ln and END not in ln]
            block = "\n".join(lines).strip("\n")
            if is_imports_cell(cell) and defines_code(block):
                # a locked cell that hands the student earlier steps' code: marked, so the audit
                # mutates only what the student writes (reference/mutants.py)
                block = f"{mutants.GIVEN_BEGIN}\n{block}\n{mutants.GIVEN_END}"
            blocks.append(block)
    header = (f'"""Reference for step {nb.metadata["attention_kit"]["step"]}, generated from '
              f'source/{assignment}/{nb_path.name}\nby `python -m autograder build`. Do not edit: '
              'edit the notebook and rebuild."""\n')
    return header + "\n\n\n".join(blocks) + "\n"


def defines_code(source):
    """True when a cell's code defines a function or a class (more than imports and constants)."""
    return any(isinstance(node, (ast.FunctionDef, ast.ClassDef)) for node in ast.parse(source).body)


def solution_filename(stem):
    return f"step{stem}.py"          # "04_softmax" -> "step04_softmax.py", an importable name


def solutions_subfolder(assignment):
    """Where an assignment's references go inside solutions/, by its tag in the registry: the first
    assignment's at the top (solutions.step04_softmax), the others in a package of their name
    (solutions.modern_attention)."""
    return contract.REGISTRY[assignment].tag


def reference_module_name(assignment, stem):
    """The import name of a step's reference: "solutions.step04_softmax",
    "solutions.modern_attention.step01_masks"."""
    package = ".".join(p for p in ("solutions", solutions_subfolder(assignment)) if p)
    return f"{package}.{solution_filename(stem)[:-3]}"


def write_solutions(out_dir):
    for assignment, steps in kit_assignments().items():
        folder = out_dir / solutions_subfolder(assignment)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "__init__.py").write_text(
            '"""Reference implementations, generated from source/ by `python -m autograder build`."""\n'
            if folder == out_dir else
            f'"""Reference implementations of {assignment}, generated from source/{assignment}/ by '
            '`python -m autograder build`."""\n')
        for step in steps:
            nb = source_folder(assignment) / f"{step.stem}.ipynb"
            (folder / solution_filename(step.stem)).write_text(solution_module(nb, assignment))
        data = source_folder(assignment) / "data"      # files its notebooks read (decoder: its corpus), beside them
        if data.is_dir():
            shutil.copytree(data, folder / "data", dirs_exist_ok=True)


# ------------------------------------------------------------------ assignments/ by nbgrader
def release_folder(lang):
    """Where the release in `lang` lives, relative to the repo: assignments/ for English,
    assignments/<lang>/ for the others (each holding a folder per assignment)."""
    return "assignments" if lang == "en" else f"assignments/{lang}"


def release_languages(assignment):
    """The languages `assignment` is released in: English, and each language its catalogue has
    translations for (notebook_i18n.has_translations)."""
    return [lang for lang in notebook_i18n.LANGUAGES if notebook_i18n.has_translations(lang, assignment)]


def generate_assignment(release_dirs, assignments=None):
    """Run nbgrader's generate_assignment with the kit's config, for each {lang: release folder}
    of `release_dirs`, in that language (the course's setting c.AttentionKit.language,
    overridden on the command line), releasing the assignments of `assignments[lang]` (all of
    kit_assignments() by default). One run releases all of a language's assignments (nbgrader
    takes the assignment as a glob: "*" is every folder of source/, which check_sources holds to
    the contract); the runs go side by side: each is mostly nbgrader's start."""
    everything = sorted(kit_assignments())
    with tempfile.TemporaryDirectory() as tmp:
        # nbgrader runs `alembic` for its database: the venv's bin/ must be on PATH
        env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
        runs = {}
        for lang, release_dir in release_dirs.items():
            names = sorted((assignments or {}).get(lang, everything))
            patterns = ["*"] if names == everything and len(names) > 1 else names
            for pattern in patterns:
                cmd = [sys.executable, "-m", "nbgrader", "generate_assignment", pattern, "--force",
                       f"--CourseDirectory.release_directory={release_dir}",
                       f"--CourseDirectory.db_url=sqlite:///{tmp}/gradebook-{lang}-{len(runs)}.db",
                       "--log-level=WARN", f"--AttentionKit.language={lang}",
                       # a broken nbgrader_config.py must stop the build, not fall back to plain stubs
                       "--NbGraderApp.raise_config_file_errors=True"]
                runs[lang, pattern] = subprocess.Popen(cmd, cwd=ROOT, env=env)
        failed = [f"{lang} {pattern}" for (lang, pattern), proc in runs.items() if proc.wait() != 0]
        if failed:
            raise subprocess.CalledProcessError(1, f"nbgrader generate_assignment ({', '.join(failed)})")


def master_notebooks(assignment=contract.DEFAULT_ASSIGNMENT):
    return [source_folder(assignment) / f"{step.stem}.ipynb" for step in contract.ASSIGNMENTS[assignment]]


def write_template(path, assignment=contract.DEFAULT_ASSIGNMENT):
    """The gettext template (.pot) of every message in the assignment's masters."""
    entries = notebook_i18n.extract(master_notebooks(assignment), ROOT)
    notebook_i18n.write_catalogue(notebook_i18n.template(entries, assignment), path)


def template_file(assignment=contract.DEFAULT_ASSIGNMENT):
    """An assignment's template, relative to the repo: autograder/locale/notebooks*.pot."""
    return notebook_i18n.template_path(assignment).relative_to(ROOT).as_posix()


TEMPLATE = template_file()      # autograder/locale/notebooks.pot, the first assignment's


def build(out_root=ROOT, say=None):
    """Regenerate solutions/, assignments/ (every assignment, every language it is translated
    into) and the templates under out_root (the repo itself by default). `say(text)` hears each
    stage as it starts (the command line prints them: nbgrader's part takes most of a minute)."""
    say = say or (lambda text: None)
    say("checking source/")
    check_sources()
    out_root = Path(out_root)
    say("writing solutions/ (the references)")
    write_solutions(out_root / "solutions")
    for assignment in kit_assignments():
        say(f"writing the notebooks' template of {assignment}")
        write_template(out_root / template_file(assignment), assignment)
    releases = {lang: out_root / release_folder(lang) for lang in notebook_i18n.LANGUAGES}
    for release in releases.values():
        for assignment in kit_assignments():     # a language an assignment lost leaves nothing behind
            if (release / assignment).exists():
                shutil.rmtree(release / assignment)
    wanted = {lang: [a for a in kit_assignments() if lang in release_languages(a)] for lang in releases}
    say("releasing the stubs with nbgrader generate_assignment ("
        + ", ".join(lang for lang in releases if wanted[lang]) + "), the longest stage")
    generate_assignment({lang: releases[lang] for lang in releases if wanted[lang]}, wanted)


def generated_paths():
    """What `build` writes, relative to the repo: folders and files."""
    return (["solutions"] + [f"{release_folder(lang)}/{assignment}" for assignment in kit_assignments()
                             for lang in release_languages(assignment)]
            + [template_file(assignment) for assignment in kit_assignments()])


def unreleased_paths():
    """Release folders `build` must not leave behind: an assignment in a language it is not
    released in (yet)."""
    return [f"{release_folder(lang)}/{assignment}" for assignment in kit_assignments()
            for lang in notebook_i18n.LANGUAGES if lang not in release_languages(assignment)]


def _files(folder):
    """The files of a generated folder, without what tools leave beside them (JupyterLab's
    .ipynb_checkpoints/, __pycache__/: submitted_files.SKIPPED_FOLDERS, which grading skips too)."""
    if folder.is_file():
        return {Path()}
    return {p.relative_to(folder) for p in folder.rglob("*")
            if p.is_file() and not SKIPPED_FOLDERS.intersection(p.relative_to(folder).parts)} \
        if folder.exists() else set()


def differences(out_root):
    """Files that differ between a fresh build in out_root and the committed copies (a file of an
    unreleased folder is one)."""
    diffs = []
    for rel in generated_paths() + unreleased_paths():
        fresh, committed = Path(out_root) / rel, ROOT / rel
        for name in sorted(_files(fresh) | _files(committed)):
            a, b = fresh / name, committed / name
            if not (a.is_file() and b.is_file() and filecmp.cmp(a, b, shallow=False)):
                diffs.append(f"{rel}/{name}" if name != Path() else rel)
    return diffs


def check(say=None):
    """Exit status 1 and a list of files when the committed release drifted from source/."""
    with tempfile.TemporaryDirectory() as tmp:
        build(tmp, say)
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
        assignment = notebook_assignment(resources)
        table = notebook_i18n.translations(lang, assignment)
        untranslated = [m for m in notebook_i18n.messages(nb) if (None, m) not in table]
        if untranslated:
            self.log.warning("attention-kit: %d message(s) of %s have no %s translation and stay in English",
                             len(untranslated), resources.get("unique_key", "a notebook"), lang)
        return notebook_i18n.translate_notebook(nb, lang, assignment), resources


def notebook_assignment(resources):
    """The assignment nbgrader is releasing the notebook of (its catalogue translates it)."""
    return (resources.get("nbgrader") or {}).get("assignment") or contract.DEFAULT_ASSIGNMENT


class StepStubs(ClearSolutions):
    """nbgrader's ClearSolutions, with stubs that name the step and what to write:
    `raise NotImplementedError("Step 4: implement softmax")`, in the course's language."""

    def preprocess(self, nb, resources):
        self.step_number = nb.metadata.get("attention_kit", {}).get("step", "?")
        self.language = release_language(self)
        self.assignment = notebook_assignment(resources)
        return super().preprocess(nb, resources)

    def _stub(self, indent, fn):
        lang, assignment = getattr(self, "language", "en"), getattr(self, "assignment", contract.DEFAULT_ASSIGNMENT)
        comment = notebook_i18n.gettext(lang, "YOUR CODE HERE", assignment=assignment)
        message = notebook_i18n.gettext(lang, "Step {step}: implement {name}", assignment=assignment).format(
            step=self.step_number, name=fn or "this")
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
