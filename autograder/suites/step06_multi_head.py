"""Hidden suite, step 6: split_heads, merge_heads and multi_head_attention (torch). 10 points.

Shapes are chosen so that no mistake can hide: B=2, T=5, D=12, h=3, so head_dim=4 differs from T
and from D. Weights are ~ N(0, 1/D), which keeps each head's scaled scores of order 1 (the
softmax is not saturated, so every scaling mistake shows in the numbers).
"""
import math

import numpy as np
import torch

from autograder.checks import attention, complexity, gradients
from autograder.checks.attention import expect_attention
from autograder.reference import variants
from autograder.checks.expect import (check, example, expect_array, expect_close, expect_dtype, expect_full_precision,
                                      expect_shape, fail, gpu_usable, precision_lost, show_example)
from autograder.i18n import _
from autograder.checks.inputs import randn, rounded
from autograder.checks.memo import Remembering, remembered
from solutions import step06_multi_head

ref = Remembering(step06_multi_head)     # the references' answers, remembered for the next submission

STEP = "06_multi_head"
B, T, D, H = 2, 5, 12, 3
HD = D // H


# ------------------------------------------------------------------ references (float64, torch)
def _t(a):
    return torch.from_numpy(np.ascontiguousarray(a, dtype=np.float64))


@remembered
def _ref_attention(x, Ws, h=H):
    with torch.no_grad():
        out, w = ref.multi_head_attention(_t(x), *(_t(W) for W in Ws), h)
    return out.numpy(), w.numpy()


def _inputs(key, x_scale=1.0):
    """x (B, T, D) and W_Q, W_K, W_V, W_O (D, D) ~ N(0, 1/D): scaled scores of order 1."""
    x = randn((STEP, key, "x"), (B, T, D), x_scale)
    Ws = [randn((STEP, key, name), (D, D), 1 / math.sqrt(D)) for name in ("W_Q", "W_K", "W_V", "W_O")]
    return x, Ws


@remembered
def _mistakes(x, Ws, h=H):
    """{id: (out, weights)}: every known multi-head mistake applied to the same inputs."""
    return {m: variants.multi_head(x, *Ws, h, mistake=m) for m in variants.MULTI_HEAD_MISTAKES}


# ------------------------------------------------------------------ calling the student
def _split(student, x, h, device=None):
    what = _("split_heads(x of shape {shape}, num_heads={h})", shape=x.shape, h=h)
    got = expect_array(student.call("split_heads", x, h), what, "torch", device=device)
    b, t, d = x.shape
    if got.shape == (b, t, h, d // h):
        fail(_("{what} has shape {got}; expected {shape}. The head axis must come "
               "before the time axis: after the view to (B, T, h, head_dim), transpose(1, 2).",
               what=what, got=got.shape, shape=(b, h, t, d // h)))
    expect_shape(got, (b, h, t, d // h), what)
    return got, what


def _merge(student, x, device=None):
    what = _("merge_heads(x of shape {shape})", shape=x.shape)
    got = expect_array(student.call("merge_heads", x), what, "torch", device=device)
    b, h, t, hd = x.shape
    expect_shape(got, (b, t, h * hd), what)
    return got, what


def _attention(student, x, Ws, h=H, device=None, value=None):
    """Call multi_head_attention (or take the `value` it returned to student.grad); check it
    returns two tensors of the right shapes."""
    what = f"multi_head_attention(x, W_Q, W_K, W_V, W_O, {h})"
    if value is None:
        value = student.call("multi_head_attention", x, *Ws, h)
    b, t, d = x.shape
    out, w = attention.expect_outputs(value, what, (b, t, d), (b, h, t, t), "torch", device=device, heads=True)
    return out, w, what


def _expect_moved(got, expected, what, mistake, variant):
    """Splitting or merging heads only moves numbers: every value must be copied exactly."""
    if np.array_equal(got.array, expected):
        return
    expect_close(got, expected, what, "float64", variants={mistake: variant})   # far off: says where, names the mistake
    worst = float(np.max(np.abs(got.array - expected)))
    fail(_("{what}: the values are close to the expected ones but not identical (largest difference "
           "{worst}). Splitting or merging heads only rearranges numbers (view/reshape and "
           "transpose), so each value should come out exactly as it went in.",
           what=what, worst=f"{worst:.3g}"))


# ------------------------------------------------------------------ graded checks
@check("6.1", points=0.5, kind="numbers")
def test_split_heads(student):
    """split_heads puts head i's columns i*hd .. (i+1)*hd-1 on the head axis (exact values, float64)"""
    for h in (H, 4):            # head_dim 4 and 3: neither equals T=5
        x = randn((STEP, "6.1", h), (B, T, D))
        got, what = _split(student, x, h)
        _expect_moved(got, ref.split_heads(_t(x), h).numpy(), what,
                      "heads-reshape-no-transpose", variants.split_heads_no_transpose(x, h))


@check("6.2", points=0.5, kind="numbers")
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


@check("6.4", points=2, kind="numbers")
def test_numbers_float64(student, request):
    """multi_head_attention values, out and weights, float64"""
    x, Ws = _inputs("6.4")
    out, w, what = _attention(student, x, Ws)
    expect_dtype(request, out, "float64", f"{what}: out", "torch")
    expect_dtype(request, w, "float64", f"{what}: weights", "torch")
    expect_full_precision(student, student.call_request("multi_head_attention", x, *Ws, H), what)
    expect_attention(out, w, _ref_attention(x, Ws), what, "float64", lambda: _mistakes(x, Ws))


@check("6.5", points=1, kind="numbers")
def test_numbers_float32(student, request):
    """multi_head_attention values, float32 (dtype kept)"""
    x, Ws = _inputs("6.5")
    (x32, x64), pairs = rounded(x, "float32"), [rounded(W, "float32") for W in Ws]
    out, w, what = _attention(student, x32, [p[0] for p in pairs])
    expect_dtype(request, out, "float32", f"{what}: out", "torch")
    expect_dtype(request, w, "float32", f"{what}: weights", "torch")
    W64 = [p[1] for p in pairs]
    expect_attention(out, w, _ref_attention(x64, W64), what, "float32", lambda: _mistakes(x64, W64))


@check("6.6", points=1, kind="property")
def test_properties(student):
    """Attention weights lie in [0, 1] and each query's row sums to 1, in every head"""
    x, Ws = _inputs("6.6")
    out, w, what = _attention(student, x, Ws)
    expect_full_precision(student, student.call_request("multi_head_attention", x, *Ws, H), what)
    attention.expect_rows_sum_to_one(w, f"{what}: weights", index_words="batch, head, query",
                                     wrong_axis=lambda: variants.multi_head(x, *Ws, H, mistake="softmax-wrong-axis")[1])


def _scores(x64, W64, h=H):
    """The scaled scores (B, h, T, T) the reference computes on these inputs (float64)."""
    return attention.scaled_scores(variants.split_heads(x64 @ W64[0], h), variants.split_heads(x64 @ W64[1], h))


def _expect_stable(student, request, x, Ws, dtype, device=None, cast=None):
    """multi_head_attention on x, Ws (large scores) in `dtype` (on `device`, inputs cast to `cast`):
    out and weights finite, values right (attention.expect_stable)."""
    pairs = [rounded(a, dtype) for a in [x] + Ws]
    low, exact = [p[0] for p in pairs], [p[1] for p in pairs]
    who = student if device is None else student.on(device, cast=cast)
    out, w, what = _attention(who, low[0], low[1:], device=device)
    what = _("{what} in {dtype}", what=what, dtype=dtype) if device is None else _(
        "{what} on {device} in {dtype}", what=what, device=device, dtype=dtype)
    # half precision is too coarse to tell mistakes apart at these scores: the CPU checks name them
    mistakes = (lambda: _mistakes(exact[0], exact[1:])) if dtype in ("float64", "float32") else None
    attention.expect_stable(request, (out, w), what, dtype, _scores(exact[0], exact[1:]),
                            lambda level: expect_attention(out, w, _ref_attention(exact[0], exact[1:]), what, dtype,
                                                           mistakes, level=level), "6.4")


@check("6.7", points=1, kind="stability")
def test_large_inputs(student, request):
    """No overflow when scores reach the thousands, float64 and float32: out and weights finite, values right"""
    x, Ws = _inputs("6.7", x_scale=30.0)      # scores up to ~4800: exp() overflows both dtypes
    for dtype in ("float64", "float32"):
        _expect_stable(student, request, x, Ws, dtype)


# ------------------------------------------------------------------ gradients
SMALL_B, SMALL_T, SMALL_D, SMALL_H = 2, 3, 4, 2     # the gradcheck case: 88 inputs, fast finite differences


def _grad_inputs(key, b, t, d, h):
    """{"x", "W_Q", "W_K", "W_V", "W_O": float64 arrays} and cotangents for (out, weights)."""
    x = randn((STEP, key, "x"), (b, t, d))
    inputs = {"x": x, **{n: randn((STEP, key, n), (d, d), 1 / math.sqrt(d)) for n in ("W_Q", "W_K", "W_V", "W_O")}}
    cotangents = [randn((STEP, key, "d_out"), (b, t, d)), randn((STEP, key, "d_weights"), (b, h, t, t))]
    return inputs, cotangents


@check("6.13", points=1, kind="gradients")
def test_gradients(student):
    """Gradients w.r.t. x, W_Q, W_K, W_V and W_O match the reference's (float64), and gradcheck passes"""
    inputs, cotangents = _grad_inputs("6.13", B, T, D, H)
    small, _cot = _grad_inputs("6.13 small", SMALL_B, SMALL_T, SMALL_D, SMALL_H)
    what = f"multi_head_attention(x, W_Q, W_K, W_V, W_O, {H})"
    got = gradients.run_backward(student, gradients.function_target("multi_head_attention", inputs, (H,)),
                                 cotangents, gradients.function_target("multi_head_attention", small, (SMALL_H,)),
                                 what)
    x, Ws = inputs["x"], [inputs[n] for n in ("W_Q", "W_K", "W_V", "W_O")]
    out, w, what = _attention(student, x, Ws, value=got.value)
    (ref_out, ref_w), expected = gradients.reference_gradients(
        lambda *ts: ref.multi_head_attention(*ts, H), inputs, cotangents)
    lost = precision_lost(what, student.measure(student.call_request("multi_head_attention", x, *Ws, H), what,
                                                count=False).downcasts)
    gradients.expect_gradients(got, [("out", out, ref_out), ("weights", w, ref_w)], expected, what,
                               gradients.small_case(SMALL_B, SMALL_T, SMALL_D, SMALL_H), precision=lost)


# ------------------------------------------------------------------ GPU (no points; skipped without CUDA)
def _on_gpu(student, cuda, request, dtype, key):
    x, Ws = _inputs(key)
    pairs = [rounded(a, dtype) for a in [x] + Ws]
    low, exact = [p[0] for p in pairs], [p[1] for p in pairs]
    gpu = student.on(cuda, cast=None if dtype == "float32" else dtype)
    out, w, what = _attention(gpu, low[0], low[1:], device=cuda)
    what = _("{what} on {device} in {dtype}", what=what, device=cuda, dtype=dtype)
    expect_dtype(request, out, dtype, f"{what}: out", "torch")
    expect_dtype(request, w, dtype, f"{what}: weights", "torch")
    # half precision: too coarse to tell mistakes apart, the CPU checks name them
    mistakes = (lambda: _mistakes(exact[0], exact[1:])) if dtype == "float32" else None
    expect_attention(out, w, _ref_attention(exact[0], exact[1:]), what, dtype, mistakes)
    return gpu, low, exact


@check("6.8", points=0, kind="device")
def test_cuda_float32(student, cuda, request):
    """On CUDA, float32: results stay on the GPU in float32 and match the reference"""
    with gpu_usable():
        gpu, low, exact = _on_gpu(student, cuda, request, "float32", "6.8")
        got, what = _split(gpu, low[0], H, device=cuda)
        what = _("{what} on {device}", what=what, device=cuda)
        expect_dtype(request, got, "float32", what, "torch")
        expect_close(got, ref.split_heads(_t(exact[0]), H).numpy(), what, "float32")
        heads = rounded(randn((STEP, "6.8", "heads"), (B, H, T, HD)), "float32")
        got, what = _merge(gpu, heads[0], device=cuda)
        what = _("{what} on {device}", what=what, device=cuda)
        expect_dtype(request, got, "float32", what, "torch")
        expect_close(got, ref.merge_heads(_t(heads[1])).numpy(), what, "float32")


# x ~ N(0, 8^2): scores up to a few hundred, beyond exp()'s range in float16 (11) and bfloat16 (88)
HALF_X_SCALE = 8.0


@check("6.9", points=0, kind="device")
def test_cuda_float16(student, cuda, request):
    """On CUDA, float16: results stay float16 on the GPU, match the reference and survive large scores"""
    with gpu_usable():
        _on_gpu(student, cuda, request, "float16", "6.9")
        _expect_stable(student, request, *_inputs("6.9 large", HALF_X_SCALE), "float16", device=cuda, cast="float16")


@check("6.10", points=0, kind="device")
def test_cuda_bfloat16(student, cuda, request):
    """On CUDA, bfloat16: results stay bfloat16 on the GPU, match the reference and survive large scores"""
    with gpu_usable():
        _on_gpu(student, cuda, request, "bfloat16", "6.10")
        _expect_stable(student, request, *_inputs("6.10 large", HALF_X_SCALE), "bfloat16", device=cuda,
                       cast="bfloat16")


# ------------------------------------------------------------------ complexity and shortcuts
GROW_BASE = {"B": 2, "T": 8, "h": 4}                       # d_model 32: every h below divides it
GROW = {"T": (8, 16, 32), "B": (2, 3, 4), "h": (2, 4, 8)}
MEMORY = {"B": 2, "T": 64, "h": 4, "D": 128}                # head_dim 32: a (B, h, T, T, head_dim) intermediate
#                                                             is 32 times the weights, far over the allowance


def _complexity_inputs(B, T, h, D=32):
    """x (B, T, D) and W_Q, W_K, W_V, W_O (D, D), seeded by their sizes."""
    x = randn((STEP, "6.11", B, T, D, "x"), (B, T, D))
    return [x] + [randn((STEP, "6.11", D, n), (D, D), 1 / math.sqrt(D)) for n in ("W_Q", "W_K", "W_V", "W_O")]


@check("6.11", points=1, kind="complexity")
def test_vectorised(student, request):
    """Vectorised: no Python loop over tokens or batch entries (over heads: a note), memory and multiply-adds within a constant factor of the reference's"""
    what = "multi_head_attention(x, W_Q, W_K, W_V, W_O, num_heads)"

    def measure(B, T, h, D=32):
        x, *Ws = _complexity_inputs(B, T, h, D)
        return student.measure(student.call_request("multi_head_attention", x, *Ws, h), what)
    # the lesson's own demo loops over the heads: told, not charged, in this step (step 7 charges it)
    complexity.expect_vectorised(request, measure, what, GROW_BASE, GROW, heads="note")
    x, *Ws = _complexity_inputs(**MEMORY)
    measured = measure(**MEMORY)
    complexity.expect_memory(measured, complexity.nbytes(*_ref_attention(x, Ws, MEMORY["h"])), what,
                             complexity.shapes_text(x, *Ws))
    # the reference itself, not its remembering wrapper: an answer from memory does no multiply-adds
    complexity.expect_flops(measured, complexity.reference_flops(
        step06_multi_head.multi_head_attention, _t(x), *(_t(W) for W in Ws), MEMORY["h"]), what)


@check("6.12", points=1, kind="api")
def test_no_library_attention(student):
    """Calls none of the library attention functions (F.scaled_dot_product_attention, nn.MultiheadAttention, ...)"""
    names = complexity.forbidden_apis(STEP)
    what = f"multi_head_attention(x, W_Q, W_K, W_V, W_O, {H})"
    x, Ws = _inputs("6.12")
    (x32, _), pairs = rounded(x, "float32"), [rounded(W, "float32") for W in Ws]
    measured = [student.measure(student.call_request("multi_head_attention", a, *Bs, H), what, forbidden=names,
                                count=False) for a, Bs in ((x, Ws), (x32, [p[0] for p in pairs]))]
    complexity.expect_no_forbidden(measured, what, names)


# ------------------------------------------------------------------ the feedback page's example (not a check)
@example
def test_example(student, request):
    """Head 0 of multi_head_attention's weights for one x (1, 5, 12), drawn as a heatmap beside the reference's"""
    key, d_model, h = ("html", STEP), attention.EXAMPLE_D_MODEL, attention.EXAMPLE_HEADS
    x = randn(key + ("x",), (1, attention.EXAMPLE_T, d_model))
    Ws = [randn(key + (n,), (d_model, d_model), d_model ** -0.5) for n in ("Q", "K", "V", "O")]
    show_example(request, _("head 0 of the weights from multi_head_attention(x, W_Q, W_K, W_V, W_O, 3), "
                            "x of shape (1, 5, 12)"), _ref_attention(x, Ws, h)[1][0, 0],
                 lambda: attention.head_0(attention.second_of_pair(student.call("multi_head_attention", x, *Ws, h))))
