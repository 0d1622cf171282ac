"""Hidden suite, modern_attention step 6: tiled_attention, an online softmax over key blocks (torch). 10 points.

Shapes keep every dim distinct: B=2, h=3, head dim d=8, T_q=7 queries against T_k=20 keys (causal
aligned at the end: query i stands at position 13 + i). Block sizes 6 and 7 do not divide T_k (a
partial last block), 4 and 5 do, 32 is larger than T_k (one block). q, k, v ~ N(0, 1): scaled scores of
order 1, and each query's running maximum changes from block to block, so a missing rescale shows.

The results cross back as JSON, so T stays small except in the complexity check, which returns
counts only: there the peak memory at T_q = T_k = 1024 (block 64) is held to a multiple of
T * (d + block_size), far below the (T_q, T_k) score matrix a whole softmax builds.
"""
import math

import numpy as np
import torch

from autograder.checks import attention, complexity, gradients
from autograder.checks.attention import expect_attention
from autograder.checks.expect import (CheckFailed, check, example, expect_dtype, expect_finite, expect_full_precision,
                                      fail, gpu_usable, precision_lost, show_example)
from autograder.checks.inputs import randn, rounded
from autograder.checks.memo import remembered
from autograder.checks.tolerances import large_scores_tolerance
from autograder.i18n import _
from autograder.reference.modern import flash_attention as known
from autograder.sandbox.protocol import Returned
from solutions.modern_attention import step06_flash_attention as ref

STEP = "06_flash_attention"
B, H, T_Q, T_K, D = 2, 3, 7, 20, 8
BLOCK = 6                                   # does not divide T_K: three whole blocks and one of 2
NAMES = ("out", "lse")


# ------------------------------------------------------------------ the reference (float64, torch)
def _t(a):
    return torch.from_numpy(np.ascontiguousarray(a, dtype=np.float64))


@remembered
def _reference(q, k, v, block_size, causal):
    with torch.no_grad():
        out, lse = ref.tiled_attention(_t(q), _t(k), _t(v), block_size, causal)
    return out.numpy(), lse.numpy()


@remembered
def _mistakes(q, k, v, block_size, causal):
    """{id or "id|variant": (out, lse)}: the known mistakes applied to the same inputs."""
    return known.mistakes(_t(q), _t(k), _t(v), block_size, causal)


def _inputs(key, t_q=T_Q, t_k=T_K, b=B, h=H, d=D, scale=1.0):
    return tuple(randn((STEP, key, name), (b, h, t, d), scale) for name, t in (("q", t_q), ("k", t_k), ("v", t_k)))


# ------------------------------------------------------------------ calling the student
def _what(block_size=BLOCK, causal=False):
    args = "q, k, v" + ("" if block_size is None else f", block_size={block_size}") + (", causal=True" if causal else "")
    return f"tiled_attention({args})"


def _kwargs(block_size, causal):
    kwargs = {} if block_size is None else {"block_size": block_size}
    if causal:
        kwargs["causal"] = True
    return kwargs


def _call(student, q, k, v, block_size=BLOCK, causal=False, device=None, value=None):
    """Call tiled_attention (or take the `value` it returned to student.grad); check it returns
    (out, lse) of shapes (B, h, T_q, d) and (B, h, T_q)."""
    what = _what(block_size, causal)
    if value is None:
        value = student.call("tiled_attention", q, k, v, **_kwargs(block_size, causal))
    out, lse = attention.expect_outputs(value, what, q.shape, q.shape[:-1], "torch", NAMES, device=device)
    return out, lse, what


def _expect_values(out, lse, q, k, v, block_size, causal, what, dtype, with_mistakes=True, level="composed"):
    """out and lse against the reference on the same inputs, the mistakes they match named."""
    block = ref_block(block_size)
    mistakes = (lambda: _mistakes(q, k, v, block, causal)) if with_mistakes else None
    try:
        expect_attention(out, lse, _reference(q, k, v, block, causal), what, dtype, mistakes, names=NAMES,
                         level=level)
    except CheckFailed as failure:
        fail(failure.message, known.named(failure.misconceptions))


def ref_block(block_size):
    return 64 if block_size is None else block_size          # the contract's default


def _numbers(student, request, key, t_q, t_k, block_size, causal, dtype="float64"):
    q, k, v = _inputs(key, t_q, t_k)
    if dtype == "float64":
        low, exact = (q, k, v), (q, k, v)
    else:
        pairs = [rounded(a, dtype) for a in (q, k, v)]
        low, exact = tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
    out, lse, what = _call(student, *low, block_size, causal)
    if dtype != "float64":
        what = _("{what} in {dtype}", what=what, dtype=dtype)
    expect_dtype(request, out, dtype, what + ": out", "torch")
    expect_dtype(request, lse, dtype, what + ": lse", "torch")
    if dtype == "float64":
        expect_full_precision(student, student.call_request("tiled_attention", *low, **_kwargs(block_size, causal)),
                              _what(block_size, causal))
    _expect_values(out, lse, *exact, block_size, causal, what, dtype)


# ------------------------------------------------------------------ graded checks
@check("6.1", points=1, kind="shape")
def test_shapes(student):
    """tiled_attention returns (out, lse) of shapes (B, h, T_q, d) and (B, h, T_q)"""
    _call(student, *_inputs("6.1"))


@check("6.2", points=2, kind="numbers")
def test_numbers_float64(student, request):
    """Values, out and lse, float64: 7 queries against 20 keys in blocks of 6, not causal and causal (aligned at the end), and 20 against 20 causal"""
    _numbers(student, request, "6.2", T_Q, T_K, BLOCK, False)
    _numbers(student, request, "6.2 causal", T_Q, T_K, BLOCK, True)
    _numbers(student, request, "6.2 square", T_K, T_K, BLOCK, True)


@check("6.3", points=1, kind="numbers")
def test_numbers_float32(student, request):
    """Values, float32 (dtype kept), causal, blocks of 6"""
    _numbers(student, request, "6.3", T_Q, T_K, BLOCK, True, dtype="float32")


BLOCKS = (4, 5, 7, 32, 1, None)        # dividing T_K, not dividing it, larger than it, of one key, the default


@check("6.4", points=1, kind="property")
def test_block_size(student):
    """The result does not depend on the block size: blocks of 4 and 5 (dividing T_k = 20), 7 (not dividing it), 32 (larger than T_k), 1 and the default all give the reference's out and lse"""
    q, k, v = _inputs("6.4")
    for block_size in BLOCKS:
        for causal in (False, True):
            out, lse, what = _call(student, q, k, v, block_size, causal)
            try:
                _expect_values(out, lse, q, k, v, block_size, causal, what, "float64")
            except CheckFailed as failure:
                if _same_for_every_block_size(student, q, k, v, causal, out, lse):
                    # wrong, but wrong alike for every block size: the blocks are not the cause (a wrong
                    # log-sum-exp, a missing scale...); the values' own message and diagnosis say what is
                    fail(_("With block_size={block}, {what} differs from the reference, but the same way for every "
                           "block size: the blocks are covered as they should be, the computation itself is wrong "
                           "(the values checks say where).", block=block_size or 64, what=what)
                         + "\n" + failure.message, failure.misconceptions)
                fail(_("With block_size={block}, {what} differs from the attention over all the keys at once: the "
                       "blocks must together cover every key exactly once (the last one may be shorter), and the "
                       "result must be the same for any block size.", block=block_size or 64, what=what)
                     + "\n" + failure.message, failure.misconceptions)


def _same_for_every_block_size(student, q, k, v, causal, out, lse):
    """Whether the student's out and lse are the same (within float64 rounding) for every block size."""
    for block_size in BLOCKS:
        other_out, other_lse, _what = _call(student, q, k, v, block_size, causal)
        if attention.differs(other_out.array, out.array) or attention.differs(other_lse.array, lse.array):
            return False
    return True


@check("6.5", points=1, kind="property")
def test_no_allowed_key(student, request):
    """Causal with more queries than keys (9 against 5): a query with no allowed key gets out 0 and lse -inf, never NaN; the others match the reference"""
    q, k, v = _inputs("6.5", 9, 5)
    out, lse, what = _call(student, q, k, v, 2, True)
    named = lambda: known.named(attention.matching(out, lse, _mistakes(q, k, v, 2, True), "float64"))  # noqa: E731
    empty = np.arange(9) < 9 - 5                    # query i stands at position i - 4: i < 4 sees no key
    hint = _("A query with no allowed key (under the causal rule, one that stands before the first key) has "
             "nothing to average: its output is 0 and its lse = log(0) = -inf; divide only where the running "
             "sum is above 0.")
    try:
        expect_finite(out, what + ": out", hint)
    except CheckFailed as failure:
        fail(failure.message, named())
    got_lse = lse.array
    if np.any(out.array[..., empty, :] != 0) or not np.all(np.isneginf(got_lse[..., empty])) \
            or np.isnan(got_lse).any():
        fail(_("{what}: queries 0 to 3 have no allowed key (query i stands at position i - 4), so their out must be "
               "exactly 0 and their lse -inf; yours are {out} and {lse} at query 0.", what=what,
               out=f"{float(np.abs(out.array[0, 0, 0]).max()):.4g}", lse=f"{float(got_lse[0, 0, 0]):.4g}")
             + "\n" + hint, named())
    _expect_values(out, lse, q, k, v, 2, True, what, "float64")


# x ~ N(0, 30^2): scaled scores in the thousands, beyond exp()'s range in float64 (709) and float32 (88)
LARGE = 30.0


def _far_below_zero(q, k, v):
    """Every score negative and in the thousands (q > 0, k < 0): a running maximum started at 0 instead
    of -inf makes every exp() underflow to 0, so the sum is 0 and out is 0 / 0."""
    return np.abs(q) + 1.0, -(np.abs(k) + 1.0), v


@check("6.6", points=1, kind="stability")
def test_large_scores(student, request):
    """No overflow or underflow when scores reach the thousands, of both signs or all far below 0, float64 and float32: out and lse finite, values right"""
    cases = [(dtype, far) for dtype in ("float64", "float32") for far in (False, True)]
    for dtype, far in cases:
        qkv = _inputs("6.6", scale=LARGE)
        pairs = [rounded(a, dtype) for a in (_far_below_zero(*qkv) if far else qkv)]
        low, exact = tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
        out, lse, what = _call(student, *low, BLOCK, True)
        what = _("{what} in {dtype}", what=what, dtype=dtype)
        hint = _("The scores here reach the thousands; exp() of more than {limit} overflows {dtype}. Subtract the "
                 "running maximum before exp(), and rescale what was summed when it grows.",
                 limit=attention.EXP_LIMIT[dtype], dtype=dtype)
        expect_finite(out, what + ": out", hint)
        expect_finite(lse, what + ": lse", hint)
        scores = attention.scaled_scores(exact[0], exact[1])
        level = large_scores_tolerance(dtype, float(np.abs(scores).max()))
        _expect_values(out, lse, *exact, BLOCK, True, what, dtype, level=level)


# ------------------------------------------------------------------ gradients
SMALL = {"b": 1, "h": 2, "t_q": 3, "t_k": 5, "d": 4}           # the gradcheck case: 104 inputs


@check("6.7", points=1, kind="gradients")
def test_gradients(student):
    """Gradients w.r.t. q, k and v match the reference's (float64, causal, blocks of 6; 7 queries against 20 keys, and 9 against 5 where 4 queries have no allowed key), and gradcheck passes"""
    _expect_tiled_gradients(student, "6.7")
    # queries with no allowed key: out 0 and lse -inf whatever q, k, v are, so no gradient flows from them
    _expect_tiled_gradients(student, "6.7 no key", 9, 5)


def _expect_tiled_gradients(student, key, t_q=None, t_k=None):
    q, k, v = _inputs(key) if t_q is None else _inputs(key, t_q, t_k)
    inputs = {"q": q, "k": k, "v": v}
    cotangents = [randn((STEP, key, "d_out"), q.shape), randn((STEP, key, "d_lse"), q.shape[:-1])]
    small = dict(zip("qkv", _inputs("6.7 small", SMALL["t_q"], SMALL["t_k"], SMALL["b"], SMALL["h"], SMALL["d"])))
    what = _what(BLOCK, True)
    got = gradients.run_backward(student, gradients.function_target("tiled_attention", inputs, (BLOCK, True)),
                                 cotangents, gradients.function_target("tiled_attention", small, (2, True)), what)
    out, lse, what = _call(student, q, k, v, BLOCK, True, value=got.value)
    (ref_out, ref_lse), expected = gradients.reference_gradients(
        lambda *ts: ref.tiled_attention(*ts, BLOCK, True), inputs, cotangents)
    lost = precision_lost(what, student.measure(student.call_request("tiled_attention", q, k, v, BLOCK, True), what,
                                                count=False).downcasts)
    small_case = _("B={b}, {h} heads, T_q={t_q}, T_k={t_k}, d={d}, blocks of 2, causal", **SMALL)
    gradients.expect_gradients(got, [("out", out, ref_out), ("lse", lse, ref_lse)], expected, what, small_case,
                               precision=lost)


# ------------------------------------------------------------------ GPU (no points; skipped without CUDA)
def _on_gpu(student, cuda, request, dtype, key):
    pairs = [rounded(a, dtype) for a in _inputs(key)]
    low, exact = tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
    gpu = student.on(cuda, cast=None if dtype == "float32" else dtype)
    out, lse, what = _call(gpu, *low, BLOCK, True, device=cuda)
    what = _("{what} on {device} in {dtype}", what=what, device=cuda, dtype=dtype)
    expect_dtype(request, out, dtype, what + ": out", "torch")
    expect_dtype(request, lse, dtype, what + ": lse", "torch")
    # half precision: too coarse to tell mistakes apart, the CPU checks name them
    _expect_values(out, lse, *exact, BLOCK, True, what, dtype, with_mistakes=dtype == "float32")


@check("6.10", points=0, kind="device")
def test_cuda_float32(student, cuda, request):
    """On CUDA, float32: results stay on the GPU in float32 and match the reference"""
    with gpu_usable():
        _on_gpu(student, cuda, request, "float32", "6.10")


@check("6.11", points=0, kind="device")
def test_cuda_float16(student, cuda, request):
    """On CUDA, float16: results stay float16 on the GPU and match the reference"""
    with gpu_usable():
        _on_gpu(student, cuda, request, "float16", "6.11")


@check("6.12", points=0, kind="device")
def test_cuda_bfloat16(student, cuda, request):
    """On CUDA, bfloat16: results stay bfloat16 on the GPU and match the reference"""
    with gpu_usable():
        _on_gpu(student, cuda, request, "bfloat16", "6.12")


# ------------------------------------------------------------------ complexity and shortcuts
# the step loops over key blocks by design: T grows with the block size (T // 4), so the number of blocks
# stays 4 and any count that still grows comes from a loop over queries or keys one at a time
GROW_BASE = {"B": 1, "T": 32}
GROW = {"T": (32, 64, 128), "B": (1, 2, 3)}
# 16 key blocks: a correct solution that also takes the queries in blocks (the contract allows it) runs
# 16 x 16 tiles, measured op by op, well inside the call's time limit
MEMORY_T, MEMORY_BLOCK, MEMORY_D = 1024, 64, 8          # the score matrix (1024 x 1024, float64) is 8 MiB
MEMORY_FACTOR = 8                                         # allowed: this many times T * (d + block_size) values


def _complexity_inputs(B, T, d=D, h=2):
    return _inputs(("6.8", B, T, d, h), T, T, B, h, d)


def _memory_text(n):
    return f"{n / 2**20:.1f} MiB"


@check("6.8", points=1, kind="complexity")
def test_complexity(student, request):
    """Tiled: no Python loop over tokens or batch entries (only over the key blocks), and peak memory at T_q = T_k = 1024 within a multiple of T * (d + block_size), far below the (T_q, T_k) score matrix"""
    what = "tiled_attention(q, k, v, block_size=T // 4, causal=True)"

    def measure(B, T):
        return student.measure(student.call_request("tiled_attention", *_complexity_inputs(B, T),
                                                    block_size=T // 4, causal=True), what)
    complexity.expect_vectorised(request, measure, what, GROW_BASE, GROW)
    what = _what(MEMORY_BLOCK, True)
    args = _complexity_inputs(1, MEMORY_T, MEMORY_D, 1)
    measured = student.measure(student.call_request("tiled_attention", *args, block_size=MEMORY_BLOCK, causal=True),
                               what)
    complexity.expect_flops(measured, complexity.reference_flops(ref.tiled_attention, *(_t(a) for a in args),
                                                                 MEMORY_BLOCK, True), what)
    linear = MEMORY_T * (MEMORY_D + MEMORY_BLOCK) * 8         # one (T, d) and one (T, block) tile, float64
    allowed = MEMORY_FACTOR * linear + complexity.SLACK
    if measured.peak_bytes <= allowed:
        return
    matrix = MEMORY_T * MEMORY_T * 8
    found = ["tiled-full-scores"] if measured.peak_bytes >= matrix // 2 else []
    fail(_("{what} on q, k, v of shape {shape} held {peak} at its peak; the (T_q, T_k) score matrix alone is "
           "{matrix}, and up to {allowed} ({factor} times T * (d + block_size) values) is allowed. Tiled attention "
           "holds one (T_q, block_size) tile of scores at a time, with the running max, sum and accumulator: "
           "compute each block's scores, fold them in and drop them before the next block.", what=what,
           shape=complexity.shapes_text(args[0]), peak=_memory_text(measured.peak_bytes),
           matrix=_memory_text(matrix), allowed=_memory_text(allowed), factor=MEMORY_FACTOR), found)


@check("6.9", points=1, kind="api")
def test_no_library_attention(student):
    """Calls none of the library attention functions (F.scaled_dot_product_attention, nn.MultiheadAttention, ...)"""
    names = complexity.forbidden_apis(STEP)
    q, k, v = _inputs("6.9")
    low = [rounded(a, "float32")[0] for a in (q, k, v)]
    # not causal in float64, causal in float32: a shortcut taken in one case only is seen too
    measured = [student.measure(student.call_request("tiled_attention", *args, **_kwargs(BLOCK, causal)),
                                _what(BLOCK, causal), forbidden=names, count=False)
                for args, causal in (((q, k, v), False), (low, True))]
    complexity.expect_no_forbidden(measured, _what(BLOCK, True), names)


# ------------------------------------------------------------------ the feedback page's example (not a check)
@example
def test_example(student, request):
    """The weights exp(scores - lse) rebuilt from tiled_attention's lse, causal, for one query of shape (1, 1, 5, 4) in blocks of 2, drawn beside the reference's with the causal mask's region"""
    t = attention.EXAMPLE_T
    q, k, v = _inputs(("html", STEP), t, t, 1, 1, 4)
    scores = attention.scaled_scores(q[0, 0], k[0, 0])
    mask = np.tril(np.ones((t, t), dtype=bool))
    scores = np.where(mask, scores, -np.inf)
    expected = np.exp(scores - _reference(q, k, v, 2, True)[1][0, 0][:, None])

    def ask():
        value = student.call("tiled_attention", q, k, v, block_size=2, causal=True)
        lse = attention.second_of_pair(value)
        if not isinstance(lse, Returned) or lse.array.shape != (1, 1, t):
            return lse
        with np.errstate(all="ignore"):
            weights = np.exp(scores - lse.array.astype(np.float64)[0, 0][:, None])
        return Returned(weights, lse.kind, lse.type, lse.dtype)
    show_example(request, _("exp(scores - lse) from tiled_attention(q, k, v, block_size=2, causal=True), q, k, v of "
                            "shape (1, 1, 5, 4)"), expected, ask, mask=mask)
