"""The suites' attention layer (autograder/checks/attention.py) on hand-made replies, no child process:
what the next attention steps rely on and no current suite shows (T_q != T_k, masks, fully masked
rows), and the mistakes the layer names from shapes and NaNs. The suites' own use of it is covered
by grading: tests/reference/test_misconception_catalogue.py, test_stability.py and the results snapshot."""
import numpy as np
import pytest

from autograder.checks import attention
from autograder.checks.expect import NOTES, CheckFailed
from autograder.sandbox.protocol import Returned, Seq
from autograder.reference import variants

B, H, T_Q, T_K, D = 2, 3, 4, 6, 12


def _arr(a, kind="tensor"):
    a = np.asarray(a)
    return Returned(a, kind, "torch.Tensor" if kind == "tensor" else "numpy.ndarray", str(a.dtype))


def _pair(*arrays):
    return Seq("tuple", [_arr(a) for a in arrays], len(arrays))


def _failure(run):
    with pytest.raises(CheckFailed) as info:
        run()
    return str(info.value.message), info.value.misconceptions


def _weights(shape, seed=0):
    return variants.softmax(np.random.default_rng(seed).standard_normal(shape))


def test_outputs_with_heads_and_more_keys_than_queries():
    out, w = np.zeros((B, T_Q, D)), _weights((B, H, T_Q, T_K))
    got = attention.expect_outputs(_pair(out, w), "f(x)", out.shape, w.shape, "torch", heads=True)
    assert [g.shape for g in got] == [out.shape, w.shape]
    message, _ = _failure(lambda: attention.expect_outputs(_pair(w, out), "f(x)", out.shape, w.shape, "torch"))
    assert "returned (weights, out)" in message
    message, _ = _failure(lambda: attention.expect_outputs(_pair(out, w.mean(1)), "f(x)", out.shape, w.shape,
                                                           "torch", heads=True))
    assert "not their average over the heads" in message


def test_rows_with_a_mask():
    mask = np.tril(np.ones((T_Q, T_K), bool), k=-1)          # query 0 may attend no key
    scores = np.where(mask, np.random.default_rng(1).standard_normal((B, H, T_Q, T_K)), -np.inf)
    with np.errstate(invalid="ignore"):
        naive = variants.softmax(scores)                      # NaN in the fully masked row (0 / 0)
    right = np.nan_to_num(naive, nan=0.0)
    attention.expect_rows_sum_to_one(_arr(right), "w", mask=mask)
    assert "never NaN" in _failure(lambda: attention.expect_rows_sum_to_one(_arr(naive), "w", mask=mask))[0]
    leaky = np.where(mask, right, 0.01)
    assert "exactly 0" in _failure(lambda: attention.expect_rows_sum_to_one(_arr(leaky), "w", mask=mask))[0]
    # without the mask the empty row is a row that does not sum to 1
    message, _ = _failure(lambda: attention.expect_rows_sum_to_one(_arr(right), "w"))
    assert "the row at index (0, 0, 0) sums to 0" in message


def test_rows_over_the_wrong_axis_are_named():
    scores = np.random.default_rng(2).standard_normal((B, H, T_K, T_K))
    wrong = variants.softmax(scores, axis=-2)
    message, found = _failure(lambda: attention.expect_rows_sum_to_one(
        _arr(wrong), "w", wrong_axis=lambda: wrong, index_words="batch, head, query"))
    assert found == ["softmax-wrong-axis"] and "(batch, head, query) =" in message


class _Request:
    class node:
        stash = {}


def test_stable_names_the_unstable_softmax_and_notes_a_mistake_of_the_numbers_check():
    scores = 1000.0 * np.random.default_rng(3).standard_normal((B, H, T_Q, T_K))
    with np.errstate(all="ignore"):
        naive = variants.naive_softmax(scores)
    out = np.zeros((B, T_Q, D))

    def values(level):
        pass
    message, found = _failure(lambda: attention.expect_stable(_Request, (_arr(out), _arr(naive)), "f(x)", "float64",
                                                              scores, values, "9.1"))
    assert found == ["softmax-unstable"] and "overflows float64" in message

    def named(level):
        raise CheckFailed("wrong", ["scale-missing"])
    attention.expect_stable(_Request, (_arr(out), _arr(variants.softmax(scores))), "f(x)", "float64", scores,
                            named, "9.1")
    assert "named in 9.1 (scale-missing)" in str(_Request.node.stash[NOTES][-1])
