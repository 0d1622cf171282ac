"""Hidden suite, modern_attention step 3: grouped_query_attention (torch). 10 points.

Shapes are chosen so that no mistake can hide: B=2, T=5, D=24, 6 query heads, so head_dim=4
differs from T and from D; 2 and 3 key/value heads, so the group size (3 and 2) differs from the
number of key/value heads (a `repeat_interleave(num_kv_heads)` meant as `(group)` cannot fit by
luck), and both extremes (1: multi-query, 6: multi-head). Weights are ~ N(0, 1/D): scaled scores
of order 1, an unsaturated softmax, so every scaling mistake shows in the numbers.
"""
import math

import numpy as np
import torch

from autograder.checks import attention, complexity, gradients
from autograder.checks.attention import expect_attention
from autograder.checks.expect import (CheckFailed, check, example, expect_dtype, expect_full_precision, fail,
                                      gpu_usable, precision_lost, show_example)
from autograder.checks.inputs import randn, rounded
from autograder.checks.memo import remembered
from autograder.i18n import _
from autograder.reference.modern import grouped_query as known
from autograder.sandbox.protocol import Returned
from solutions import step06_multi_head
from solutions.modern_attention import step03_grouped_query

STEP = "03_grouped_query"
B, T, D, H = 2, 5, 24, 6
HD = D // H
KV = 2                  # the usual case: group 3, two key/value heads


# ------------------------------------------------------------------ references (float64, torch)
def _t(a):
    return torch.from_numpy(np.ascontiguousarray(a, dtype=np.float64))


@remembered
def _reference(x, Ws, h=H, h_kv=KV, causal=True):
    with torch.no_grad():
        out, w = step03_grouped_query.grouped_query_attention(_t(x), *(_t(W) for W in Ws), h, h_kv, causal)
    return out.numpy(), w.numpy()


@remembered
def _mistakes(x, Ws, h=H, h_kv=KV, causal=True):
    """{id: (out, weights)}: the known mistakes applied to the reference on the same inputs."""
    return known.mistakes(_t(x), *(_t(W) for W in Ws), h, h_kv, causal)


def _weights(key, d, h, h_kv, scale=None):
    """W_Q, W_K, W_V, W_O ~ N(0, 1/d): W_K and W_V of h_kv * head_dim columns."""
    hd = d // h
    scale = scale or 1 / math.sqrt(d)
    return [randn((STEP, key, name), (d, cols), scale)
            for name, cols in (("W_Q", d), ("W_K", h_kv * hd), ("W_V", h_kv * hd), ("W_O", d))]


def _inputs(key, h_kv=KV, b=B, t=T, d=D, h=H):
    return randn((STEP, key, "x"), (b, t, d)), _weights(key, d, h, h_kv)


# ------------------------------------------------------------------ calling the student
def _what(h=H, h_kv=KV, causal=True):
    return (f"grouped_query_attention(x, W_Q, W_K, W_V, W_O, {h}, {h_kv})" if causal
            else f"grouped_query_attention(x, W_Q, W_K, W_V, W_O, {h}, {h_kv}, causal=False)")


def _attention(student, x, Ws, h=H, h_kv=KV, causal=True, device=None, value=None):
    """Call grouped_query_attention (or take the `value` it returned to student.grad); check it
    returns two tensors of the right shapes."""
    what = _what(h, h_kv, causal)
    if value is None:
        value = (student.call("grouped_query_attention", x, *Ws, h, h_kv) if causal
                 else student.call("grouped_query_attention", x, *Ws, h, h_kv, causal=False))
    b, t, d = x.shape
    out, w = attention.expect_outputs(value, what, (b, t, d), (b, h, t, t), "torch", device=device, heads=True)
    return out, w, what


def _expect_values(student, request, key, h_kv, causal=True, dtype="float64"):
    """One call's out and weights against the reference, mistakes named (float64 or float32)."""
    x, Ws = _inputs(key, h_kv)
    if dtype == "float64":
        low, exact = [x] + Ws, [x] + Ws
    else:
        pairs = [rounded(a, dtype) for a in [x] + Ws]
        low, exact = [p[0] for p in pairs], [p[1] for p in pairs]
    out, w, what = _attention(student, low[0], low[1:], h_kv=h_kv, causal=causal)
    if dtype != "float64":
        what = _("{what} in {dtype}", what=what, dtype=dtype)
    expect_dtype(request, out, dtype, what + ": out", "torch")
    expect_dtype(request, w, dtype, what + ": weights", "torch")
    if dtype == "float64":
        args = low + [H, h_kv] if causal else low + [H, h_kv, False]
        expect_full_precision(student, student.call_request("grouped_query_attention", *args), _what(H, h_kv, causal))
    expect_attention(out, w, _reference(exact[0], exact[1:], H, h_kv, causal), what, dtype,
                     lambda: _mistakes(exact[0], exact[1:], H, h_kv, causal))


# ------------------------------------------------------------------ graded checks
@check("3.1", points=0.5, kind="shape")
def test_shapes(student):
    """grouped_query_attention returns (out, weights) of shapes (B, T, D) and (B, num_heads, T, T)"""
    x, Ws = _inputs("3.1")
    _attention(student, x, Ws)


@check("3.2", points=2, kind="numbers")
def test_numbers_float64(student, request):
    """Values, out and weights, float64, causal: 6 query heads sharing 2 key/value heads (groups of 3) and 3 (groups of 2)"""
    for h_kv in (KV, 3):
        _expect_values(student, request, "3.2", h_kv)


@check("3.3", points=1, kind="numbers")
def test_numbers_float32(student, request):
    """Values, float32 (dtype kept), causal, 2 key/value heads"""
    _expect_values(student, request, "3.3", KV, dtype="float32")


@check("3.4", points=1, kind="numbers")
def test_not_causal(student, request):
    """causal=False: every query attends every key (values, float64, 3 key/value heads)"""
    _expect_values(student, request, "3.4", 3, causal=False)


@check("3.5", points=1, kind="property")
def test_extremes(student):
    """num_kv_heads = num_heads is multi-head attention, 1 is multi-query attention, and 2 is multi-head attention with each query head given its key/value head's columns"""
    # num_kv_heads = num_heads: the first assignment's multi_head_attention (not causal) on the same weights
    x, Ws = _inputs("3.5 mha", H)
    out, w, what = _attention(student, x, Ws, h_kv=H, causal=False)
    with torch.no_grad():
        mha = tuple(a.numpy() for a in step06_multi_head.multi_head_attention(_t(x), *(_t(W) for W in Ws), H))
    # at this extreme the keys' full width is D: that mistake is scale-by-d-model here, named by 3.2 as itself
    mistakes = lambda: {m: v for m, v in _mistakes(x, Ws, H, H, False).items() if m != "scale-by-d-model"}  # noqa: E731
    try:
        expect_attention(out, w, mha, what, "float64", mistakes)
    except CheckFailed as failure:
        fail(_("With num_kv_heads = num_heads = {h}, every query head has its own key/value head: grouped-query "
               "attention is then multi-head attention (the first assignment's multi_head_attention on the same "
               "weights), and yours differs from it.", h=H) + "\n" + failure.message, failure.misconceptions)
    # num_kv_heads = 1: one key/value head read by every query head, causal
    x, Ws = _inputs("3.5 mqa", 1)
    out, w, what = _attention(student, x, Ws, h_kv=1)
    try:
        expect_attention(out, w, _reference(x, Ws, H, 1), what, "float64", lambda: _mistakes(x, Ws, H, 1))
    except CheckFailed as failure:
        fail(_("With num_kv_heads = 1 (multi-query attention), all {h} query heads read the same key/value head, "
               "and your values differ from that.", h=H) + "\n" + failure.message, failure.misconceptions)
    # two key/value heads: multi-head attention given each query head its key/value head's columns, seen
    # through the student's own function (whatever its numbers elsewhere)
    x, Ws = _inputs("3.5 gqa", KV)
    grouped, _w, what = _attention(student, x, Ws)
    expanded = _attention(student, x, [Ws[0], _expanded(Ws[1]), _expanded(Ws[2]), Ws[3]], h_kv=H)[0]
    problem = attention.differs(grouped.array, expanded.array)
    if problem:
        tiled = _attention(student, x, [Ws[0], np.tile(Ws[1], (1, H // KV)), np.tile(Ws[2], (1, H // KV)), Ws[3]],
                           h_kv=H)[0]
        fail(_("{what} differs from your own function with num_kv_heads = {h} given, for each query head i, the "
               "columns of key/value head i // {group} ({problem}). Query head i reads key/value head "
               "i // (num_heads // num_kv_heads): consecutive query heads share one.",
               what=what, h=H, group=H // KV, problem=problem),
             attention.named_if_matches("gqa-heads-tiled", (grouped.array,), (tiled.array,)))


def _expanded(W, h=H, h_kv=KV):
    """W_K or W_V (D, h_kv * hd) as multi-head attention's (D, h * hd): query head i given the columns of
    its key/value head i // group, the same model with one key/value head per query head."""
    d = W.shape[0]
    return np.repeat(W.reshape(d, h_kv, -1), h // h_kv, axis=1).reshape(d, -1)


@check("3.6", points=1, kind="property")
def test_causal(student):
    """Causal: weights in [0, 1], each row sums to 1, keys after the query get weight exactly 0, and changing later tokens changes no earlier output"""
    x, Ws = _inputs("3.6", 3)
    out, w, what = _attention(student, x, Ws, h_kv=3)
    # a property fails as it does; a known mistake that explains the values is named too
    named = lambda: attention.matching(out, w, _mistakes(x, Ws, H, 3), "float64")      # noqa: E731
    try:
        attention.expect_rows_sum_to_one(w, f"{what}: weights", mask=np.tril(np.ones((T, T), dtype=bool)),
                                         index_words="batch, head, query",
                                         wrong_axis=lambda: _mistakes(x, Ws, H, 3)["softmax-wrong-axis"][1])
    except CheckFailed as failure:
        fail(failure.message, failure.misconceptions or named())
    later = x.copy()
    later[:, 3:] = randn((STEP, "3.6", "later"), (B, T - 3, D))        # tokens 3 and 4 changed
    moved = _attention(student, later, Ws, h_kv=3)[0]
    problem = attention.differs(moved.array[:, :3], out.array[:, :3])
    if problem:
        # the weights passed above: they are causal, so the scores are masked. A later token that still
        # reaches an earlier output came in through a reordering of the tokens (a view or reshape that mixes
        # the time axis with the batch or head axis), not through a missing mask: "mask later keys" would
        # send the student after the wrong line. Changing only the other sequence tells which axis
        other = x.copy()
        other[1:] = randn((STEP, "3.6", "other sequence"), (B - 1, T, D))
        crossed = attention.differs(_attention(student, other, Ws, h_kv=3)[0].array[:1], out.array[:1])
        if crossed:
            fail(_("{what}: changing tokens 3 and 4 changed the outputs of tokens 0 to 2 ({problem}), and changing "
                   "only the second sequence of the batch changed the first one's outputs ({crossed}). Your weights "
                   "are causal, so the mask is not the cause: the sequences of the batch are mixed, by a reshape or "
                   "view that reorders the batch and time axes (e.g. .reshape(T, B, ...) of a (B, T, ...) tensor). "
                   "Each sequence must be attended to on its own.", what=what, problem=problem, crossed=crossed),
                 named())
        fail(_("{what}: changing tokens 3 and 4 changed the outputs of tokens 0 to 2 ({problem}). Your weights are "
               "causal, so the mask is not the cause: the tokens are reordered before or after the attention, by a "
               "view or reshape that mixes the time axis with the heads (.view(B, h, T, d) of a (B, T, h * d) "
               "tensor, where .view(B, T, h, d).transpose(1, 2) is meant; the output transposed back before "
               ".reshape(B, T, D)).", what=what, problem=problem), named())


def _scores(x, Ws, h=H, h_kv=KV, causal=True):
    """The scaled scores (B, h, T, T) the reference computes on these inputs (float64), -inf where the
    causal mask blocks: expect_stable's tolerance comes from the finite ones."""
    b, t, d = x.shape
    hd = d // h
    q = (x @ Ws[0]).reshape(b, t, h, hd).transpose(0, 2, 1, 3)
    k = np.repeat((x @ Ws[1]).reshape(b, t, h_kv, hd).transpose(0, 2, 1, 3), h // h_kv, axis=1)
    scores = attention.scaled_scores(q, k)
    return np.where(np.tril(np.ones((t, t), dtype=bool)), scores, -np.inf) if causal else scores


def _expect_stable(student, request, x, Ws, dtype, device=None, cast=None):
    """grouped_query_attention on x, Ws (large scores) in `dtype` (on `device`, inputs cast to `cast`):
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
                            lambda level: expect_attention(out, w, _reference(exact[0], exact[1:]), what, dtype,
                                                           mistakes, level=level), "3.2")


@check("3.13", points=1, kind="stability")
def test_large_inputs(student, request):
    """No overflow when scores reach the thousands, float64 and float32: out and weights finite, values right"""
    x, Ws = _inputs("3.13")
    x = x * 30.0                 # scores up to several thousand: exp() overflows both dtypes
    for dtype in ("float64", "float32"):
        _expect_stable(student, request, x, Ws, dtype)


# ------------------------------------------------------------------ gradients
SMALL = {"b": 2, "t": 3, "d": 8, "h": 4, "h_kv": 2}      # the gradcheck case: 240 inputs, fast finite differences


def _grad_inputs(key, b, t, d, h, h_kv):
    """{"x", "W_Q", "W_K", "W_V", "W_O": float64 arrays} and cotangents for (out, weights)."""
    inputs = {"x": randn((STEP, key, "x"), (b, t, d)),
              **dict(zip(("W_Q", "W_K", "W_V", "W_O"), _weights(key, d, h, h_kv)))}
    cotangents = [randn((STEP, key, "d_out"), (b, t, d)), randn((STEP, key, "d_weights"), (b, h, t, t))]
    return inputs, cotangents


@check("3.7", points=1, kind="gradients")
def test_gradients(student):
    """Gradients w.r.t. x, W_Q, W_K, W_V and W_O match the reference's (float64, 2 key/value heads), and gradcheck passes"""
    inputs, cotangents = _grad_inputs("3.7", B, T, D, H, KV)
    small, _cot = _grad_inputs("3.7 small", **SMALL)
    what = _what()
    got = gradients.run_backward(
        student, gradients.function_target("grouped_query_attention", inputs, (H, KV)), cotangents,
        gradients.function_target("grouped_query_attention", small, (SMALL["h"], SMALL["h_kv"])), what)
    x, Ws = inputs["x"], [inputs[n] for n in ("W_Q", "W_K", "W_V", "W_O")]
    out, w, what = _attention(student, x, Ws, value=got.value)
    (ref_out, ref_w), expected = gradients.reference_gradients(
        lambda *ts: step03_grouped_query.grouped_query_attention(*ts, H, KV), inputs, cotangents)
    lost = precision_lost(what, student.measure(student.call_request("grouped_query_attention", x, *Ws, H, KV),
                                                what, count=False).downcasts)
    small_case = _("B={b}, T={t}, d_model={d}, {h} heads, {h_kv} key/value heads", **SMALL)
    gradients.expect_gradients(got, [("out", out, ref_out), ("weights", w, ref_w)], expected, what, small_case,
                               precision=lost)


# ------------------------------------------------------------------ GPU (no points; skipped without CUDA)
def _on_gpu(student, cuda, request, dtype, key):
    x, Ws = _inputs(key)
    pairs = [rounded(a, dtype) for a in [x] + Ws]
    low, exact = [p[0] for p in pairs], [p[1] for p in pairs]
    gpu = student.on(cuda, cast=None if dtype == "float32" else dtype)
    out, w, what = _attention(gpu, low[0], low[1:], device=cuda)
    what = _("{what} on {device} in {dtype}", what=what, device=cuda, dtype=dtype)
    expect_dtype(request, out, dtype, what + ": out", "torch")
    expect_dtype(request, w, dtype, what + ": weights", "torch")
    # half precision: too coarse to tell mistakes apart, the CPU checks name them
    mistakes = (lambda: _mistakes(exact[0], exact[1:])) if dtype == "float32" else None
    expect_attention(out, w, _reference(exact[0], exact[1:]), what, dtype, mistakes)


@check("3.10", points=0, kind="device")
def test_cuda_float32(student, cuda, request):
    """On CUDA, float32: results stay on the GPU in float32 and match the reference"""
    with gpu_usable():
        _on_gpu(student, cuda, request, "float32", "3.10")


# x ~ N(0, 8^2): scores up to a few hundred, beyond exp()'s range in float16 (11) and bfloat16 (88)
HALF_X_SCALE = 8.0


@check("3.11", points=0, kind="device")
def test_cuda_float16(student, cuda, request):
    """On CUDA, float16: results stay float16 on the GPU, match the reference and survive large scores"""
    with gpu_usable():
        _on_gpu(student, cuda, request, "float16", "3.11")
        x, Ws = _inputs("3.11 large")
        _expect_stable(student, request, x * HALF_X_SCALE, Ws, "float16", device=cuda, cast="float16")


@check("3.12", points=0, kind="device")
def test_cuda_bfloat16(student, cuda, request):
    """On CUDA, bfloat16: results stay bfloat16 on the GPU, match the reference and survive large scores"""
    with gpu_usable():
        _on_gpu(student, cuda, request, "bfloat16", "3.12")
        x, Ws = _inputs("3.12 large")
        _expect_stable(student, request, x * HALF_X_SCALE, Ws, "bfloat16", device=cuda, cast="bfloat16")


# ------------------------------------------------------------------ complexity and shortcuts
GROW_BASE = {"B": 2, "T": 8, "h": 4}                       # d_model 32, num_kv_heads = h // 2
GROW = {"T": (8, 16, 32), "B": (2, 3, 4), "h": (2, 4, 8)}
MEMORY = {"B": 2, "T": 64, "h": 4, "D": 128}               # head_dim 32: a (B, h, T, T, head_dim) intermediate
#                                                            is 32 times the weights, far over the allowance


def _complexity_inputs(B, T, h, D=32):
    """x (B, T, D) and the four weights for h query heads and h // 2 key/value heads, seeded by their sizes."""
    return [randn((STEP, "3.8", B, T, D, "x"), (B, T, D))] + _weights(("3.8", D, h), D, h, max(1, h // 2))


@check("3.8", points=1, kind="complexity")
def test_vectorised(student, request):
    """Vectorised: no Python loop over tokens or batch entries (over heads: a note), memory and multiply-adds within a constant factor of the reference's"""
    what = "grouped_query_attention(x, W_Q, W_K, W_V, W_O, num_heads, num_kv_heads)"

    def measure(B, T, h, D=32):
        return student.measure(student.call_request("grouped_query_attention", *_complexity_inputs(B, T, h, D),
                                                    h, max(1, h // 2)), what)
    # the notebook allows a loop over the heads in this step: told, not charged
    complexity.expect_vectorised(request, measure, what, GROW_BASE, GROW, heads="note")
    args = _complexity_inputs(**MEMORY)
    h, h_kv = MEMORY["h"], MEMORY["h"] // 2
    measured = measure(**MEMORY)
    complexity.expect_memory(measured, complexity.nbytes(*_reference(args[0], args[1:], h, h_kv)), what,
                             complexity.shapes_text(*args))
    complexity.expect_flops(measured, complexity.reference_flops(
        step03_grouped_query.grouped_query_attention, *(_t(a) for a in args), h, h_kv), what)


@check("3.9", points=0.5, kind="api")
def test_no_library_attention(student):
    """Calls none of the library attention functions (F.scaled_dot_product_attention, nn.MultiheadAttention, ...)"""
    names = complexity.forbidden_apis(STEP)
    x, Ws = _inputs("3.9")
    pairs = [rounded(a, "float32") for a in [x] + Ws]
    measured = [student.measure(student.call_request("grouped_query_attention", *args, H, KV), _what(),
                                forbidden=names, count=False)
                for args in ([x] + Ws, [p[0] for p in pairs])]
    complexity.expect_no_forbidden(measured, _what(), names)


# ------------------------------------------------------------------ the feedback page's example (not a check)
EXAMPLE_HEADS, EXAMPLE_KV = 4, 2


def _head(value, i):
    """Head i of the example's weights, (1, h, T, T) -> (T, T) (anything else is shown as it is)."""
    if isinstance(value, Returned) and value.array.ndim == 4 and value.array.shape[1] > i:
        return Returned(value.array[0, i], value.kind, value.type, value.dtype)
    return value


@example
def test_example(student, request):
    """Head 1 of grouped_query_attention's weights for one x (1, 5, 12), 4 query heads sharing 2 key/value heads, drawn beside the reference's with the causal mask's region"""
    key, d_model, t = ("html", STEP), attention.EXAMPLE_D_MODEL, attention.EXAMPLE_T
    x = randn(key + ("x",), (1, t, d_model))
    Ws = _weights(key, d_model, EXAMPLE_HEADS, EXAMPLE_KV)
    expected = _reference(x, Ws, EXAMPLE_HEADS, EXAMPLE_KV)[1][0, 1]

    def ask():
        value = attention.second_of_pair(student.call("grouped_query_attention", x, *Ws, EXAMPLE_HEADS, EXAMPLE_KV))
        return _head(value, 1)
    # head 1 shares key/value head 0 with head 0: tiled heads would give it key/value head 1
    show_example(request, _("head 1 of the weights from grouped_query_attention(x, W_Q, W_K, W_V, W_O, 4, 2), "
                            "x of shape (1, 5, 12)"), expected, ask, mask=np.tril(np.ones((t, t), dtype=bool)))
