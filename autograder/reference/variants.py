"""Known mistakes applied to the reference, so a wrong answer can be recognised by value.

Everything here is float64 numpy. Each function computes what a student who made one specific
mistake would get on the same inputs; `checks.expect_close` compares the student's output with
these when it does not match the correct one, and names the mistake that fits.
"""
import math

import numpy as np


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def naive_softmax(x, axis=-1):
    """softmax without subtracting the max: overflows on large inputs (in x's own dtype)."""
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(x)
        return e / np.sum(e, axis=axis, keepdims=True)


def global_max_softmax(x, axis=-1):
    """softmax shifted by the maximum of the whole array, not of each row (in x's own dtype): rows far
    below that maximum underflow to 0 / 0 = nan."""
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        e = np.exp(x - np.max(x))
        return e / np.sum(e, axis=axis, keepdims=True)


def unstable_softmax_mistake(got, scores, axis=-1):
    """Which unstable softmax the non-finite values of `got` show, for softmax weights computed from
    `scores` (in the dtype the student's code worked in): "softmax-unstable" (no max subtracted: exp()
    overflows, inf / inf) or "softmax-global-max" (the whole array's max: exp() underflows, 0 / 0).
    The one whose NaN and inf entries are nearest the student's."""
    bad = ~np.isfinite(np.asarray(got, dtype=np.float64))
    scores = np.asarray(scores)
    candidates = {"softmax-unstable": naive_softmax(scores, axis), "softmax-global-max": global_max_softmax(scores, axis)}
    return min(candidates, key=lambda mid: int(np.sum(bad != ~np.isfinite(candidates[mid].astype(np.float64)))))


# the factor each scaling mistake multiplies the raw scores by, given d_k
SCALE_MISTAKES = {
    "scale-multiplied": lambda d: math.sqrt(d),
    "scale-missing": lambda d: 1.0,
    "scale-by-d": lambda d: 1.0 / d,
}


def swap_last(x):
    return np.swapaxes(x, -1, -2)


def attend(Q, K, V, factor, transpose_scores=False, transpose_weights=False, axis=-1):
    """softmax(factor * Q K^T) V with optional mistakes. Q, K: (..., T, d); V: (..., T, d_v).

    Returns (out, weights). With transpose_scores the scores are K Q^T; with transpose_weights
    the output is weights^T V; `axis` is the axis the softmax normalises over.
    """
    scores = Q @ swap_last(K)
    if transpose_scores:
        scores = swap_last(scores)
    weights = softmax(scores * factor, axis=axis)
    out = (swap_last(weights) if transpose_weights else weights) @ V
    return out, weights


def attention_mistakes(Q, K, V, d_k, d_model=None, with_scale=True):
    """{misconception id: (out, weights)} for single-head attention on the given Q, K, V.

    With d_model (!= d_k) given, also the lesson's habit of scaling by sqrt(d_model).
    """
    right = 1.0 / math.sqrt(d_k)
    found = {
        "scores-transposed": attend(Q, K, V, right, transpose_scores=True),
        "weights-transposed": attend(Q, K, V, right, transpose_weights=True),
        "softmax-wrong-axis": attend(Q, K, V, right, axis=-2),
    }
    if with_scale:
        for mid, factor in SCALE_MISTAKES.items():
            found[mid] = attend(Q, K, V, factor(d_k))
        if d_model is not None and d_model != d_k:
            found["scale-by-d-model"] = attend(Q, K, V, 1.0 / math.sqrt(d_model))
    return found


def split_heads(x, h):
    """(B, T, D) -> (B, h, T, D/h), correctly."""
    B, T, D = x.shape
    return x.reshape(B, T, h, D // h).transpose(0, 2, 1, 3)


def split_heads_no_transpose(x, h):
    """The mistake: reshape (B, T, D) straight to (B, h, T, D/h)."""
    B, T, D = x.shape
    return x.reshape(B, h, T, D // h)


def merge_heads(x):
    B, h, T, hd = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, T, h * hd)


def merge_heads_no_transpose(x):
    B, h, T, hd = x.shape
    return x.reshape(B, T, h * hd)


def multi_head(x, Wq, Wk, Wv, Wo, h, bq=None, bk=None, bv=None, bo=None, mistake=None):
    """Multi-head attention (x @ W + b convention) with at most one named mistake applied.

    x: (B, T, D); returns out (B, T, D) and weights (B, h, T, T).
    """
    B, T, D = x.shape
    hd = D // h

    def lin(W, b):
        return x @ W + (0 if b is None else b)

    q, k, v = lin(Wq, bq), lin(Wk, bk), lin(Wv, bv)
    if mistake == "projection-swapped":        # V and Q trade matrices
        q, v = v, q
    split = split_heads_no_transpose if mistake == "heads-reshape-no-transpose" else split_heads
    q, k, v = split(q, h), split(k, h), split(v, h)               # (B, h, T, hd)
    factor = {"scale-by-d-model": 1 / math.sqrt(D), "scale-multiplied": math.sqrt(hd),
              "scale-missing": 1.0, "scale-by-d": 1 / hd}.get(mistake, 1 / math.sqrt(hd))
    heads, weights = attend(q, k, v, factor,
                            transpose_scores=mistake == "scores-transposed",
                            transpose_weights=mistake == "weights-transposed",
                            axis=-2 if mistake == "softmax-wrong-axis" else -1)
    merged = (merge_heads_no_transpose if mistake == "heads-merge-no-transpose" else merge_heads)(heads)
    if mistake == "missing-output-projection":
        return merged, weights
    return merged @ Wo + (0 if bo is None else bo), weights


MULTI_HEAD_MISTAKES = ("scale-by-d-model", "scale-multiplied", "scale-missing", "scale-by-d",
                       "scores-transposed", "weights-transposed", "softmax-wrong-axis",
                       "heads-reshape-no-transpose", "heads-merge-no-transpose",
                       "missing-output-projection", "projection-swapped")
