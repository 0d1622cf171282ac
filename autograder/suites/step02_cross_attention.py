"""Hidden suite, modern_attention step 2: cross_attention (torch). 10 points.

Shapes keep every dim distinct: B=2, T_q=5, T_k=7, D=12, D_c=10, h=3 (head_dim 4), so a key from x
or a mask on the queries fails on shapes or values; one check has T_q = T_k and D_c = D, where only
the values tell x from the context. Weights ~ N(0, 1/fan-in): scaled scores of order 1.
"""
import math

import numpy as np
import torch

from autograder.checks import attention, complexity, gradients
from autograder.checks.attention import Placed, expect_attention
from autograder.checks.expect import (check, compare, example, expect_dtype, expect_full_precision, fail, gpu_usable,
                                      precision_lost, show_example)
from autograder.checks.inputs import randn, rounded
from autograder.checks.memo import remembered
from autograder.checks.tolerances import tolerance
from autograder.i18n import _
from autograder.reference import variants
from autograder.reference.modern import cross_attention as cross
from solutions.modern_attention import step02_cross_attention as ref

STEP = "02_cross_attention"
B, T_Q, T_K, D, D_C, H = 2, 5, 7, 12, 10, 3
NAMES = ("W_Q", "W_K", "W_V", "W_O")


# ------------------------------------------------------------------ references (torch float64, as numpy)
def _tt(a):
    return torch.from_numpy(np.ascontiguousarray(a))


@remembered
def _ref_cross(x, context, Ws, h=H, mask=None):
    with torch.no_grad():
        out, w = ref.cross_attention(_tt(x), _tt(context), *(_tt(W) for W in Ws), h,
                                     None if mask is None else _tt(mask))
    return out.numpy(), w.numpy()


@remembered
def _mistakes(x, context, Ws, h=H, mask=None):
    """{id: (out, weights)}: cross-attention's known mistakes on these inputs (float64)."""
    with torch.no_grad():
        found = cross.mistakes(_tt(x), _tt(context), *(_tt(W) for W in Ws), h, None if mask is None else _tt(mask))
    return {mid: (o.numpy(), w.numpy()) for mid, (o, w) in found.items()}


def _inputs(key, b=B, t_q=T_Q, t_k=T_K, d=D, d_c=D_C, scale=1.0):
    """x (b, t_q, d), context (b, t_k, d_c), W_Q, W_O (d, d), W_K, W_V (d_c, d) ~ N(0, 1/fan-in)."""
    x = randn((STEP, key, "x"), (b, t_q, d), scale)
    context = randn((STEP, key, "context"), (b, t_k, d_c), scale)
    Ws = [randn((STEP, key, name), (d if name in ("W_Q", "W_O") else d_c, d),
                1 / math.sqrt(d if name in ("W_Q", "W_O") else d_c)) for name in NAMES]
    return x, context, Ws


def lengths_mask(lengths, T):
    """(B, T) bool: True for the first lengths[b] context tokens."""
    return np.arange(T)[None, :] < np.array(lengths)[:, None]


# ------------------------------------------------------------------ calling the student
def _cross(student, x, context, Ws, h=H, mask=None, what=None, device=None, keyword=False):
    """Call cross_attention; check it returns (out (B, T_q, D), weights (B, h, T_q, T_k)) tensors."""
    what = what or (f"cross_attention(x, context, W_Q, W_K, W_V, W_O, {h})" if mask is None
                    else f"cross_attention(x, context, W_Q, W_K, W_V, W_O, {h}, context_mask)")
    args, kwargs = [x, context, *Ws, h], {}
    if mask is not None and keyword:
        kwargs["context_mask"] = mask
    elif mask is not None:
        args.append(mask)
    value = attention.placing(student).call("cross_attention", *args, **kwargs)
    (b, t_q, d), t_k = x.shape, context.shape[1]
    if t_q != t_k:
        _expect_keys_from_context(value, what, (b, h, t_q, t_k))
    out, w = attention.expect_outputs(value, what, (b, t_q, d), (b, h, t_q, t_k), "torch", device=device, heads=True)
    return out, w, what


def _expect_keys_from_context(value, what, shape):
    """Weights with one column per token of x (not of the context) say where the keys came from."""
    b, h, t_q, t_k = shape
    items = getattr(value, "items", None)
    if items and len(items) == 2 and getattr(items[1], "shape", None) == (b, h, t_q, t_q):
        fail(_("{what}: weights have shape {got}, one column per token of x; expected one per context token, "
               "(B, h, T_q, T_k) = {shape}: the keys come from context, not x.", what=what, got=(b, h, t_q, t_q),
               shape=shape))


def _expect_numbers(student, request, key, dtype, h=H, lengths=(7, 4), keyword=False, what=None, shapes=None):
    """cross_attention on the inputs of `key` (in `dtype`) against the reference (on the same rounded
    inputs), with the context mask of `lengths` (None: no mask)."""
    x, context, Ws = _inputs(key, **(shapes or {}))
    pairs = [rounded(a, dtype) for a in [x, context] + Ws]
    low, exact = [p[0] for p in pairs], [p[1] for p in pairs]
    mask = None if lengths is None else lengths_mask(lengths, context.shape[1])
    out, w, what_ = _cross(student, low[0], low[1], low[2:], h, mask, keyword=keyword)
    what = what or what_
    expect_dtype(request, out, dtype, what + ": out", "torch")
    expect_dtype(request, w, dtype, what + ": weights", "torch")
    expect_attention(out, w, _ref_cross(exact[0], exact[1], exact[2:], h, mask), what, dtype,
                     lambda: _mistakes(exact[0], exact[1], exact[2:], h, mask))


# ------------------------------------------------------------------ graded checks
@check("2.1", points=1, kind="shape")
def test_shapes(student):
    """cross_attention returns (out, weights) of shapes (B, T_q, D) and (B, h, T_q, T_k), T_q != T_k and D_c != D"""
    x, context, Ws = _inputs("2.1")
    _cross(student, x, context, Ws)
    _cross(student, x, context, Ws, mask=lengths_mask((7, 4), T_K))


@check("2.2", points=2, kind="numbers")
def test_numbers_float64(student, request):
    """cross_attention values, out and weights, float64: no mask, a context mask (7 and 4 real tokens) with 3, 4 and 1 heads, a context with no real token, and more queries than context tokens"""
    x, context, Ws = _inputs("2.2")
    expect_full_precision(student, student.call_request("cross_attention", x, context, *Ws, H,
                                                        lengths_mask((7, 4), T_K)),
                          f"cross_attention(x, context, W_Q, W_K, W_V, W_O, {H}, context_mask)")
    _expect_numbers(student, request, "2.2", "float64", lengths=None)
    for h in (H, 4, 1):
        _expect_numbers(student, request, "2.2", "float64", h=h, keyword=h == 4)
    _expect_numbers(student, request, "2.2", "float64", lengths=(4, 0), what=_(
        "cross_attention(x, context, W_Q, W_K, W_V, W_O, 3, context_mask), the second context without a real token"))
    # more queries than context tokens (T_q = 7 > T_k = 5): a T_q and a T_k swapped somewhere shows here
    _expect_numbers(student, request, "2.2 long x", "float64", lengths=(5, 3), shapes={"t_q": 7, "t_k": 5})


@check("2.3", points=0.5, kind="numbers")
def test_numbers_float32(student, request):
    """cross_attention values, float32 (dtype kept), with a context mask and without one"""
    _expect_numbers(student, request, "2.3", "float32")
    _expect_numbers(student, request, "2.3", "float32", lengths=None)


@check("2.4", points=1.5, kind="numbers")
def test_keys_from_context(student, request):
    """With T_q = T_k and D_c = D, where the shapes no longer tell x from the context: queries from x, keys and values from the context, the mask on the context tokens"""
    _expect_numbers(student, request, "2.4", "float64", shapes={"t_q": T_K, "d_c": D}, what=_(
        "cross_attention(x, context, W_Q, W_K, W_V, W_O, 3, context_mask) with T_q = T_k = 7 and D_c = D = 12"))


def _unchanged(got, before, what, text):
    """The student's own outputs before and after a change of inputs agree (float64, composed)."""
    rtol, atol = tolerance("float64", "composed")
    cmp = compare(got, before, rtol, atol)
    if not cmp.ok:
        fail(text + "\n" + _("{what}: largest difference {change}, at index {index}.", what=what,
                             change=f"{cmp.max_abs_err:.3g}", index=cmp.worst_index))


@check("2.5", points=0.5, kind="property")
def test_permuted_context(student):
    """Permuting the context tokens (with their mask) leaves the output unchanged and permutes the weights' columns"""
    x, context, Ws = _inputs("2.5")
    mask = lengths_mask((7, 4), T_K)
    out, w, what = _cross(student, x, context, Ws, mask=mask)
    perm = np.array([4, 1, 6, 0, 3, 5, 2])
    out_p, w_p, _what = _cross(student, x, context[:, perm], Ws, mask=mask[:, perm])
    _unchanged(out_p.array, out.array, what, _(
        "Shuffling the context tokens (and their mask) changed the output: attention does not see order, each query "
        "takes a weighted sum over the context, whatever order it comes in."))
    _unchanged(w_p.array, w.array[..., perm], what, _(
        "Shuffling the context tokens (and their mask) should only move the weights' columns along with them."))


@check("2.6", points=0.5, kind="property")
def test_padding_property(student):
    """Whatever the padded context tokens hold, the output stays the same"""
    x, context, Ws = _inputs("2.6")
    mask = lengths_mask((7, 4), T_K)
    out, _w, what = _cross(student, x, context, Ws, mask=mask)
    padded = context.copy()
    padded[1, 4:] = randn((STEP, "2.6", "padding"), padded[1, 4:].shape, 1000.0)
    out2, _w, _what = _cross(student, x, padded, Ws, mask=mask)
    _unchanged(out2.array, out.array, what, _(
        "Changing what the padded context tokens hold (tokens 4 to 6 of the second context, 4 real tokens) changed "
        "the output: a token the mask marks as padding must get no weight at all."))


@check("2.7", points=0.5, kind="property")
def test_masked_weights(student):
    """Padded context tokens get weight exactly 0, each query's weights over the real ones sum to 1, and a context with no real token gives zero weights and a zero output, never NaN"""
    x, context, Ws = _inputs("2.7", b=3)
    mask = lengths_mask((7, 3, 0), T_K)
    out, w, what = _cross(student, x, context, Ws, mask=mask)
    attention.expect_rows_sum_to_one(w, what + ": weights", mask=np.broadcast_to(mask[:, None, None, :], w.shape),
                                     index_words="batch, head, query")
    if np.any(out.array[2] != 0):
        fail(_("{what}: the third context has no real token, so its queries attend nothing: their weights and "
               "output must be 0; the output is not.", what=what))


SMALL = {"x": (1, 2, 4), "context": (1, 3, 2), "W_Q": (4, 4), "W_K": (2, 4), "W_V": (2, 4), "W_O": (4, 4)}   # h = 2


def _expect_gradients(student, masked, lengths=(7, 2)):
    """cross_attention's float64 gradients (and gradcheck's verdict), with a context mask of `lengths`
    real tokens per sequence or without one."""
    x, context, Ws = _inputs("2.8")
    inputs = {"x": x, "context": context, **dict(zip(NAMES, Ws))}
    mask = (lengths_mask(lengths, T_K),) if masked else ()
    cotangents = [randn((STEP, "2.8", "d_out"), (B, T_Q, D)), randn((STEP, "2.8", "d_weights"), (B, H, T_Q, T_K))]
    small = {n: randn((STEP, "2.8 small", n), s) for n, s in SMALL.items()}
    what = f"cross_attention(x, context, W_Q, W_K, W_V, W_O, {H}{', context_mask' if masked else ''})"
    got = gradients.run_backward(student, attention.grad_target("cross_attention", inputs, (H, *mask)), cotangents,
                                 attention.grad_target("cross_attention", small,
                                                       (2, np.array([[True, True, False]])) if masked else (2,)), what)
    out, w = attention.expect_outputs(got.value, what, (B, T_Q, D), (B, H, T_Q, T_K), "torch", heads=True)
    mask_t = [_tt(m) for m in mask]
    (ref_out, ref_w), expected = gradients.reference_gradients(
        lambda *ts: ref.cross_attention(*ts, H, *mask_t), inputs, cotangents)
    lost = precision_lost(what, student.measure(student.call_request("cross_attention", x, context, *Ws, H, *mask),
                                                what, count=False).downcasts)
    small_text = (_("x (1, 2, 4), context (1, 3, 2), 2 heads, the last context token padded") if masked else
                  _("x (1, 2, 4), context (1, 3, 2), 2 heads, without a mask"))
    gradients.expect_gradients(got, [("out", out, ref_out), ("weights", w, ref_w)], expected, what, small_text,
                               precision=lost)


@check("2.8", points=1, kind="gradients")
def test_gradients(student):
    """Gradients w.r.t. x, context, W_Q, W_K, W_V and W_O match the reference's (float64), with a context mask (a context with no real token included) and without one, and gradcheck passes"""
    for masked in (True, False):
        _expect_gradients(student, masked)
    # through a context with no real token: its out is 0 whatever the inputs, so its gradients are 0 (not NaN)
    _expect_gradients(student, True, lengths=(7, 0))


def _scores(x64, context64, Ws, mask, h=H):
    """The scaled scores (B, h, T_q, T_k) the reference computes (float64), padded tokens at -inf."""
    scores = attention.scaled_scores(variants.split_heads(x64 @ Ws[0], h), variants.split_heads(context64 @ Ws[1], h))
    return np.where(mask[:, None, None, :], scores, -np.inf)


def _expect_stable(student, request, dtype, key, device=None, cast=None, scale=30.0, masked=True):
    """cross_attention on large scores in `dtype` (on `device`, inputs cast to `cast`, the mask left on
    the CPU; without a mask unless `masked`): out and weights finite, values right (attention.expect_stable)."""
    x, context, Ws = _inputs(key, scale=scale)
    mask = lengths_mask((7, 4) if masked else (7, 7), T_K)
    pairs = [rounded(a, dtype) for a in [x, context] + Ws]
    low, exact = [p[0] for p in pairs], [p[1] for p in pairs]
    who = student if device is None else student.on(device, cast=cast)
    given = None if not masked else mask if device is None else Placed(mask)
    out, w, what = _cross(who, low[0], low[1], low[2:], mask=given, device=device)
    what = _("{what} on {device} in {dtype}", what=what, device=device or "cpu", dtype=dtype)
    mistakes = (lambda: _mistakes(exact[0], exact[1], exact[2:], H, mask)) if device is None else None
    attention.expect_stable(request, (out, w), what, dtype, _scores(exact[0], exact[1], exact[2:], mask),
                            lambda level: expect_attention(out, w, _ref_cross(exact[0], exact[1], exact[2:], H, mask),
                                                           what, dtype, mistakes, level=level),
                            "2.2", name_unstable=False)


@check("2.9", points=0.5, kind="stability")
def test_large_scores(student, request):
    """No overflow when the scores reach the thousands, float64 and float32, with a context mask and without: out and weights finite, values right"""
    for dtype in ("float64", "float32"):
        for masked in (True, False):
            _expect_stable(student, request, dtype, "2.9", masked=masked)


# ------------------------------------------------------------------ complexity and shortcuts
GROW_BASE = {"B": 2, "T": 8, "h": 2}
GROW = {"T": (8, 16, 32), "B": (2, 3, 4), "h": (2, 4, 8)}
MEMORY = {"B": 2, "T": 64, "h": 4, "D": 128}          # head_dim 32: a (..., T_q, T_k, head_dim) intermediate is far over


def _complexity_inputs(B, T, h, D=32):
    """x (B, T, D), a context of T + 3 tokens of width D // 2 + 8, its mask, seeded by the sizes."""
    x, context, Ws = _inputs(("2.10", B, T, D), b=B, t_q=T, t_k=T + 3, d=D, d_c=D // 2 + 8)
    mask = lengths_mask([T + 3 - i % 3 for i in range(B)], T + 3)
    return [x, context, *Ws, h, mask]


@check("2.10", points=1, kind="complexity")
def test_vectorised(student, request):
    """Vectorised: no Python loop over tokens or batch entries (over heads: a note), memory and multiply-adds within a constant factor of the reference's"""
    what = "cross_attention(x, context, W_Q, W_K, W_V, W_O, num_heads, context_mask)"

    def measure(B, T, h, D=32):
        return student.measure(student.call_request("cross_attention", *_complexity_inputs(B, T, h, D)), what)
    complexity.expect_vectorised(request, measure, what, GROW_BASE, GROW, heads="note")
    args = _complexity_inputs(**MEMORY)
    measured = measure(**MEMORY)
    x, context, Ws, h, mask = args[0], args[1], args[2:6], args[6], args[7]
    complexity.expect_memory(measured, complexity.nbytes(*_ref_cross(x, context, Ws, h, mask)), what,
                             complexity.shapes_text(x, context, *Ws))
    complexity.expect_flops(measured, complexity.reference_flops(
        ref.cross_attention, _tt(x), _tt(context), *(_tt(W) for W in Ws), h, _tt(mask)), what)


@check("2.11", points=1, kind="api")
def test_no_library_attention(student):
    """Calls none of the library attention functions (F.scaled_dot_product_attention, nn.MultiheadAttention, ...)"""
    names = complexity.forbidden_apis(STEP)
    x, context, Ws = _inputs("2.11")
    what = f"cross_attention(x, context, W_Q, W_K, W_V, W_O, {H}, context_mask)"
    low = [rounded(a, "float32")[0] for a in [x, context] + Ws]
    measured = [student.measure(student.call_request("cross_attention", *args), what, forbidden=names, count=False)
                for args in ([x, context, *Ws, H, lengths_mask((7, 4), T_K)], [x, context, *Ws, H],
                             [*low, H, lengths_mask((7, 4), T_K)])]
    complexity.expect_no_forbidden(measured, what, names)


# ------------------------------------------------------------------ GPU (no points; skipped without CUDA)
def _on_gpu(student, cuda, request, dtype, key):
    """cross_attention on CUDA in `dtype`, the context mask sent on the CPU (the code moves it)."""
    x, context, Ws = _inputs(key)
    mask = lengths_mask((7, 0), T_K)                      # the second context has no real token: zeros, not NaN
    pairs = [rounded(a, dtype) for a in [x, context] + Ws]
    low, exact = [p[0] for p in pairs], [p[1] for p in pairs]
    gpu = student.on(cuda, cast=None if dtype == "float32" else dtype)
    out, w, what = _cross(gpu, low[0], low[1], low[2:], mask=Placed(mask), device=cuda)
    what = _("{what} on {device} in {dtype}, the mask on the CPU", what=what, device=cuda, dtype=dtype)
    expect_dtype(request, out, dtype, what + ": out", "torch")
    expect_dtype(request, w, dtype, what + ": weights", "torch")
    mistakes = (lambda: _mistakes(exact[0], exact[1], exact[2:], H, mask)) if dtype == "float32" else None
    expect_attention(out, w, _ref_cross(exact[0], exact[1], exact[2:], H, mask), what, dtype, mistakes)


@check("2.12", points=0, kind="device")
def test_cuda_float32(student, cuda, request):
    """On CUDA, float32: results stay on the GPU in float32, take a context mask on the CPU and match the reference"""
    with gpu_usable():
        _on_gpu(student, cuda, request, "float32", "2.12")


@check("2.13", points=0, kind="device")
def test_cuda_float16(student, cuda, request):
    """On CUDA, float16: results stay float16 on the GPU, match the reference and survive large scores"""
    with gpu_usable():
        _on_gpu(student, cuda, request, "float16", "2.13")
        _expect_stable(student, request, "float16", "2.13 large", device=cuda, cast="float16", scale=3.0)


@check("2.14", points=0, kind="device")
def test_cuda_bfloat16(student, cuda, request):
    """On CUDA, bfloat16: results stay bfloat16 on the GPU, match the reference and survive large scores"""
    with gpu_usable():
        _on_gpu(student, cuda, request, "bfloat16", "2.14")
        _expect_stable(student, request, "bfloat16", "2.14 large", device=cuda, cast="bfloat16", scale=5.0)


# ------------------------------------------------------------------ the feedback page's example (not a check)
@example
def test_example(student, request):
    """Head 0 of cross_attention's weights for x (1, 5, 12) and a context (1, 7, 10) whose last two tokens are padding, drawn beside the reference's, the padding marked"""
    x, context, Ws = _inputs(("html", STEP), b=1, t_q=attention.EXAMPLE_T, d=attention.EXAMPLE_D_MODEL)
    mask = lengths_mask((5,), T_K)
    h = attention.EXAMPLE_HEADS
    show_example(request, _("head 0 of the weights from cross_attention(x, context, W_Q, W_K, W_V, W_O, 3, "
                            "context_mask), x of shape (1, 5, 12), a context (1, 7, 10) of 5 real tokens"),
                 _ref_cross(x, context, Ws, h, mask)[1][0, 0],
                 lambda: attention.head_0(attention.second_of_pair(
                     student.call("cross_attention", x, context, *Ws, h, mask))),
                 mask=np.broadcast_to(mask[0], (attention.EXAMPLE_T, T_K)))
