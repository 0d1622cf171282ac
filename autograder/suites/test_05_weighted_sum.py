"""Hidden suite, step 5: weighted_sum(weights, V) and self_attention(X, W_Q, W_K, W_V). 10 points."""
import numpy as np

from autograder import variants
from autograder.checks import (CheckFailed, check, expect_array, expect_close, expect_dtype, expect_pair,
                               expect_shape, note)
from autograder.inputs import randn, rounded
from autograder.misconceptions import CATALOGUE
from solutions import step05_weighted_sum as ref

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
    """weighted_sum gives (..., T_q, d_v) for T_q != T_k"""
    _weighted_sum(student, *_weights_v("5.1"))


@check("5.2", points=2, kind="numbers")
def test_weighted_sum_numbers(student):
    """weighted_sum = weights @ V, float64 (T_q == T_k, so a transpose would fit the shape)"""
    weights, V = _weights_v("5.2", T_q=7)
    got, what = _weighted_sum(student, weights, V)
    expect_close(got, ref.weighted_sum(weights, V), what, "float64",
                 variants={"weights-transposed": variants.swap_last(weights) @ V})


# ------------------------------------------------------------------ self_attention
def _inputs(key, scale=1.0):
    X = randn((STEP, key, "X"), (2, 3, T, D_MODEL), scale=scale)
    # weights ~ N(0, 1/d_model): scores of order 1, so the softmax is far from saturated
    Ws = [randn((STEP, key, n), (D_MODEL, d), scale=D_MODEL ** -0.5)
          for n, d in (("Q", D_K), ("K", D_K), ("V", D_V))]
    return X, Ws


def _attend(student, X, Ws):
    what = "self_attention(X, W_Q, W_K, W_V)"
    out, weights = expect_pair(student.call("self_attention", X, *Ws), what)
    out = expect_array(out, f"out from {what}", "numpy")
    weights = expect_array(weights, f"weights from {what}", "numpy")
    expect_shape(out, X.shape[:-1] + (D_V,), "out")
    expect_shape(weights, X.shape[:-1] + (T,), "weights")
    return out, weights


def _expect_attention(out, weights, X64, Ws64, dtype):
    Q, K, V = (X64 @ W for W in Ws64)
    mistakes = variants.attention_mistakes(Q, K, V, D_K, d_model=D_MODEL)
    exp_out, exp_w = ref.self_attention(X64, *Ws64)
    # weights first: a mistake shows most plainly there
    expect_close(weights, exp_w, "weights", dtype, "composed",
                 variants={m: w for m, (o, w) in mistakes.items() if m != "weights-transposed"})
    expect_close(out, exp_out, "out", dtype, "composed", variants={m: o for m, (o, w) in mistakes.items()})


@check("5.3", points=1, kind="shape")
def test_self_attention_shapes(student):
    """self_attention returns out (..., T, d_v) and weights (..., T, T)"""
    _attend(student, *_inputs("5.3"))


@check("5.4", points=2, kind="numbers")
def test_self_attention_float64(student):
    """softmax(Q K^T / sqrt(d_k)) V and its weights, float64"""
    X, Ws = _inputs("5.4")
    out, weights = _attend(student, X, Ws)
    _expect_attention(out, weights, X, Ws, "float64")


@check("5.5", points=2, kind="numbers")
def test_self_attention_float32(student, request):
    """The same in float32 (dtype kept)"""
    X, Ws = _inputs("5.5")
    X32, X64 = rounded(X, "float32")
    pairs = [rounded(W, "float32") for W in Ws]
    out, weights = _attend(student, X32, [p[0] for p in pairs])
    expect_dtype(request, out, "float32", "out", "numpy")
    expect_dtype(request, weights, "float32", "weights", "numpy")
    _expect_attention(out, weights, X64, [p[1] for p in pairs], "float32")


@check("5.6", points=1, kind="property")
def test_weights_are_distributions(student):
    """Each query's weights lie in [0, 1] and sum to 1 over the keys"""
    _, weights = _attend(student, *_inputs("5.6"))
    w = weights.array.astype(np.float64)
    sums = w.sum(axis=-1)
    if w.min() < 0 or w.max() > 1 or not np.allclose(sums, 1, rtol=0, atol=1e-9):
        wrong_axis = np.allclose(w.sum(axis=-2), 1, atol=1e-9)
        raise CheckFailed("weights: each row (one query, all keys) must lie in [0, 1] and sum to 1; "
                          f"row sums range from {sums.min():.6g} to {sums.max():.6g}.",
                          ["softmax-wrong-axis"] if wrong_axis else [])


@check("5.7", points=1, kind="stability")
def test_large_inputs(student, request):
    """Large-magnitude X (scores in the hundreds): no NaN or inf, values still right"""
    X, Ws = _inputs("5.7", scale=30.0)
    out, weights = _attend(student, X, Ws)
    if not (np.isfinite(out.array).all() and np.isfinite(weights.array).all()):
        raise CheckFailed("self_attention gave NaN or inf for large inputs. "
                          + CATALOGUE["softmax-unstable"].text(), ["softmax-unstable"])
    try:
        _expect_attention(out, weights, X, Ws, "float64")
    except CheckFailed as failure:
        if not failure.misconceptions:
            raise
        # a mistake the numbers checks already charge for: stable is all this check asks
        note(request, f"Stable, but the values show the mistake named in 5.4 ({', '.join(failure.misconceptions)}); "
                      "that costs the numbers points, not these.")
