"""Measuring cannot be seen or broken (issue 25, item 5).

Every call of the student's code runs under the same meters (Student._watched sends an ordinary
call as a measuring one, with its value back): whatever the code reads (sys.getprofile,
sys.gettrace, gc.isenabled, tracemalloc.is_tracing, the frames above it, torch's mode stacks), an
ordinary call and a measured one look the same, so code that behaves only while watched behaves
so in every call and is graded on that. A meter the code switches off, edits (the meters' module,
the meters' module) or makes fail counts against the check it would have fooled, with a
message; never as the grader's internal error.

The cases are in tests/hostile/meters/: a `*.04_softmax.py` file is the step's whole file (the
other steps are not graded); a `*.07_full_module.py` file is appended to the correct step file.
Each is graded in a fresh grader, with its exact outcome.
"""
import shutil

import pytest

from conftest import ROOT, run_grader
from harness.meters import CASES, EXPECTED, assert_outcome


def graded(tmp_path, case_file, warm):
    sub = tmp_path / "sub"
    sub.mkdir()
    stem = case_file.name.split(".")[1]
    if stem == "04_softmax":
        shutil.copy(case_file, sub / f"{stem}.py")
    else:
        correct = (ROOT / "samples" / "unusual_style" / f"{stem}.py").read_text()
        (sub / f"{stem}.py").write_text(correct + "\n\n" + case_file.read_text())
    code, output, results = run_grader(sub, tmp_path, "--steps", stem, warm=warm)
    assert code == 0, output
    return stem, output, results


def test_every_case_has_its_outcome():
    assert {p.name.split(".")[0] for p in CASES.glob("*.py")} == set(EXPECTED)


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_watching_or_breaking_a_meter_gets_its_exact_outcome(case, tmp_path, warm_cli):
    (case_file,) = CASES.glob(f"{case}.*.py")
    stem, output, results = graded(tmp_path, case_file, warm_cli)
    assert_outcome(case, stem, output, results)
