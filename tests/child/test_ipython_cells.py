"""Notebooks run as Jupyter runs them (issue 28): IPython's own input transformation in the child.

A correct notebook written with IPython syntax (line and cell magics, shell escapes, help requests,
continuation lines that start with `%`, `!` or `?` inside a statement, drafts kept in cells whose
magic means they are not Python) scores exactly like the same code handed in as a `.py` file, for
both assignments; the magics that would have side effects are not run, and the student is told.
"""
import json

import numpy as np
import pytest

from autograder import contract
from autograder.checks.student import Student
from autograder.sandbox.limits import Limits
from autograder.sandbox.step_child import StepChild
from conftest import ROOMY_SECONDS, ROOT, run_grader

SOFTMAX = contract.step_for_stem("04_softmax")
GOOD = ("import numpy as np\n"
        "def softmax(x, axis=-1):\n"
        "    e = np.exp(x - x.max(axis, keepdims=True))\n"
        "    return e / e.sum(axis, keepdims=True)\n")
WRONG = "def {name}(*args, **kwargs):\n    raise RuntimeError('a draft that Jupyter never runs as Python')\n"

# a statement whose continuation lines start with the characters IPython gives a meaning to only
# at the start of a statement: the old filter cut it in half (a SyntaxError that lost the cell)
CONTINUATIONS = ('_label = ("%d heads"\n'
                 '%4)\n'
                 '_doc = """\n'
                 '!not a shell command\n'
                 '?not a help request\n'
                 '%not a magic\n'
                 '"""\n'
                 '_total = (1 +\n'
                 '  2)\n')


def code_cell(source, **nbgrader):
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}
    if nbgrader:
        cell["metadata"]["nbgrader"] = nbgrader
    return cell


def notebook(cells):
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def ipython_notebook(solution, names, wrap):
    """The solution as a student's notebook would hold it, with every IPython construct around it.
    wrap: how the solution's own cell is run ("plain", "%%time" or "%%capture out")."""
    first = names[0]
    body = solution + "\n" + CONTINUATIONS + f"{first}?\n{first}??\n"
    drafts = "".join(WRONG.format(name=n) for n in names)
    return notebook([
        code_cell("%matplotlib inline\n%load_ext autoreload\n%autoreload 2\n!pip install numpy\n"
                  "files = !ls\n%pip install torch\n%cd /tmp\n%env SEED=1\n"),
        code_cell(body if wrap == "plain" else f"{wrap}\n{body}"),
        code_cell("%time _timed = 2 + 3\n_again = %time _timed * 2\n"),
        code_cell("%%capture captured\nprint('captured, not shown')\n_captured = 7\n"),
        # drafts that Jupyter never runs as Python: each would override the solution if run
        code_cell("%%writefile draft.py\n" + drafts),
        code_cell("%%bash\necho hello\n" + drafts.replace("def ", "# def ")),
        code_cell("%%script python\n" + drafts),
        code_cell("%%timeit\n" + drafts),
        code_cell("%%html\n<b>" + drafts + "</b>"),
        code_cell("%%latex\n$x$\n" + drafts),
        code_cell("%%markdown\n# draft\n" + drafts),
        code_cell("%%cython\n" + drafts),      # an extension's magic the grader does not know
        # an nbgrader test cell: never run by the grader, as before
        code_cell("assert False, 'hidden tests are not the student\\'s code'", grade=True, grade_id="x_tests",
                  points=1, solution=False),
    ])


def test_every_construct_is_understood_as_jupyter_does_and_side_effects_are_neutralised(tmp_path):
    path = tmp_path / "04_softmax.ipynb"
    path.write_text(ipython_notebook(GOOD, ["softmax"], "%%time"))
    s = StepChild(SOFTMAX, path, Limits(call_seconds=ROOMY_SECONDS))
    try:
        got = Student(s).call("softmax", np.zeros((2, 3)))
        assert np.allclose(got.array, 1 / 3)              # the solution, not a draft
        assert s.cell_errors == [], s.cell_errors            # no cell lost to a magic or a cut statement
        assert {"_label", "_doc", "_total", "_timed", "_again", "_captured", "captured", "files"} <= set(
            s.load_reply["defined"])
        assert "get_ipython" not in s.load_reply["defined"]  # the kernel's names are not the student's
        s.close()       # as the report reads it: after the child, its output read to the end
        printed = str(s.printed())
        for told in ("!pip install numpy", "%pip install torch", "%cd /tmp", "%%writefile", "%%bash",
                     "%%script", "%%timeit", "%%html", "%%cython", "!ls"):
            assert told in printed, (told, printed)
        assert "captured, not shown" not in printed            # %%capture captured it
        for quiet in ("%matplotlib", "%autoreload", "%load_ext", "pinfo"):
            assert quiet not in printed, printed
    finally:
        s.close()


def test_values_that_magics_give_are_the_ones_jupyter_gives(tmp_path):
    path = tmp_path / "04_softmax.ipynb"
    path.write_text(notebook([code_cell(GOOD + CONTINUATIONS), code_cell("%time _v = 6 * 7\n_w = %time _v + 1\n"),
                              code_cell("%%capture cap\nprint('inside')\n"),
                              code_cell("def softmax(x, axis=-1, _s=softmax):\n"
                                        "    return _s(x, axis) + 0 * len(_label + _doc) + 0 * _total "
                                        "+ (_w == 43 and cap.stdout == 'inside\\n' and len(files) == 0) - 1\n"),
                              code_cell("files = !ls\n")]))
    s = StepChild(SOFTMAX, path, Limits(call_seconds=ROOMY_SECONDS))
    try:
        got = Student(s).call("softmax", np.zeros((2, 3)))
        assert np.allclose(got.array, 1 / 3), got.array      # True - 1 == 0: every value as Jupyter has it
    finally:
        s.close()


def test_a_syntax_error_is_still_the_students_own(tmp_path):
    path = tmp_path / "04_softmax.ipynb"
    path.write_text(notebook([code_cell(GOOD), code_cell("def oops(:\n    pass\n")]))
    s = StepChild(SOFTMAX, path, Limits(call_seconds=ROOMY_SECONDS))
    try:
        Student(s).call("softmax", np.zeros((2, 3)))
        assert [e["type"] for e in s.cell_errors] == ["SyntaxError"]
        assert "code cell 2" in s.cell_errors[0]["traceback"] + s.cell_errors[0]["message"]
    finally:
        s.close()


def solution_file(assignment, step):
    folder = ROOT / "solutions" if assignment == contract.ASSIGNMENT else ROOT / "solutions" / assignment
    return folder / f"step{step.stem}.py"


def scores(results):
    return sorted((t["name"], t["score"], t["max_score"], t.get("status")) for t in results["tests"])


@pytest.mark.parametrize("assignment", list(contract.ASSIGNMENTS))
def test_a_correct_notebook_in_ipython_syntax_scores_exactly_like_the_same_code_as_py(tmp_path, assignment, warm_cli):
    as_py, as_nb = tmp_path / "py", tmp_path / "nb"
    as_py.mkdir()
    as_nb.mkdir()
    for i, step in enumerate(contract.ASSIGNMENTS[assignment]):
        solution = solution_file(assignment, step).read_text()
        (as_py / f"{step.stem}.py").write_text(solution)
        wrap = ("plain", "%%time", "%%capture out")[i % 3]
        (as_nb / f"{step.stem}.ipynb").write_text(ipython_notebook(solution, list(step.names), wrap))
    (tmp_path / "r_py").mkdir()
    (tmp_path / "r_nb").mkdir()
    _, out_py, res_py = run_grader(as_py, tmp_path / "r_py", warm=warm_cli)
    _, out_nb, res_nb = run_grader(as_nb, tmp_path / "r_nb", warm=warm_cli)
    assert res_py and res_nb, out_py + out_nb
    assert res_py["score"] == res_py["extra_data"]["max_score"] > 0, out_py        # the references get every point
    assert scores(res_nb) == scores(res_py), out_nb
