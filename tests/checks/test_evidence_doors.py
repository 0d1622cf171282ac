"""Issue 28, "a diagnosis on one coincidence", as a class: every place a suite names a mistake from values
goes through the step's Evidence (checks/expect.py), so a variant that matches on one input while the
step's other inputs contradict it names nothing.

The doors: expect_close and expect_attention (their variants), and, for a suite that compares values
itself, expect.named_on_evidence, attention.named_if_matches, attention.wrong_axis_found and
attention.matching. The suites were read for ids named by hand; the ones left name a mistake from
another kind of evidence (counts, memory, float32's rounding over every value, the pattern of NaN and
inf on large scores), listed below with why: a new literal id in a suite fails this test.
"""
import ast

import numpy as np
import pytest

from autograder.checks import attention, expect
from autograder.reference.misconceptions import CATALOGUE
from conftest import ROOT

# id: why a suite may name it without a variant's values
NOT_FROM_VALUES = {
    "rope-angles-float32": "the values agree with the reference to float32's rounding of the angles, on every value",
    "kv-cache-no-causal-new": "chosen among ids already found on evidence (with or without the cache)",
    "kv-cache-reprojects": "the multiply-adds the child counted",
    "softmax-unstable": "NaN and inf exactly where a plain exp() overflows, on scores past exp's limit",
    "tiled-full-scores": "the peak memory the child measured",
    "forbidden-api": "the calls the child's trace saw (checks/complexity.py)",
    "not-vectorized": "the Python-level operations the child counted (checks/complexity.py)",
    "detached-graph": "no gradient where the reference has one (checks/gradients.py)",
    "decoder-head-not-tied": "the parameter names and shapes the model lists (an untied model's, asked to tie)",
    "generate-without-cache": "the multiply-adds the child counted per generated token",
}


def _literal_ids():
    """(file, line, id) of every catalogue id written in a list, tuple or set in a suite or in checks/
    (what fail(...) is given)."""
    found = []
    for path in sorted([*(ROOT / "autograder" / "suites").glob("*.py"), *(ROOT / "autograder" / "checks").glob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
                found += [(path.name, node.lineno, e.value) for e in node.elts
                          if isinstance(e, ast.Constant) and e.value in CATALOGUE]
    return found


def test_no_suite_names_a_value_mistake_by_hand():
    by_hand = [(f, line, mid) for f, line, mid in _literal_ids() if mid not in NOT_FROM_VALUES]
    assert not by_hand, f"named without Evidence (use expect.named_on_evidence or attention.named_if_matches): {by_hand}"
    assert {mid for _f, _l, mid in _literal_ids()} <= set(NOT_FROM_VALUES)


@pytest.fixture
def step_evidence():
    """A fresh Evidence for one 'step', as suites/conftest.py sets it for each check."""
    told = expect.EVIDENCE.set(expect.Evidence())
    yield
    expect.EVIDENCE.reset(told)


RNG = np.random.default_rng(28)
RIGHT = [RNG.standard_normal((2, 3)) for _ in range(3)]
WRONG = [RNG.standard_normal((2, 3)) for _ in range(3)]          # the mistake, where it differs


def _contradicted(door):
    """The student right on two inputs where the mistake differs (no match), then matching it on a third."""
    for i in range(2):
        door(RIGHT[i], WRONG[i])
    return door(WRONG[2], WRONG[2])


DOORS = {
    "named_on_evidence": lambda got, variant: expect.named_on_evidence((got,), {"scale-missing": (variant,)},
                                                                       (1e-6, 1e-9)),
    "named_if_matches": lambda got, variant: attention.named_if_matches("scale-missing", (got,), (variant,)),
    "wrong_axis_found": lambda got, variant: attention.wrong_axis_found(got, [variant], "float64"),
    "wrong_axis_found, a function": lambda got, variant: attention.wrong_axis_found(got, lambda: variant, "float64"),
}


@pytest.mark.parametrize("door", sorted(DOORS))
def test_a_match_on_one_input_against_the_others_names_nothing(step_evidence, door):
    assert _contradicted(DOORS[door]) == []


@pytest.mark.parametrize("door", sorted(DOORS))
def test_a_match_on_most_inputs_names_the_mistake(step_evidence, door):
    DOORS[door](WRONG[0], WRONG[0])
    DOORS[door](RIGHT[1], WRONG[1])
    assert DOORS[door](WRONG[2], WRONG[2]) != []


def test_matching_records_its_own_input(step_evidence):
    """attention.matching (a property's failure explained by a variant) used to read Evidence without
    recording the input at hand: alone, one match named the mistake."""
    class Got:
        def __init__(self, array):
            self.array = array
    for i in range(2):
        attention.matching(Got(RIGHT[i]), Got(RIGHT[i]), {"scale-missing": (WRONG[i], WRONG[i])}, "float64")
    assert attention.matching(Got(WRONG[2]), Got(WRONG[2]), {"scale-missing": (WRONG[2], WRONG[2])}, "float64") == []
    assert len(expect.evidence().entries) == 3


class _Got:
    """What a suite holds of a returned array: its values, shape and dtype."""

    def __init__(self, array):
        self.array, self.shape, self.dtype = array, array.shape, str(array.dtype)


def test_a_shape_that_fits_a_mistake_is_named_on_evidence_too(step_evidence):
    """expect_shape named a mistake whose shape and values fit, on that input alone (K Q^T is (T_k, T_q)):
    it goes through Evidence like the values do."""
    square = [RNG.standard_normal((3, 3)) for _ in range(2)]
    for s in square:                      # right on two square inputs, where K Q^T differs
        expect.expect_close(_Got(s), s, "scores", "float64", variants={"scores-transposed": s.T + 1.0})
    wrong = RNG.standard_normal((3, 2))
    with pytest.raises(expect.CheckFailed) as failure:
        expect.expect_shape(_Got(wrong), (2, 3), "scores", variants={"scores-transposed": wrong})
    assert failure.value.misconceptions == []
    told = expect.EVIDENCE.set(expect.Evidence())            # with nothing against it: named
    try:
        with pytest.raises(expect.CheckFailed) as failure:
            expect.expect_shape(_Got(wrong), (2, 3), "scores", variants={"scores-transposed": wrong})
        assert failure.value.misconceptions == ["scores-transposed"]
    finally:
        expect.EVIDENCE.reset(told)
