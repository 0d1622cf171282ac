"""Hidden suite, step 3: scale_scores(scores, d_k) -> scores / sqrt(d_k). 10 points."""

from autograder.checks import complexity
from autograder.reference import variants
from autograder.checks.expect import (CheckFailed, check, expect_array, expect_close, expect_dtype,
                                      expect_shape, inputs_changed)
from autograder.i18n import _
from autograder.checks.inputs import randn, rounded
from autograder.checks.memo import Remembering
from solutions import step03_scaling

ref = Remembering(step03_scaling)     # the references' answers, remembered for the next submission

STEP = "03_scaling"
SHAPE = (2, 3, 5, 7)


def _mistakes(scores, d_k):
    """What each scaling mistake gives on these scores (d_k chosen so all differ)."""
    return {mid: scores * factor(d_k) for mid, factor in variants.SCALE_MISTAKES.items()}


def _scale(student, scores, d_k):
    what = f"scale_scores(scores, d_k={d_k})"
    got = expect_array(student.call("scale_scores", scores, d_k), what, "numpy")
    expect_shape(got, scores.shape, what)
    return got, what


@check("3.1", points=1, kind="shape")
def test_shape(student):
    """Output has the shape of the scores"""
    _scale(student, randn((STEP, "3.1"), SHAPE), 16)


@check("3.2", points=2, kind="numbers")
def test_numbers_float64(student):
    """Divided by sqrt(d_k), float64 (d_k = 16)"""
    scores = randn((STEP, "3.2"), SHAPE, scale=4.0)
    got, what = _scale(student, scores, 16)
    expect_close(got, ref.scale_scores(scores, 16), what, "float64", variants=_mistakes(scores, 16))


@check("3.3", points=2, kind="numbers")
def test_numbers_float32(student, request):
    """The same in float32 (float64 output accepted with a note: NumPy 2 promotion)"""
    s32, s64 = rounded(randn((STEP, "3.3"), SHAPE, scale=4.0), "float32")
    # d_k = 12: sqrt(12) is no power of two, so a division done in float64 (NumPy 2's promotion) gives
    # values that are not float32 numbers, and a float32 result widened afterwards is told apart
    got, what = _scale(student, s32, 12)
    # the one step where NumPy 2's promotion explains float64: `scores / np.sqrt(d_k)` (a NumPy scalar)
    expect_dtype(request, got, "float32", what, "numpy", numpy_scalar_ok=True)
    expect_close(got, ref.scale_scores(s64, 12), what, "float32", variants=_mistakes(s64, 12))


@check("3.4", points=2, kind="numbers")
def test_other_d_k(student):
    """Other key sizes: d_k = 2, 5 and 64"""
    for d_k in (2, 5, 64):
        scores = randn((STEP, "3.4", d_k), SHAPE, scale=4.0)
        got, what = _scale(student, scores, d_k)
        expect_close(got, ref.scale_scores(scores, d_k), what, "float64", variants=_mistakes(scores, d_k))


@check("3.5", points=1, kind="property")
def test_input_unchanged(student):
    """The caller's scores are left unchanged (no in-place division)"""
    scores = randn((STEP, "3.5"), SHAPE)
    student.call("scale_scores", scores, 16)
    if student.mutated:
        raise CheckFailed(inputs_changed("scale_scores(scores, d_k=16)", student.mutated, "numpy"))


@check("3.6", points=1, kind="numbers")
def test_matrix(student):
    """A plain (T_q, T_k) matrix of scores"""
    scores = randn((STEP, "3.6"), (5, 7), scale=4.0)
    got, what = _scale(student, scores, 9)
    expect_close(got, ref.scale_scores(scores, 9), what, "float64", variants=_mistakes(scores, 9))


# ------------------------------------------------------------------ complexity (counted, never timed)
def _complexity_inputs(B, T):
    """scores ([B,] T, T) and d_k = 32."""
    return [randn((STEP, "3.7", B, T), ((B,) if B else ()) + (T, T)), 32]


@check("3.7", points=1, kind="complexity")
def test_vectorised(student, request):
    """Vectorised: no Python loop over tokens or batch entries, memory within a constant factor of the results"""
    complexity.expect_numpy_step(request, student, "scale_scores", _complexity_inputs, ref.scale_scores,
                                 "scale_scores(scores, d_k)")
