"""Hidden suite of the test-only third assignment: toy_scores(Q, K) -> Q K^T. 10 points."""
import importlib.util
from pathlib import Path

from autograder.checks.expect import check, expect_array, expect_close, expect_dtype, expect_shape
from autograder.checks.inputs import randn, rounded

_spec = importlib.util.spec_from_file_location("toy_scores_reference",
                                               Path(__file__).parents[1] / "references" / "step01_toy_scores.py")
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)

STEP = "01_toy_scores"
WHAT = "toy_scores(Q, K)"


def _inputs(key):
    return randn((STEP, key, "Q"), (2, 4, 3)), randn((STEP, key, "K"), (2, 5, 3))


def _scores(student, Q, K):
    """The student's scores, checked for type and shape (K Q^T named when its shape fits)."""
    got = expect_array(student.call("toy_scores", Q, K), WHAT, "numpy")
    mistakes = {"toy-scores-transposed": ref.toy_scores(K, Q)}
    expect_shape(got, Q.shape[:-1] + (K.shape[-2],), WHAT, variants=mistakes)
    return got, mistakes


@check("1.1", points=2, kind="shape")
def test_shape(student):
    """Scores have shape (..., T_q, T_k)"""
    _scores(student, *_inputs("1.1"))


@check("1.2", points=6, kind="numbers")
def test_numbers(student):
    """scores[..., i, j] = Q[..., i, :] . K[..., j, :]"""
    Q, K = _inputs("1.2")
    got, mistakes = _scores(student, Q, K)
    expect_close(got, ref.toy_scores(Q, K), WHAT, "float64", variants=mistakes)


@check("1.3", points=2, kind="numbers")
def test_numbers_float32(student, request):
    """The same in float32: the result keeps float32"""
    (Q32, Q64), (K32, K64) = (rounded(a, "float32") for a in _inputs("1.3"))
    got, mistakes = _scores(student, Q32, K32)
    expect_dtype(request, got, "float32", WHAT, "numpy")
    expect_close(got, ref.toy_scores(Q64, K64), WHAT, "float32", variants={m: v for m, v in mistakes.items()})
