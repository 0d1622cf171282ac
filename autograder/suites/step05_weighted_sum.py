"""Hidden suite, step 5: weighted_sum(weights, V) and self_attention(X, W_Q, W_K, W_V). 10 points."""
import numpy as np

from autograder.checks import attention, complexity
from autograder.reference import variants
from autograder.checks.expect import (check, example, expect_array, expect_close, expect_dtype, expect_full_precision,
                                      expect_shape, fail, show_example)
from autograder.i18n import _
from autograder.checks.inputs import randn, rounded
from autograder.checks.memo import Remembering
from solutions import step05_weighted_sum

ref = Remembering(step05_weighted_sum)     # the references' answers, remembered for the next submission

STEP = "05_weighted_sum"
D_MODEL, D_K, D_V, T = 12, 6, 4, 5


# ------------------------------------------------------------------ weighted_sum
def _weights_v(key, T_q=5, T_k=7):
    weights = variants.softmax(randn((STEP, key, "s"), (2, 3, T_q, T_k)))
    return weights, randn((STEP, key, "V"), (2, 3, T_k, D_V))


def _weighted_sum(student, weights, V):
    what = "weighted_sum(weights, V)"
    got = expect_array(student.call("weighted_sum", weights, V), what, "numpy")
    expect_shape(got, weights.shape[:-1] + (V.shape[-1],), what)
    return got, what


@check("5.1", points=1, kind="shape")
def test_weighted_sum_shape(student):
    """weighted_sum gives (..., T_q, d_v) for T_q != T_k (fewer and more queries than keys)"""
    _weighted_sum(student, *_weights_v("5.1"))
    _weighted_sum(student, *_weights_v("5.1 more queries", T_q=7, T_k=5))


@check("5.2", points=2, kind="numbers")
def test_weighted_sum_numbers(student, request):
    """weighted_sum = weights @ V, float64 and float32 (dtype kept; T_q == T_k, so a transpose would fit the shape)"""
    weights, V = _weights_v("5.2", T_q=7)
    got, what = _weighted_sum(student, weights, V)
    expect_close(got, ref.weighted_sum(weights, V), what, "float64",
                 variants={"weights-transposed": variants.swap_last(weights) @ V})
    (w32, w64), (v32, v64) = rounded(weights, "float32"), rounded(V, "float32")
    got, what = _weighted_sum(student, w32, v32)
    expect_dtype(request, got, "float32", what, "numpy")
    expect_close(got, ref.weighted_sum(w64, v64), what, "float32",
                 variants={"weights-transposed": variants.swap_last(w64) @ v64})


# ------------------------------------------------------------------ self_attention
def _inputs(key, scale=1.0):
    X = randn((STEP, key, "X"), (2, 3, T, D_MODEL), scale=scale)
    # weights ~ N(0, 1/d_model): scores of order 1, so the softmax is far from saturated
    Ws = [randn((STEP, key, n), (D_MODEL, d), scale=D_MODEL ** -0.5)
          for n, d in (("Q", D_K), ("K", D_K), ("V", D_V))]
    return X, Ws


ATTEND = "self_attention(X, W_Q, W_K, W_V)"


def _attend(student, X, Ws):
    """(out, weights) of the student's self_attention, two numpy arrays of the right shapes."""
    return attention.expect_outputs(student.call("self_attention", X, *Ws), ATTEND, X.shape[:-1] + (D_V,),
                                    X.shape[:-1] + (T,), "numpy", detect_swap=False, shape_labels=("out", "weights"),
                                    labels=[_("{name} from {what}", name=n, what=ATTEND) for n in ("out", "weights")])


def _expect_attention(out, weights, X64, Ws64, dtype, level="composed"):
    mistakes = variants.attention_mistakes(*ref.project_qkv(X64, *Ws64), D_K, d_model=D_MODEL)
    exp_out, exp_w = ref.self_attention(X64, *Ws64)
    # weights first: a mistake shows most plainly there
    expect_close(weights, exp_w, "weights", dtype, level,
                 variants={m: w for m, (o, w) in mistakes.items() if m != "weights-transposed"})
    expect_close(out, exp_out, "out", dtype, level, variants={m: o for m, (o, w) in mistakes.items()})


@check("5.3", points=1, kind="shape")
def test_self_attention_shapes(student):
    """self_attention returns out (..., T, d_v) and weights (..., T, T)"""
    _attend(student, *_inputs("5.3"))


@check("5.4", points=2, kind="numbers")
def test_self_attention_float64(student):
    """softmax(Q K^T / sqrt(d_k)) V and its weights, float64"""
    X, Ws = _inputs("5.4")
    out, weights = _attend(student, X, Ws)
    # float32 arrays inside a float64 run (K or V rounded) stay within the float64 tolerance, which
    # admits one float32 constant: the child's tracer sees them instead
    expect_full_precision(student, student.call_request("self_attention", X, *Ws), ATTEND)
    _expect_attention(out, weights, X, Ws, "float64")


@check("5.5", points=1, kind="numbers")
def test_self_attention_float32(student, request):
    """The same in float32 (dtype kept)"""
    X, Ws = _inputs("5.5")
    X32, X64 = rounded(X, "float32")
    pairs = [rounded(W, "float32") for W in Ws]
    out, weights = _attend(student, X32, [p[0] for p in pairs])
    # no leniency here: NumPy 2's promotion is accepted only in the scaling step itself (step 3, whose
    # note teaches that math.sqrt keeps float32). A float64 result in the chain cannot be told apart
    # by its values from float32 code widened anywhere along the way (the mutation audit found five
    # such places), so the chain must keep float32, as its contract says
    expect_dtype(request, out, "float32", "out", "numpy")
    expect_dtype(request, weights, "float32", "weights", "numpy")
    _expect_attention(out, weights, X64, [p[1] for p in pairs], "float32")


@check("5.6", points=1, kind="property")
def test_weights_are_distributions(student):
    """Each query's weights lie in [0, 1] and sum to 1 over the keys"""
    X, Ws = _inputs("5.6")
    _out, weights = _attend(student, X, Ws)
    w = weights.array.astype(np.float64)
    sums = w.sum(axis=-1)
    if w.min() < 0 or w.max() > 1 or not np.allclose(sums, 1, rtol=0, atol=1e-9):
        # named when the values are the wrong-axis variant's, here and on most of the step's inputs (Evidence)
        wrong_axis = lambda: variants.attention_mistakes(*ref.project_qkv(X, *Ws), D_K,   # noqa: E731
                                                         d_model=D_MODEL)["softmax-wrong-axis"][1]
        fail(_("weights: each row (one query, all keys) must lie in [0, 1] and sum to 1; "
               "row sums range from {low} to {high}.", low=f"{sums.min():.6g}", high=f"{sums.max():.6g}"),
             attention.wrong_axis_found(w, wrong_axis, weights.dtype))


def _nonfinite(dtype, mistake):
    fail(_("self_attention gave NaN or inf for large inputs in {dtype}.", dtype=dtype), [mistake])


@check("5.7", points=1, kind="stability")
def test_large_inputs(student, request):
    """Large-magnitude X (scores in the thousands), float64 and float32: no NaN or inf, values still right"""
    X, Ws = _inputs("5.7", scale=30.0)
    for dtype in ("float64", "float32"):     # exp() overflows above 709 and 88: both far below the scores
        (X_low, X64), pairs = rounded(X, dtype), [rounded(W, dtype) for W in Ws]
        W64 = [p[1] for p in pairs]
        out, weights = _attend(student, X_low, [p[0] for p in pairs])
        Q, K, _V = ref.project_qkv(X64, *W64)
        attention.expect_stable(request, (out, weights), ATTEND, dtype, attention.scaled_scores(Q, K),
                                lambda level: _expect_attention(out, weights, X64, W64, dtype, level=level), "5.4",
                                nonfinite=lambda mistake: _nonfinite(dtype, mistake))


# ------------------------------------------------------------------ complexity (counted, never timed)
def _weights_v_inputs(B, T):
    """weights ([B,] T, T), rows summing to 1, and V ([B,] T, 32): an (..., T, T, d_v) intermediate,
    what broadcasting the weights against V builds, is T times the result."""
    lead = (B,) if B else ()
    return [variants.softmax(randn((STEP, "5.8", B, T, "s"), lead + (T, T))),
            randn((STEP, "5.8", B, T, "V"), lead + (T, 32))]


def _attention_inputs(B, T):
    """X ([B,] T, 32), W_Q, W_K (32, 16), W_V (32, 32)."""
    X = randn((STEP, "5.8", B, T, "X"), ((B,) if B else ()) + (T, 32))
    return [X] + [randn((STEP, "5.8", n), (32, d), scale=32 ** -0.5) for n, d in (("Q", 16), ("K", 16), ("V", 32))]


@check("5.8", points=1, kind="complexity")
def test_vectorised(student, request):
    """Vectorised: no Python loop over tokens or batch entries, memory within a constant factor of the results"""
    complexity.expect_numpy_step(request, student, "weighted_sum", _weights_v_inputs, ref.weighted_sum,
                                 "weighted_sum(weights, V)", misconception="broadcast-weighted-sum")
    complexity.expect_numpy_step(request, student, "self_attention", _attention_inputs, ref.self_attention,
                                 "self_attention(X, W_Q, W_K, W_V)")


# ------------------------------------------------------------------ the feedback page's example (not a check)
@example
def test_example(student, request):
    """self_attention's weights for one X (5, 12), drawn as a heatmap beside the reference's"""
    key, d_model = ("html", STEP), attention.EXAMPLE_D_MODEL
    X = randn(key + ("X",), (attention.EXAMPLE_T, d_model))
    Ws = [randn(key + (n,), (d_model, d), d_model ** -0.5)
          for n, d in (("Q", attention.EXAMPLE_D_K), ("K", attention.EXAMPLE_D_K), ("V", attention.EXAMPLE_D_V))]
    show_example(request, _("the weights from self_attention(X, W_Q, W_K, W_V), X of shape (5, 12)"),
                 ref.self_attention(X, *Ws)[1], lambda: attention.second_of_pair(student.call("self_attention", X, *Ws)))
