"""A temporary nbgrader course of the repo, driven through nbgrader's own command line: the helpers
tests/e2e/test_nbgrader.py (the first assignment), tests/e2e/test_nbgrader_modern.py (the second, in
English and Chinese) and tests/e2e/test_nbgrader_decoder.py (the third) share.

A course is a folder holding a copy of nbgrader_config.py (its language set) and of source/;
`nbgrader generate_assignment` releases into its assignments/; students' notebooks go into
submitted/<student>/<assignment>/; nbgrader writes autograded/ and feedback/ beside them.

The first assignment's English release is used by three courses (the nbgrader round trip's and
the nbgrader wall's two): `released` builds it once per run, whichever file and worker asks first,
and copies it into each (a `generate_assignment` costs some 7 s of CPU on a slow machine). The
other assignments' courses each belong to one file, which releases its own."""
import ast
import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

from autograder import contract
from autograder.commands import release
from conftest import ROOT

BIN = Path(sys.executable).parent           # nbgrader runs `alembic` from here
LANGUAGE_LINE = 'c.AttentionKit.language = "en"'


def make_course(folder, language="en"):
    """A course in `folder`/course, its gradebook in `folder`: (course path, gradebook URL).
    The config is the repo's, with `c.AttentionKit.language` set to `language`."""
    course = Path(folder) / "course"
    course.mkdir()
    config = (ROOT / "nbgrader_config.py").read_text()
    assert LANGUAGE_LINE in config, "nbgrader_config.py no longer sets the language this way"
    (course / "nbgrader_config.py").write_text(config.replace(LANGUAGE_LINE, f'c.AttentionKit.language = "{language}"'))
    shutil.copytree(ROOT / "source", course / "source")
    return course, f"sqlite:///{Path(folder) / 'gradebook.db'}"


def released(tmp_path_factory, folder, assignment=contract.ASSIGNMENT, language="en"):
    """make_course in `folder` with `assignment` already released there by `nbgrader
    generate_assignment` (its assignments/ and its gradebook's entries): (course path, gradebook URL).
    Built once per run (the graded corpus's store, tests/harness/corpus.py) and copied."""
    from harness import corpus

    def build(_name, into, *_options):
        course, db = make_course(into, language)
        nbgrader(course, db, "generate_assignment", assignment)
        return 0, "", None
    built = corpus.Corpus(corpus.store(tmp_path_factory), build).folder(f"nbgrader-release:{assignment}", language)
    course, gradebook = Path(folder) / "course", Path(folder) / "gradebook.db"
    shutil.copytree(built / "course", course, symlinks=True)
    shutil.copyfile(built / "gradebook.db", gradebook)      # its URL names no folder: the copy is the course's
    return course, f"sqlite:///{gradebook}"


def nbgrader(course, db, *args):
    """Run one nbgrader command in the course; fail with its output unless it succeeds."""
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = subprocess.run([str(BIN / "nbgrader"), *args, f"--CourseDirectory.db_url={db}", "--log-level=WARN"],
                          cwd=course, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"nbgrader {args[0]} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def master_solution(cell):
    """A master's solution cell with its solution markers dropped: the code a student who solved it wrote."""
    return "\n".join(ln for ln in cell.source.split("\n") if release.BEGIN not in ln and release.END not in ln)


def master_solutions(stem, assignment=contract.ASSIGNMENT):
    """{grade id: solved cell's code} of the repo's master of `stem`."""
    master = nbformat.read(str(ROOT / "source" / assignment / f"{stem}.ipynb"), as_version=4)
    return {c.metadata.nbgrader.grade_id: master_solution(c) for c in master.cells if release.is_solution_cell(c)}


def student_notebook(course, stem, replace=None, fill=True, assignment=contract.ASSIGNMENT):
    """The course's released notebook of `stem`, its solution cells filled with the master's
    solutions (or left as stubs when fill is False), except those named in `replace` (grade_id -> code)."""
    solutions = master_solutions(stem, assignment)
    nb = nbformat.read(str(Path(course) / "assignments" / assignment / f"{stem}.ipynb"), as_version=4)
    for cell in nb.cells:
        if release.is_solution_cell(cell):
            gid = cell.metadata.nbgrader.grade_id
            if replace and gid in replace:
                cell.source = replace[gid]
            elif fill:
                cell.source = solutions[gid]
    return nb


def submit(course, assignment, submissions):
    """Write {student: {stem: notebook}} into submitted/<student>/<assignment>/."""
    for student, notebooks in submissions.items():
        folder = Path(course) / "submitted" / student / assignment
        folder.mkdir(parents=True)
        for stem, nb in notebooks.items():
            nbformat.write(nb, str(folder / f"{stem}.ipynb"))


def start_standalone(course, assignment, students, out, warm=None):
    """`python -m autograder grade` on each student's submitted folder, results in out/<student>.json:
    {student: process}, started to run while nbgrader does; or, with `warm` (conftest's warm_cli),
    {student: (exit code, output)}, graded now one after another by the worker's warm command line
    (a fresh `grade` of a whole assignment costs some 3 s of CPU before its first check)."""
    def argv(student):
        return ["grade", str(Path(course) / "submitted" / student / assignment),
                "--results", str(Path(out) / f"{student}.json"), "--quiet"]
    if warm is not None:
        return {student: warm.run(argv(student)) for student in students}
    return {student: subprocess.Popen([sys.executable, "-m", "autograder", *argv(student)], cwd=ROOT,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for student in students}


def standalone_scores(procs, out):
    """{student: {stem: score}} once each standalone grading of start_standalone has ended."""
    scores = {}
    for student, proc in procs.items():
        if isinstance(proc, tuple):
            code, text = proc
        else:
            text, _ = proc.communicate(timeout=600)
            code = proc.returncode
        assert code == 0, text
        results = json.loads((Path(out) / f"{student}.json").read_text())
        scores[student] = {stem: s["score"] for stem, s in results["extra_data"]["steps"].items()}
    return scores


def recorded(db, assignment=contract.ASSIGNMENT):
    """{student: {notebook: score}} from nbgrader's gradebook."""
    from autograder.commands.crosscheck import nbgrader_scores
    return nbgrader_scores(db, assignment)


def autograded(course, student, stem, assignment=contract.ASSIGNMENT):
    """The notebook nbgrader's autograde wrote for `student`'s `stem`, every cell run."""
    return nbformat.read(str(Path(course) / "autograded" / student / assignment / f"{stem}.ipynb"), as_version=4)


def grade_cell(nb):
    """A notebook's one grade cell (the hidden tests' `grade_step`)."""
    (cell,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    return cell


def hidden_cell(course, student, stem, assignment=contract.ASSIGNMENT):
    """The autograded notebook's one grade cell (the hidden tests' `grade_step`)."""
    return grade_cell(autograded(course, student, stem, assignment))


def assert_ran_top_to_bottom(course, student, step, assignment=contract.ASSIGNMENT):
    """`student` handed in `step` solved with the master's code, and nbgrader's autograde ran every
    cell of it, top to bottom: no cell raised, its visible tests passed, and its hidden cell gave
    full marks, listing its checks by number (the skipped ones, GPU, in their place: 5.9 before
    5.12). Each English course's solved student thus runs every master of its assignment."""
    nb = autograded(course, student, step.stem, assignment)
    raised = [(c.metadata.get("nbgrader", {}).get("grade_id"), o.get("ename"), o.get("evalue"))
              for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not raised, (step.stem, raised)
    cell = grade_cell(nb)
    (points,) = [o for o in cell.outputs if o.output_type == "execute_result"]
    assert float(points.data["text/plain"]) == step.points, step.stem
    printed = "".join(o.text for o in cell.outputs if o.output_type == "stream" and o.name == "stdout")
    numbers = [tuple(map(int, n.split("."))) for n in re.findall(r"^\[\w+\] (\d+\.\d+) ", printed, re.M)]
    assert numbers and numbers == sorted(numbers), printed
    visible = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id", "").endswith("_tests")]
    assert visible, f"{step.stem}: each step has visible tests"
    passed = "".join(o.get("text", "") for c in visible for o in c.outputs if o.output_type == "stream")
    assert f"All visible tests for step {step.number} passed." in passed, (step.stem, passed[-500:])


def feedback_text(course, student, stem, assignment=contract.ASSIGNMENT):
    """The feedback page's text as a reader sees it (tags dropped: code is split into spans)."""
    page = (Path(course) / "feedback" / student / assignment / f"{stem}.html").read_text()
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def lesson_function(stem, name):
    """The source of function `name` in the lesson's code for `stem`."""
    text = (ROOT / "samples" / "lesson" / f"{stem}.py").read_text()
    node = next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == name)
    return ast.get_source_segment(text, node)
