"""Issue 14, "fix the kinds of mistakes at their root": each mistake written as a small student file,
graded through the real grader (as tests/checks/test_rules.py does), with the exact checks it loses and
the message it is told.

- float64 for float32 input is accepted only in step 3 (NumPy 2's promotion by a NumPy scalar), with a
  note that claims only what the code may have done; elsewhere it fails the float32 check;
- inputs changed in place fail every value check of a numpy step, with one message (a torch step's
  gradient check owns it: tests/checks/test_gradients.py);
- a softmax shifted by the whole array's maximum underflows (0 / 0): told as such, not as overflow;
- a torch step's hint speaks torch (dim, keepdim=True, torch.softmax);
- float32 inside a float64 module: every float64 check fails, the gradient check included, naming it;
- an error in a leftover cell reaches the student as a note, the score unchanged.
"""
import textwrap

import pytest

from harness.grade_many import grade_many, summary
from harness.leniency import CASES, _failed, _points_lost


def _summary(checks):
    return summary(checks.values())


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """{label: {check number: check dict}} for every case, numpy and torch steps side by side."""
    root = tmp_path_factory.mktemp("audit")
    jobs = []
    for label, (stem, code) in CASES.items():
        (root / label).mkdir()
        (root / label / f"{stem}.py").write_text(textwrap.dedent(code).lstrip())
        jobs.append((root / label, stem))
    results = grade_many(jobs, processes=2)
    return {label: {c["number"]: c for c in checks} for label, checks in zip(CASES, results)}


# ------------------------------------------------------------------ 1. a leniency matches its reason
def test_float64_for_float32_fails_outside_the_scaling_step(graded):
    checks = graded["astype-float"]
    assert _failed(checks) == {"1.3"}, _summary(checks)
    assert "the dtype was not kept" in checks["1.3"]["output"]
    assert "halve the memory" in checks["1.3"]["output"] and ".astype(float)" in checks["1.3"]["output"]
    # step 5's chain keeps float32: the promotion is excused in the scaling step only, and its message
    # names np.sqrt among the causes (the same message as a float32 result widened at the end)
    for case in ("attention-numpy-scalar", "attention-widened-after"):
        checks = graded[case]
        assert _failed(checks) == {"5.5"}, _summary(checks)
        assert "the dtype was not kept" in checks["5.5"]["output"] and "np.sqrt(d)" in checks["5.5"]["output"]


def test_the_scaling_step_accepts_the_promotion_with_a_note_that_claims_no_more(graded):
    checks = graded["scaling-numpy-scalar"]
    assert not _failed(checks), _summary(checks)
    out = checks["3.3"]["output"]
    assert "Accepted in this step: dividing (or multiplying) by a NumPy float64 scalar" in out
    # the leniency matches its reason: a float32 result widened afterwards is not NumPy 2's promotion
    checks = graded["scaling-widened-after"]
    assert _failed(checks) == {"3.3"}, _summary(checks)
    assert "the arithmetic was done in float32 and the result converted to float64 afterwards" in \
        checks["3.3"]["output"]
    assert "Accepted: NumPy 2 promotes float32 when you divide by np.sqrt" not in out


# ------------------------------------------------------------------ 2. inputs changed in place (numpy steps)
def test_changing_the_input_in_place_fails_every_value_check(graded):
    checks = graded["softmax-in-place"]
    failed = _failed(checks)
    assert {"4.2", "4.3", "4.4"} <= failed, _summary(checks)
    assert failed <= {"4.2", "4.3", "4.4", "4.6", "4.7", "4.8"}, _summary(checks)
    for n in failed:
        assert "your code changed argument 1 in place" in checks[n]["output"], checks[n]["output"]
    assert not any(c["misconceptions"] for c in checks.values())


# ------------------------------------------------------------------ 3. the diagnosis fits the evidence
def test_the_whole_arrays_maximum_is_told_as_underflow_not_overflow(graded):
    checks = graded["softmax-global-max"]
    assert _failed(checks) == {"4.7", "4.8"}, _summary(checks)
    for n in ("4.7", "4.8"):
        assert checks[n]["misconceptions"] == ["softmax-global-max"]
        assert "underflows to 0, and 0 / 0 is nan" in checks[n]["output"]
        assert "inf / inf" not in checks[n]["output"]


# ------------------------------------------------------------------ 4. hints speak the step's library
def test_a_torch_steps_hint_speaks_torch(graded):
    checks = graded["torch-wrong-dim"]
    named = [c for c in checks.values() if "softmax-wrong-axis" in c["misconceptions"]]
    assert named, _summary(checks)
    for c in named:
        assert "torch.softmax(scores, dim=-1)" in c["output"] and "keepdim=True" in c["output"]
        assert "keepdims=True" not in c["output"] and "the `axis` argument" not in c["output"]


# ------------------------------------------------------------------ 5. float32 inside a float64 module
def test_float32_inside_a_float64_module_gets_one_verdict_and_its_cause(graded):
    checks = graded["float32-softmax"]
    assert _failed(checks) == {"7.2", "7.5", "7.6", "7.8", "7.14"}, _summary(checks)
    for n in ("7.2", "7.5", "7.6", "7.8", "7.14"):
        assert "Precision is lost to float32 inside the computation" in checks[n]["output"], checks[n]["output"]
    assert "custom autograd.Function" not in checks["7.14"]["output"]
    assert not any(c["misconceptions"] for c in checks.values())
    # numpy: keys rounded to float32 in a float64 run stay inside the float64 tolerance (which admits
    # one float32 constant); the child's tracer sees the float32 array, and the message speaks numpy
    checks = graded["attention-float32-keys"]
    assert _failed(checks) == {"5.4"}, _summary(checks)
    assert "K in self_attention: float64 -> float32" in checks["5.4"]["output"]
    assert ".astype(np.float32)" in checks["5.4"]["output"] and "torch" not in checks["5.4"]["output"]


# ------------------------------------------------------------------ 6. errors in leftover cells are told
def test_an_error_in_a_leftover_cell_is_told_and_costs_nothing(graded):
    checks = graded["leftover-cell"]
    assert not _failed(checks) and _points_lost(checks) == 0, _summary(checks)
    told = [c for c in checks.values() if "a leftover demo cell" in c["output"]]
    assert len(told) == 1 and "RuntimeError" in told[0]["output"] and told[0]["output"].startswith("Passed.")


# ------------------------------------------------------------------ 7. a hint names the cause it can prove
def test_a_reordering_of_the_tokens_is_not_told_to_mask_later_keys(graded):
    for case, words in (("gqa-heads-time-view", "mixes the time axis with the heads"),
                        ("gqa-batch-time-mixed", "the sequences of the batch are mixed")):
        checks = graded[case]
        assert "3.6" in _failed(checks), _summary(checks)
        out = checks["3.6"]["output"]
        assert words in out and "the mask is not the cause" in out, out
        assert "mask the scores of later keys" not in out, out
    # the fix the hints give (.view(B, T, h, d).transpose(1, 2)) passes the property
    assert not _failed(graded["gqa-fixed"]), _summary(graded["gqa-fixed"])


def test_a_wrong_log_sum_exp_is_not_told_to_cover_every_key_once(graded):
    checks = graded["lse-without-max"]
    assert "6.4" in _failed(checks), _summary(checks)
    out = checks["6.4"]["output"]
    assert "the same way for every block size" in out and "cover every key exactly once" not in out, out
    assert not _failed(graded["lse-fixed"]), _summary(graded["lse-fixed"])


# ------------------------------------------------------------------ 8. a diagnosis on consistent evidence only
def test_a_mistake_that_matches_on_one_input_only_is_not_named(graded):
    checks = graded["scaling-integer-sqrt"]
    assert {"3.3", "3.4"} <= _failed(checks), _summary(checks)
    assert "3.2" not in _failed(checks), _summary(checks)            # d_k = 16: right there
    # at d_k = 2 the values are exactly "no scale", but at d_k = 16 they were right and "no scale" was not
    assert not any(c["misconceptions"] for c in checks.values()), _summary(checks)
