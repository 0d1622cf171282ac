"""The hostile meter cases (tests/hostile/meters/): each case's exact outcome. Read by
tests/child/test_meters.py (graded as the tests' account) and tests/child/test_meters_accounts.py
(graded as an ordinary account); the hostile replies' folder and steps,
read by tests/sandbox/test_reply_budget.py and the ordinary account's test too."""
import json

from conftest import ROOT

CASES = ROOT / "tests" / "hostile" / "meters"
# the hostile replies (tests/sandbox/test_reply_budget.py), graded beside these honest steps
HOSTILE_REPLIES = ROOT / "tests" / "hostile" / "replies"
REPLY_STEPS = ["01_projection", "02_scores", "03_scaling", "04_softmax", "05_weighted_sum"]
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
