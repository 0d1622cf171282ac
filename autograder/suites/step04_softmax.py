"""Hidden suite, step 4: softmax(x, axis=-1), numerically stable, any rank. 10 points."""
import numpy as np

from autograder.checks import attention, complexity
from autograder.reference import variants
from autograder.checks.expect import (check, example, expect_array, expect_close, expect_dtype, expect_finite,
                                      expect_shape, fail, show_example, CheckFailed)
from autograder.i18n import _
from autograder.checks.inputs import randn, rounded
from autograder.checks.memo import Remembering
from solutions import step04_softmax

ref = Remembering(step04_softmax)     # the references' answers, remembered for the next submission

STEP = "04_softmax"
SHAPE = (2, 3, 7)   # every axis a different length, so a wrong axis cannot hide


def _softmax(student, x, **kwargs):
    what = "softmax(x" + "".join(f", {k}={v}" for k, v in kwargs.items()) + ")"
    got = expect_array(student.call("softmax", x, **kwargs), what, "numpy")
    expect_shape(got, x.shape, what)
    return got, what


def _wrong_axes(x, axis):
    """Softmax over each other axis: what a student normalising the wrong way would get."""
    axis = axis % x.ndim
    return {"softmax-wrong-axis": [variants.softmax(x, a) for a in range(x.ndim) if a != axis]}


def _expect_softmax(got, x64, what, dtype, axis=-1, level="op"):
    wrong = _wrong_axes(x64, axis)["softmax-wrong-axis"]
    # one id, several ways to be wrong: whichever wrong axis matches names it
    for candidate in wrong:
        try:
            expect_close(got, ref.softmax(x64, axis=axis), what, dtype, level,
                         variants={"softmax-wrong-axis": candidate})
            return
        except CheckFailed as failure:
            if failure.misconceptions:
                raise
            last = failure
    raise last


@check("4.1", points=1, kind="shape")
def test_shape(student):
    """Output has the input's shape (rank 3)"""
    _softmax(student, randn((STEP, 1), SHAPE))


@check("4.2", points=1, kind="numbers")
def test_numbers_float64(student):
    """Values along the last axis, float64"""
    x = randn((STEP, 2), SHAPE, scale=2.0)
    got, what = _softmax(student, x)
    _expect_softmax(got, x, what, "float64")


@check("4.3", points=1, kind="numbers")
def test_numbers_float32(student, request):
    """Values along the last axis, float32 (dtype kept)"""
    x32, x64 = rounded(randn((STEP, 3), SHAPE, scale=2.0), "float32")
    got, what = _softmax(student, x32)
    expect_dtype(request, got, "float32", what, "numpy")
    _expect_softmax(got, x64, what, "float32")


@check("4.4", points=1, kind="numbers")
def test_axis_argument(student):
    """The axis argument is honoured (axis=0 and axis=1)"""
    x = randn((STEP, 4), SHAPE, scale=2.0)
    for axis in (0, 1):
        got, what = _softmax(student, x, axis=axis)
        _expect_softmax(got, x, what, "float64", axis=axis)


@check("4.5", points=1, kind="property")
def test_properties(student):
    """Weights lie in [0, 1], sum to 1, and ignore a constant shift of the row"""
    x = randn((STEP, 5), SHAPE, scale=3.0)
    got, what = _softmax(student, x)
    p = got.array.astype(np.float64)
    if p.min() < 0 or p.max() > 1:
        fail(_("{what}: values must lie in [0, 1]; found {low} .. {high}.",
               what=what, low=f"{p.min():.4g}", high=f"{p.max():.4g}"))
    index, total = attention.worst_row(p)
    if abs(total - 1) > 1e-9:
        # named when the values are the softmax over another axis, here and on the step's other inputs
        # (Evidence): rows summing to 1 along another axis on this one input alone would name it
        fail(_("{what}: the weights along the last axis should sum to 1; the row at {index} sums to {total}. "
               "Did you divide by the sum over the right axis (with keepdims=True)?",
               what=what, index=index, total=f"{total:.6g}"),
             attention.wrong_axis_found(p, _wrong_axes(x, -1)["softmax-wrong-axis"], got.dtype))
    shifted, _what = _softmax(student, x + 10.0)
    if not np.allclose(shifted.array, p, rtol=1e-9, atol=1e-12):
        fail(_("softmax(x + 10) should equal softmax(x): adding the same number to every "
               "entry of a row cannot change the weights."))


@check("4.6", points=1, kind="numbers")
def test_minus_infinity(student):
    """-inf entries get weight exactly 0 (as in a masked row)"""
    x = randn((STEP, 6), SHAPE)
    x[..., ::3] = -np.inf          # entries 0, 3, 6 of each row masked; four stay finite
    got, what = _softmax(student, x)
    expect_finite(got, what, _("A -inf score must give weight 0: exp(-inf - max) is exactly 0 when the "
                               "row has a finite maximum."))
    expect_close(got, ref.softmax(x), what, "float64")
    if np.any(got.array[..., ::3] != 0):
        fail(_("{what}: entries that were -inf must get weight exactly 0.", what=what))


def _expect_stable(request, got, x64, what, dtype):
    """Large scores x64 (in `dtype`): finite, and the values of 4.2 (a mistake named there is a note here)."""
    attention.expect_stable(
        request, got, what, dtype, x64, lambda level: _expect_softmax(got, x64, what, dtype, level=level), "4.2",
        # the scores are this step's inputs, exact: no rounding grows with them, the op tolerance holds
        level="op",
        # NaN or inf: counted against the expected values, naming the unstable softmax that fits
        nonfinite=lambda mistake: expect_close(got, ref.softmax(x64), what, dtype, variants={mistake: got.array}))


@check("4.7", points=1, kind="stability")
def test_large_float64(student, request):
    """No overflow for scores around +-1000, float64"""
    x = randn((STEP, 7), SHAPE, scale=1000.0)
    got, what = _softmax(student, x)
    _expect_stable(request, got, x, what, "float64")


@check("4.8", points=1, kind="stability")
def test_large_float32(student, request):
    """No overflow for scores around +-100, float32 (exp overflows float32 above 88)"""
    x32, x64 = rounded(randn((STEP, 8), SHAPE, scale=100.0), "float32")
    got, what = _softmax(student, x32)
    _expect_stable(request, got, x64, what, "float32")


# ------------------------------------------------------------------ complexity and shortcuts
def _complexity_inputs(B, T):
    """Scores ([B,] T, T): softmax over the keys of every query."""
    return [randn((STEP, "4.9", B, T), ((B,) if B else ()) + (T, T), scale=2.0)]


@check("4.9", points=1, kind="complexity")
def test_vectorised(student, request):
    """Vectorised: no Python loop over tokens or batch entries, memory within a constant factor of the results"""
    complexity.expect_numpy_step(request, student, "softmax", _complexity_inputs, ref.softmax, "softmax(x)")


@check("4.10", points=1, kind="api")
def test_no_library_softmax(student):
    """Calls none of the library softmax functions (torch.softmax, F.softmax, scipy.special.softmax, ...)"""
    names = complexity.forbidden_apis(STEP)
    x = randn((STEP, "4.10"), SHAPE, scale=2.0)
    calls = [("softmax(x)", (x,), {}), ("softmax(x) in float32", (x.astype(np.float32),), {}),
             ("softmax(x, axis=0)", (x,), {"axis": 0})]
    complexity.expect_no_forbidden([student.measure(student.call_request("softmax", *args, **kwargs), what,
                                                    forbidden=names, count=False)
                                    for what, args, kwargs in calls], "softmax(x)", names)


# ------------------------------------------------------------------ the feedback page's example (not a check)
@example
def test_example(student, request):
    """softmax of one (5, 7) array, drawn as a heatmap beside the reference's"""
    x = randn(("html", STEP), (attention.EXAMPLE_T, attention.EXAMPLE_T + 2), scale=2.0)
    show_example(request, _("softmax(x) for x of shape (5, 7)"), ref.softmax(x), lambda: student.call("softmax", x))
