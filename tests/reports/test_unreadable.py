"""An unreadable step file is its own state everywhere (issue 29): a notebook that is not JSON (or
JSON but not a notebook),
bytes that are not UTF-8, a syntax error. The step's first check says the cause, once; the others
point to it; every check carries the `unreadable` tag (results.json); the progress line and the
CSV's error column name the file; the class view counts it in a column of its own, never as a
forbidden API, a misconception or a failed check."""
import csv
import json
import shutil
import subprocess
import sys

import pytest

from autograder.reports import class_view

from conftest import ROOT

LESSON = ROOT / "samples" / "lesson"
BAD = {"notebook": ("04_softmax.ipynb", b'{"cells": [\n'),
       "json": ("04_softmax.ipynb", b"[]"),
       "syntax": ("04_softmax.py", b"def softmax(x, axis=-1):\n    return x +\n"),
       "bytes": ("04_softmax.py", b'def softmax(x, axis=-1):\n    return "\xff\xfe"\n')}
CAUSE = {"notebook": "JSONDecodeError", "json": "NotANotebook", "syntax": "SyntaxError", "bytes": "UnicodeDecodeError"}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("unreadable")
    for name in (*BAD, "fine"):
        folder = tmp / "class" / name
        shutil.copytree(LESSON, folder)
        if name in BAD:
            (folder / "04_softmax.py").unlink()
            file, data = BAD[name]
            (folder / file).write_bytes(data)
    done = subprocess.run([sys.executable, "-m", "autograder", "grade-all", str(tmp / "class"), "--results-dir",
                           str(tmp / "out"), "--csv", str(tmp / "g.csv"), "--report", str(tmp / "out" / "class.html"),
                           "--isolation", "process", "--no-similarity"], cwd=tmp, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    return tmp, done.stderr


@pytest.mark.parametrize("name", list(BAD))
def test_the_cause_is_said_first_and_once_and_tagged(graded, name):
    tmp, _err = graded
    results = json.loads((tmp / "out" / name / "results.json").read_text())
    tests = [t for t in results["tests"] if "step:04_softmax" in t["tags"]]
    first, *rest = tests
    assert first["output"].startswith(f"{BAD[name][0]} could not be read ({CAUSE[name]})"), first["output"]
    assert "does not define" not in first["output"]
    assert all(t["output"] == f"Not graded: the step's file could not be read (see check {first['number']})."
               for t in rest)
    assert all("unreadable" in t["tags"] and t["score"] == 0 for t in tests)
    assert not [t for t in results["tests"] if "unreadable" in t["tags"] and "step:04_softmax" not in t["tags"]]


def test_the_terminal_and_the_gradebook_name_the_file(graded):
    tmp, err = graded
    with open(tmp / "g.csv", encoding="utf-8-sig", newline="") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    for name, (file, _data) in BAD.items():
        assert rows[name]["error"] == f"unreadable: {file}"
        assert any(line.endswith(f"] {name}: {rows[name]['total']}/70 (unreadable: {file})") for line in err.splitlines())
    assert rows["fine"]["error"] == ""


def test_the_class_view_counts_it_apart(graded):
    tmp, _err = graded
    data = json.loads(class_view.numbers_path(tmp / "out").read_text())
    step = data["steps"]["04_softmax"]
    assert step["unreadable"] == len(BAD) and step["attempted"] == 1
    assert step["forbidden_api"] == 0 and step["correct_but_slow"] == 0
    assert all(c["attempted"] <= 1 for c in data["checks"] if c["step"] == "04_softmax")
    assert not any(m["steps"].get("04_softmax") for m in data["misconceptions"].values())
    page = class_view.page_path(tmp / "out", tmp / "out" / "class.html").read_text(encoding="utf-8")
    assert "file unreadable" in page
