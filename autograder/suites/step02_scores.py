"""Hidden suite, step 2: attention_scores(Q, K) -> Q K^T. 10 points."""
import numpy as np

from autograder.checks import complexity
from autograder.reference import variants
from autograder.checks.expect import (CheckFailed, check, expect_array, expect_close, expect_dtype,
                                      expect_shape)
from autograder.i18n import _
from autograder.checks.inputs import randn, rounded
from autograder.checks.memo import Remembering
from autograder.sandbox.problems import StudentRaised
from solutions import step02_scores

ref = Remembering(step02_scores)     # the references' answers, remembered for the next submission

STEP = "02_scores"
D_K = 6


def _qk(key, lead=(2, 3), T_q=5, T_k=7):
    return randn((STEP, key, "Q"), lead + (T_q, D_K)), randn((STEP, key, "K"), lead + (T_k, D_K))


def _scores(student, Q, K, Q64=None, K64=None):
    """Call the student's attention_scores; check type and shape (naming K Q^T when it fits)."""
    what = "attention_scores(Q, K)"
    try:
        value = student.call("attention_scores", Q, K)
    except StudentRaised as raised:
        if raised.error.get("type") == "ValueError" and "matmul" in raised.error.get("message", "") and Q.ndim > 2:
            raise CheckFailed(raised.student_message() + _("\nHint: with batch axes, `K.T` reverses *every* "
                                                             "axis, not just the last two; use np.swapaxes(K, -1, -2).")
                              ) from None
        raise
    got = expect_array(value, what, "numpy")
    Q64 = Q if Q64 is None else Q64
    K64 = K if K64 is None else K64
    transposed = variants.swap_last(ref.attention_scores(Q64, K64))
    expect_shape(got, Q.shape[:-1] + (K.shape[-2],), what, variants={"scores-transposed": transposed})
    return got, what, {"scores-transposed": transposed}


@check("2.1", points=1, kind="shape")
def test_shape(student):
    """Scores have shape (..., T_q, T_k) for T_q != T_k"""
    _scores(student, *_qk("2.1"))


@check("2.2", points=3, kind="numbers")
def test_numbers_float64(student):
    """scores[..., i, j] = Q[..., i, :] . K[..., j, :], float64"""
    Q, K = _qk("2.2")
    got, what, mistakes = _scores(student, Q, K)
    expect_close(got, ref.attention_scores(Q, K), what, "float64", variants=mistakes)


@check("2.3", points=2, kind="numbers")
def test_numbers_float32(student, request):
    """The same in float32 (dtype kept)"""
    (Q32, Q64), (K32, K64) = (rounded(a, "float32") for a in _qk("2.3"))
    got, what, mistakes = _scores(student, Q32, K32, Q64, K64)
    expect_dtype(request, got, "float32", what, "numpy")
    expect_close(got, ref.attention_scores(Q64, K64), what, "float32", variants=mistakes)


@check("2.4", points=1, kind="numbers")
def test_no_batch(student):
    """Plain matrices Q (T_q, d_k) and K (T_k, d_k), more queries than keys (T_q = 7, T_k = 5)"""
    Q, K = _qk("2.4", lead=(), T_q=7, T_k=5)
    got, what, mistakes = _scores(student, Q, K)
    expect_close(got, ref.attention_scores(Q, K), what, "float64", variants=mistakes)


@check("2.5", points=1, kind="numbers")
def test_self_attention_case(student):
    """T_q == T_k (self-attention): queries index the rows, keys the columns"""
    Q, K = _qk("2.5", T_q=5, T_k=5)
    got, what, mistakes = _scores(student, Q, K)
    expect_close(got, ref.attention_scores(Q, K), what, "float64", variants=mistakes)


@check("2.6", points=1, kind="property")
def test_symmetric_with_itself(student):
    """attention_scores(Q, Q) is symmetric: q_i . q_j = q_j . q_i"""
    Q, _K = _qk("2.6")
    got, what, _mistakes = _scores(student, Q, Q)
    s = got.array
    if not np.allclose(s, np.swapaxes(s, -1, -2), rtol=1e-10, atol=1e-12):
        raise CheckFailed(_("attention_scores(Q, Q) should be symmetric in its last two axes; it is not. "
                            "Each entry must be the dot product of one query with one key."))


# ------------------------------------------------------------------ complexity (counted, never timed)
def _complexity_inputs(B, T):
    """Q, K ([B,] T, 32): an (..., T, T, d_k) intermediate from broadcasting Q against K is far
    over the memory allowance."""
    lead = (B,) if B else ()
    return [randn((STEP, "2.7", B, T, n), lead + (T, 32)) for n in "QK"]


@check("2.7", points=1, kind="complexity")
def test_vectorised(student, request):
    """Vectorised: no Python loop over tokens or batch entries, memory within a constant factor of the results"""
    complexity.expect_numpy_step(request, student, "attention_scores", _complexity_inputs, ref.attention_scores,
                                 "attention_scores(Q, K)")
