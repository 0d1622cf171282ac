"""Evidence (checks/expect.py) weighs a mistake per function compared: one function's right answers
say nothing about a mistake that lives in another function of the same step."""
import numpy as np

from autograder.checks.expect import Evidence, evidence_key

BAND = (1e-9, 1e-12)


def test_right_answers_of_another_function_do_not_outvote_a_mistake():
    rng = np.random.default_rng(0)
    right, swapped = rng.normal(size=(4, 4)), rng.normal(size=(4, 4))
    ev = Evidence()
    # weighted_sum is right twice (its swapped variant differs) ...
    for _ in range(2):
        ev.record((right,), {"weights-transposed": (swapped,)}, BAND, evidence_key("weighted_sum(weights, V)"))
    # ... while self_attention's out matches the swapped variant
    ev.record((swapped,), {"weights-transposed": (swapped,)}, BAND, evidence_key("out from self_attention(X, W)"))
    assert ev.consistent(["weights-transposed"], evidence_key("out from self_attention(X, W)")) == ["weights-transposed"]
    # within one function, one match against two right answers is a coincidence, not a diagnosis
    ev.record((swapped,), {"weights-transposed": (swapped,)}, BAND, evidence_key("weighted_sum(weights, V)"))
    assert ev.consistent(["weights-transposed"], evidence_key("weighted_sum(w32, v32)")) == []


def test_the_key_is_the_function_not_its_arguments():
    assert evidence_key("scale_scores(scores, d_k=16)") == evidence_key("scale_scores(scores, d_k=9)") == "scale_scores"
