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
import json
import shutil

import pytest

from conftest import ROOT, run_grader

CASES = ROOT / "tests" / "hostile" / "meters"
VECTORISED, API = "4.9", "4.10"

# case -> (the step's score, {check: phrase of its failure message}); every other check passes
OFF = "the grader's counters were switched off while your code ran"
VALUES = "values differ from the expected ones"
EXPECTED = {
    # the "watched" branch runs in every call: zeros, graded as zeros (4.1 shape, 4.9 and 4.10 pass);
    # the library softmax it keeps for ordinary calls never runs
    "watched_zeros": (3, {"4.2": VALUES, "4.3": VALUES, "4.4": VALUES, "4.5": "sums to 0", "4.6": VALUES,
                          "4.7": VALUES, "4.8": VALUES}),
    # the vectorised guess (no division) runs everywhere and is judged; its loop never runs
    "loop_unless_watched": (4, {"4.2": VALUES, "4.3": VALUES, "4.4": VALUES, "4.5": "should sum to 1",
                                "4.6": VALUES, "4.8": VALUES}),
    # values right; the loop hides behind switched-off hooks: both meter checks fail, saying why
    "unset_profiler": (8, {VECTORISED: OFF + " (sys.setprofile, sys.settrace)", API: OFF + " (sys.setprofile)"}),
    "patch_meters": (8, {VECTORISED: OFF + " (the meters' code)", API: OFF + " (the meters' code)"}),
    # torch's flop counter zeroed at load, the work done three times: the meters count with their
    # own copy of the formulas, so the complexity check sees the multiply-adds
    "flop_registry": (9, {"7.12": "3.0 times the multiply-adds of the reference"}),
    # the memory meter made to fail: the complexity check fails with the reason, never as the
    # grader's internal error; the api check's watch does not use it
    "break_storage": (9, {"7.12": "the grader's counters failed"}),
    # the forbidden library attention called in gradient requests only (where autograd is on): those
    # run under the meters too, so the api check sees it; the values stay right
    "forbidden_in_grad": (9, {"7.13": "torch.nn.functional.scaled_dot_product_attention"}),
}


def graded(tmp_path, case_file):
    sub = tmp_path / "sub"
    sub.mkdir()
    stem = case_file.name.split(".")[1]
    if stem == "04_softmax":
        shutil.copy(case_file, sub / f"{stem}.py")
    else:
        correct = (ROOT / "samples" / "unusual_style" / f"{stem}.py").read_text()
        (sub / f"{stem}.py").write_text(correct + "\n\n" + case_file.read_text())
    code, output, results = run_grader(sub, tmp_path, "--steps", stem, "--call-timeout", "60")
    assert code == 0, output
    return stem, output, results


def test_every_case_has_its_outcome():
    assert {p.name.split(".")[0] for p in CASES.glob("*.py")} == set(EXPECTED)


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_watching_or_breaking_a_meter_gets_its_exact_outcome(case, tmp_path):
    (case_file,) = CASES.glob(f"{case}.*.py")
    stem, output, results = graded(tmp_path, case_file)
    assert_outcome(case, stem, output, results)


def assert_outcome(case, stem, output, results):
    """The case's exact outcome (EXPECTED), never the grader's internal error (test_meters_accounts too)."""
    score, failures = EXPECTED[case]
    tests = [t for t in results["tests"] if f"step:{stem}" in t["tags"] and "skipped" not in t["output"][:200]]
    failed = {t["name"].split(" ")[0]: t["output"] for t in tests if t["status"] == "failed"}
    assert set(failed) == set(failures), {k: v[:300] for k, v in failed.items()}
    for check, phrase in failures.items():
        assert phrase in failed[check], failed[check][:500]
    assert results["extra_data"]["steps"][stem]["score"] == score
    text = json.dumps(results)
    assert "internal error" not in text and "internal error" not in output
