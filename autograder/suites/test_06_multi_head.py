"""Hidden suite, step 6: split_heads, merge_heads and multi_head_attention (torch). 10 points.

Shapes are chosen so that no mistake can hide: B=2, T=5, D=12, h=3, so head_dim=4 differs from T
and from D. Weights are ~ N(0, 1/D), which keeps each head's scaled scores of order 1 (the
softmax is not saturated, so every scaling mistake shows in the numbers).
"""
import math

import numpy as np
import torch

from autograder import misconceptions, variants
from autograder.checks import (check, compare, expect_array, expect_close, expect_dtype, expect_finite,
                               expect_attention, expect_pair, expect_shape, gpu_usable, CheckFailed)
from autograder.inputs import randn, rounded
from autograder.tolerances import tolerance
from solutions import step06_multi_head as ref

STEP = "06_multi_head"
B, T, D, H = 2, 5, 12, 3
HD = D // H


# ------------------------------------------------------------------ references (float64, torch)
def _t(a):
    return torch.from_numpy(np.ascontiguousarray(a, dtype=np.float64))


def _ref_attention(x, Ws, h=H):
    with torch.no_grad():
        out, w = ref.multi_head_attention(_t(x), *(_t(W) for W in Ws), h)
    return out.numpy(), w.numpy()


def _inputs(key, x_scale=1.0):
    """x (B, T, D) and W_Q, W_K, W_V, W_O (D, D) ~ N(0, 1/D): scaled scores of order 1."""
    x = randn((STEP, key, "x"), (B, T, D), x_scale)
    Ws = [randn((STEP, key, name), (D, D), 1 / math.sqrt(D)) for name in ("W_Q", "W_K", "W_V", "W_O")]
    return x, Ws


def _mistakes(x, Ws, h=H):
    """{id: (out, weights)}: every known multi-head mistake applied to the same inputs."""
    return {m: variants.multi_head(x, *Ws, h, mistake=m) for m in variants.MULTI_HEAD_MISTAKES}


# ------------------------------------------------------------------ calling the student
def _tensor(value, what, device=None):
    return expect_array(value, what, "torch", device=device)


def _split(student, x, h, device=None):
    what = f"split_heads(x of shape {x.shape}, num_heads={h})"
    got = _tensor(student.call("split_heads", x, h), what, device)
    b, t, d = x.shape
    if got.shape == (b, t, h, d // h):
        raise CheckFailed(f"{what} has shape {got.shape}; expected {(b, h, t, d // h)}. The head axis must come "
                          "before the time axis: after the view to (B, T, h, head_dim), transpose(1, 2).")
    expect_shape(got, (b, h, t, d // h), what)
    return got, what


def _merge(student, x, device=None):
    what = f"merge_heads(x of shape {x.shape})"
    got = _tensor(student.call("merge_heads", x), what, device)
    b, h, t, hd = x.shape
    expect_shape(got, (b, t, h * hd), what)
    return got, what


def _attention(student, x, Ws, h=H, device=None):
    """Call multi_head_attention; check it returns two tensors of the right shapes."""
    what = f"multi_head_attention(x, W_Q, W_K, W_V, W_O, {h})"
    out, w = expect_pair(student.call("multi_head_attention", x, *Ws, h), what, ("out", "weights"))
    out = _tensor(out, f"{what}: out", device)
    w = _tensor(w, f"{what}: weights", device)
    b, t, d = x.shape
    if out.shape == (b, h, t, t) and w.shape == (b, t, d):
        raise CheckFailed(f"{what} returned (weights, out): return them in the order (out, weights).")
    expect_shape(out, (b, t, d), f"{what}: out")
    if w.shape == (b, t, t):
        raise CheckFailed(f"{what}: weights has shape {w.shape}; expected {(b, h, t, t)}. Return every head's "
                          "weights, (B, num_heads, T, T), not their average over the heads.")
    expect_shape(w, (b, h, t, t), f"{what}: weights")
    return out, w, what


def _expect_moved(got, expected, what, mistake, variant):
    """Splitting or merging heads only moves numbers: every value must be copied exactly."""
    if np.array_equal(got.array, expected):
        return
    expect_close(got, expected, what, "float64", variants={mistake: variant})   # far off: says where, names the mistake
    worst = float(np.max(np.abs(got.array - expected)))
    raise CheckFailed(f"{what}: the values are close to the expected ones but not identical (largest difference "
                      f"{worst:.3g}). Splitting or merging heads only rearranges numbers (view/reshape and "
                      "transpose), so each value should come out exactly as it went in.")


def _expect_rows_sum_to_one(w, what, wrong_axis=None):
    """Weights in [0, 1], each row summing to 1 within the rounding of the dtype they came in."""
    tol = {"float64": 1e-9, "float32": 1e-5}.get(w.dtype, 1e-2)
    p = w.array.astype(np.float64)
    if p.min() < -tol or p.max() > 1 + tol:
        raise CheckFailed(f"{what}: attention weights must lie in [0, 1]; found {p.min():.4g} .. {p.max():.4g}.")
    sums = p.sum(axis=-1)
    worst = np.unravel_index(np.argmax(np.abs(sums - 1)), sums.shape)
    if abs(sums[worst] - 1) > tol:
        found = []
        if wrong_axis is not None:
            rtol, atol = tolerance("float64" if w.dtype == "float64" else "float32", "composed")
            if compare(p, wrong_axis, 10 * rtol, 10 * atol).ok:
                found = ["softmax-wrong-axis"]
        raise CheckFailed(f"{what}: each query's weights over the keys (the last axis) should sum to 1; "
                          f"the row at (batch, head, query) = {tuple(int(i) for i in worst)} sums to "
                          f"{sums[worst]:.10g}." + ("\n" + misconceptions.describe(found) if found else ""), found)


# ------------------------------------------------------------------ graded checks
@check("6.1", points=1, kind="numbers")
def test_split_heads(student):
    """split_heads puts head i's columns i*hd .. (i+1)*hd-1 on the head axis (exact values, float64)"""
    for h in (H, 4):            # head_dim 4 and 3: neither equals T=5
        x = randn((STEP, "6.1", h), (B, T, D))
        got, what = _split(student, x, h)
        _expect_moved(got, ref.split_heads(_t(x), h).numpy(), what,
                      "heads-reshape-no-transpose", variants.split_heads_no_transpose(x, h))


@check("6.2", points=1, kind="numbers")
def test_merge_heads(student):
    """merge_heads undoes split_heads: (B, h, T, hd) -> (B, T, h*hd) (exact values, float64)"""
    for h in (H, 4):
        x = randn((STEP, "6.2", h), (B, h, T, D // h))
        got, what = _merge(student, x)
        _expect_moved(got, ref.merge_heads(_t(x)).numpy(), what,
                      "heads-merge-no-transpose", variants.merge_heads_no_transpose(x))


@check("6.3", points=1, kind="shape")
def test_shapes(student):
    """multi_head_attention returns (out, weights) of shapes (B, T, D) and (B, h, T, T)"""
    x, Ws = _inputs("6.3")
    _attention(student, x, Ws)


@check("6.4", points=3, kind="numbers")
def test_numbers_float64(student, request):
    """multi_head_attention values, out and weights, float64"""
    x, Ws = _inputs("6.4")
    out, w, what = _attention(student, x, Ws)
    expect_dtype(request, out, "float64", f"{what}: out", "torch")
    expect_dtype(request, w, "float64", f"{what}: weights", "torch")
    expect_attention(out, w, _ref_attention(x, Ws), what, "float64", _mistakes(x, Ws))


@check("6.5", points=2, kind="numbers")
def test_numbers_float32(student, request):
    """multi_head_attention values, float32 (dtype kept)"""
    x, Ws = _inputs("6.5")
    (x32, x64), pairs = rounded(x, "float32"), [rounded(W, "float32") for W in Ws]
    out, w, what = _attention(student, x32, [p[0] for p in pairs])
    expect_dtype(request, out, "float32", f"{what}: out", "torch")
    expect_dtype(request, w, "float32", f"{what}: weights", "torch")
    W64 = [p[1] for p in pairs]
    expect_attention(out, w, _ref_attention(x64, W64), what, "float32", _mistakes(x64, W64))


@check("6.6", points=1, kind="property")
def test_properties(student):
    """Attention weights lie in [0, 1] and each query's row sums to 1, in every head"""
    x, Ws = _inputs("6.6")
    out, w, what = _attention(student, x, Ws)
    _expect_rows_sum_to_one(w, f"{what}: weights",
                            wrong_axis=variants.multi_head(x, *Ws, H, mistake="softmax-wrong-axis")[1])


@check("6.7", points=1, kind="stability")
def test_large_inputs_float32(student):
    """No overflow: out and weights stay finite when scores reach the hundreds (float32)"""
    x, Ws = _inputs("6.7", x_scale=30.0)
    (x32, x64), pairs = rounded(x, "float32"), [rounded(W, "float32") for W in Ws]
    out, w, what = _attention(student, x32, [p[0] for p in pairs])
    if not (np.isfinite(w.array).all() and np.isfinite(out.array).all()):
        # what a softmax without the max subtraction gives on these scores, in float32
        q = variants.split_heads(x64 @ pairs[0][1], H)
        k = variants.split_heads(x64 @ pairs[1][1], H)
        scores = (q @ variants.swap_last(k) / math.sqrt(HD)).astype(np.float32)
        naive = variants.naive_softmax(scores)
        found = ["softmax-unstable"] if not np.isfinite(naive).all() and not np.isfinite(w.array).all() else []
        for got, name in ((w, "weights"), (out, "out")):
            try:
                expect_finite(got, f"{what}: {name}",
                              f"The largest scores here are about {np.abs(scores).max():.0f}; exp() of more "
                              "than 88 overflows float32. torch.softmax, or subtracting each row's maximum "
                              "before exp(), avoids that.")
            except CheckFailed as failure:
                raise CheckFailed(failure.message + ("\n" + misconceptions.describe(found) if found else ""),
                                  found) from None


# ------------------------------------------------------------------ GPU (no points; skipped without CUDA)
def _on_gpu(student, cuda, request, dtype, key):
    x, Ws = _inputs(key)
    pairs = [rounded(a, dtype) for a in [x] + Ws]
    low, exact = [p[0] for p in pairs], [p[1] for p in pairs]
    gpu = student.on(cuda, cast=None if dtype == "float32" else dtype)
    out, w, what = _attention(gpu, low[0], low[1:], device=cuda)
    what += f" on {cuda} in {dtype}"
    expect_dtype(request, out, dtype, f"{what}: out", "torch")
    expect_dtype(request, w, dtype, f"{what}: weights", "torch")
    # half precision: too coarse to tell mistakes apart, the CPU checks name them
    mistakes = _mistakes(exact[0], exact[1:]) if dtype == "float32" else None
    expect_attention(out, w, _ref_attention(exact[0], exact[1:]), what, dtype, mistakes)
    return gpu, low, exact


@check("6.8", points=0, kind="device")
def test_cuda_float32(student, cuda, request):
    """On CUDA, float32: results stay on the GPU in float32 and match the reference"""
    with gpu_usable():
        gpu, low, exact = _on_gpu(student, cuda, request, "float32", "6.8")
        got, what = _split(gpu, low[0], H, device=cuda)
        expect_dtype(request, got, "float32", what + f" on {cuda}", "torch")
        expect_close(got, ref.split_heads(_t(exact[0]), H).numpy(), what + f" on {cuda}", "float32")
        heads = rounded(randn((STEP, "6.8", "heads"), (B, H, T, HD)), "float32")
        got, what = _merge(gpu, heads[0], device=cuda)
        expect_dtype(request, got, "float32", what + f" on {cuda}", "torch")
        expect_close(got, ref.merge_heads(_t(heads[1])).numpy(), what + f" on {cuda}", "float32")


@check("6.9", points=0, kind="device")
def test_cuda_float16(student, cuda, request):
    """On CUDA, float16: results stay float16 on the GPU and match the reference"""
    with gpu_usable():
        _on_gpu(student, cuda, request, "float16", "6.9")


@check("6.10", points=0, kind="device")
def test_cuda_bfloat16(student, cuda, request):
    """On CUDA, bfloat16: results stay bfloat16 on the GPU and match the reference"""
    with gpu_usable():
        _on_gpu(student, cuda, request, "bfloat16", "6.10")
