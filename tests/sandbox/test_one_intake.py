"""Issue 25, item 2: one intake. What the class view's similarity compares is what the child runs:
a notebook's cells transformed on the trusted side by IPython's TransformerManager, as the child
transforms them (submitted_files.python_that_runs), whatever the magics and the cells' metadata
claim; a zip's members and a folder's files are chosen by the same rule.

The child's own load (child/runner.py, loaded here as a module: the cells are the test's own) runs
each decoy notebook, and the names it defines are those graded_code's code defines.
"""
import ast
import importlib.util
import json
import zipfile
from pathlib import Path

import pytest

from autograder import submitted_files
from autograder.commands import batch
from autograder.reports import similarity

from conftest import ROOT


def runner_module():
    spec = importlib.util.spec_from_file_location("runner_intake_copy", ROOT / "autograder" / "child" / "runner.py")
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    return runner


def notebook(*cells):
    """cells: (source, nbgrader metadata or None)."""
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "source": src, "metadata": {"nbgrader": meta} if meta else {}, "outputs": [],
         "execution_count": None} for src, meta in cells]}).encode()


def defined_by(code):
    """Top-level names the code defines (functions, classes, assignments)."""
    names = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


DECOYS = {
    # a function defined behind a line magic: the child runs it, stripping "%" lines hid it
    "line_magic": notebook(("%time def softmax(x): return x * 2", None)),
    # a cell magic the child runs as Python
    "time_cell": notebook(("%%time\ndef softmax(x):\n    return x * 3\n", None)),
    "capture_cell": notebook(("%%capture out\nimport math\ndef softmax(x):\n    return x - 1\n", None)),
    # code the child never runs: a file Jupyter would write, a shell cell, a test cell
    "writefile": notebook(("%%writefile copied.py\ndef copied_softmax(x):\n    return x\n", None),
                          ("def softmax(x):\n    return x\n", None)),
    "bash": notebook(("%%bash\necho def copied_softmax\n", None), ("def softmax(x):\n    return x\n", None)),
    "test_metadata": notebook(("def softmax(x):\n    return x\n", None),
                              ("def copied_softmax(x):\n    return x\n", {"grade": True, "solution": False})),
    # metadata that claims a cell is given (locked, not graded): the child runs it, so it is compared
    "given_metadata": notebook(("def softmax(x):\n    return x\n", {"locked": True, "grade": False, "solution": False,
                                                                     "grade_id": "given"})),
    # an assigned magic and a nested one
    "assigned": notebook(("y = %time sum([1, 2])\nif True:\n    %time softmax = lambda x: x\n", None)),
}


@pytest.mark.parametrize("case", sorted(DECOYS))
def test_similarity_compares_the_code_the_child_runs(case, tmp_path):
    data = DECOYS[case]
    path = tmp_path / "04_softmax.ipynb"
    path.write_bytes(data)
    runner = runner_module()
    reply = runner.load(str(path), path.name)
    ran = set(reply["defined"]) - {"out"}      # %%capture's variable: assigned by the shell, not the code
    code = submitted_files.graded_code(submitted_files.StepFile(path.name, data))
    compared = defined_by(code) - {"out"}
    assert ran == compared, (case, code)
    assert "copied_softmax" not in code
    assert "softmax" in compared


def test_the_trusted_side_transforms_as_the_child_does():
    runner = runner_module()
    assert runner.RUN_LINE_MAGICS == submitted_files.RUN_LINE_MAGICS
    assert runner.RUN_CELL_MAGICS == submitted_files.RUN_CELL_MAGICS
    for source in ["%time x = 1", "!ls", "files = !ls", "obj?", "%%bash\nls", "if x:\n    %prun f()",
                   "x = 1 # 100%!", "def f(:", "%%time\n%time y = 2"]:
        assert submitted_files.ipython_code(source) == runner._ipython_code(source)
    cells = [{"source": ["a = 1\n", 2, "b"]}, {"source": 7}, {}]
    assert [submitted_files.cell_source(c) for c in cells] == [runner._cell_source(c) for c in cells]


def test_past_the_budget_cells_are_compared_as_written():
    """A notebook whose escapes would cost the trusted side more than TRANSFORM_BUDGET: its cells are
    compared whole (all their text: nothing run can be left out)."""
    heavy = "\n".join(["%time x = 1"] * 300 + ["y = 2"] * 2000)
    assert submitted_files.transform_cost(heavy) > submitted_files.TRANSFORM_BUDGET
    code = submitted_files.notebook_code(notebook((heavy, None), ("%time def softmax(x): return x", None)))
    assert "%time def softmax(x): return x" in code and "%time x = 1" in code
    cheap = submitted_files.notebook_code(notebook(("%time def softmax(x): return x", None)))
    assert cheap.strip() == "def softmax(x): return x"


def test_own_code_of_a_zip_is_the_graded_file_and_cells(tmp_path):
    """A zip's hidden folders are passed over by similarity as by the grader."""
    visible = notebook(("def softmax(x):\n    return x\n", None))
    decoy = notebook(("def copied_softmax(x):\n    return x\n", None))
    with zipfile.ZipFile(tmp_path / "s.zip", "w") as zf:
        zf.writestr("__MACOSX/04_softmax.ipynb", decoy)
        zf.writestr(".ipynb_checkpoints/04_softmax.ipynb", decoy)
        zf.writestr("work/04_softmax.ipynb", visible)
    files = dict(batch.read_files(str(tmp_path / "s.zip")))
    own = similarity.own_code(files)
    assert own["04_softmax"]["file"] == "work/04_softmax.ipynb"
    assert "copied_softmax" not in own["04_softmax"]["code"]
