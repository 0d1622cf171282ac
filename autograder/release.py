"""Releasing the assignment: source/ is the master, everything here is derived from it.

`python -m autograder build` regenerates, from source/self_attention/*.ipynb:
  - solutions/stepNN_<name>.py: the imports cell and the solution cells, markers removed
    (the oracle of every hidden check), and
  - assignments/self_attention/*.ipynb: the student release, by nbgrader's own
    `generate_assignment` (configured in nbgrader_config.py, with `StepStubs` below).
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

from . import contract

ROOT = Path(__file__).resolve().parent.parent
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
def generate_assignment(release_dir):
    """Run nbgrader's generate_assignment with the kit's config, into `release_dir`."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "nbgrader", "generate_assignment", contract.ASSIGNMENT, "--force",
               f"--CourseDirectory.release_directory={release_dir}",
               f"--CourseDirectory.db_url=sqlite:///{tmp}/gradebook.db", "--log-level=WARN",
               # a broken nbgrader_config.py must stop the build, not fall back to plain stubs
               "--NbGraderApp.raise_config_file_errors=True"]
        # nbgrader runs `alembic` for its database: the venv's bin/ must be on PATH
        env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
        subprocess.run(cmd, cwd=ROOT, check=True, env=env)


def build(out_root=ROOT):
    """Regenerate solutions/ and assignments/ under out_root (the repo itself by default)."""
    out_root = Path(out_root)
    write_solutions(out_root / "solutions")
    release = out_root / "assignments"
    if (release / contract.ASSIGNMENT).exists():
        shutil.rmtree(release / contract.ASSIGNMENT)
    generate_assignment(release)


def differences(out_root):
    """Files that differ between a fresh build in out_root and the committed copies."""
    diffs = []
    for rel in ["solutions", f"assignments/{contract.ASSIGNMENT}"]:
        fresh, committed = Path(out_root) / rel, ROOT / rel
        names = {p.relative_to(fresh) for p in fresh.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
        names |= {p.relative_to(committed) for p in committed.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts} if committed.exists() else set()
        for name in sorted(names):
            a, b = fresh / name, committed / name
            if not (a.exists() and b.exists() and filecmp.cmp(a, b, shallow=False)):
                diffs.append(f"{rel}/{name}")
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


# ------------------------------------------------------------------ nbgrader preprocessor
try:
    from nbgrader.preprocessors import ClearSolutions
except ImportError:          # grading needs no nbgrader; only releasing does
    ClearSolutions = object


class StepStubs(ClearSolutions):
    """nbgrader's ClearSolutions, with stubs that name the step and what to write:
    `raise NotImplementedError("Step 4: implement softmax")`."""

    def preprocess(self, nb, resources):
        self.step_number = nb.metadata.get("attention_kit", {}).get("step", "?")
        return super().preprocess(nb, resources)

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
                indent = re.match(r"\s*", line).group(0)
                new += [indent + "# YOUR CODE HERE",
                        indent + f'raise NotImplementedError("Step {self.step_number}: implement {fn or "this"}")']
            elif END in line:
                in_solution = False
            elif not in_solution:
                new.append(line)
        if in_solution:
            raise RuntimeError("no end solution statement found")
        cell.source = "\n".join(new)
        return replaced
