"""Hidden suite, modern_attention step 5: KVCache and CausalSelfAttention with a cache (torch). 10 points.

The grader builds the student's CausalSelfAttention(24, 4) in its child process (head dim 6), copies
its own weights in by name (q_proj.weight, ...), and runs forward over x (B=2, T=6, D=24) either at
once (no cache) or chunk by chunk with one instance of the student's own KVCache (protocol
module_request's `cache`): token by token, or a prefill of any length followed by one or several new
tokens. Every chunk's output must equal the matching rows of the full causal forward. Weights are
~ N(0, 1/D): scaled scores of order 1, so every scaling and masking mistake shows in the numbers.

Parameters are sent as values exactly representable in float32, as in the first assignment's step 7.
"""
import math

import numpy as np
import torch

from autograder.checks import attention, complexity, gradients
from autograder.checks.expect import (CheckFailed, check, example, expect_array, expect_close, expect_dtype,
                                      expect_finite, expect_full_precision, expect_pair, expect_shape, fail,
                                      gpu_usable, named_on_evidence, note, show_example)
from autograder.checks.inputs import randn, rounded
from autograder.checks.memo import remembered
from autograder.checks.tolerances import large_scores_tolerance
from autograder.child import meters
from autograder.i18n import _
from autograder.reference import variants
from autograder.reference.modern import kv_cache as known
from autograder.sandbox.protocol import Returned, Seq
from solutions.modern_attention import step05_kv_cache as ref

STEP = "05_kv_cache"
B, T, D, H = 2, 6, 24, 4
HD = D // H
MODULE, CACHE = "CausalSelfAttention", "KVCache"
PROBE = "grader-probe.not-a-parameter"     # a name no module has: the child then skips forward()
PROJ = ("q_proj", "k_proj", "v_proj", "out_proj")
INIT = {"d_model": D, "num_heads": H}


# ------------------------------------------------------------------ inputs and the reference (float64)
def _params(key, dtype="float32", d=D):
    """The four weights (d, d) ~ N(0, 1/d), exactly representable in `dtype`."""
    return {f"{p}.weight": rounded(randn((STEP, key, p), (d, d), d ** -0.5), dtype)[1] for p in PROJ}


@remembered
def _reference(params, x, num_heads, chunks, cached=True):
    """[out of each chunk] of the reference module (float64 numpy); one forward over x when not cached."""
    D_ = x.shape[-1]
    mod = ref.CausalSelfAttention(D_, num_heads).double()
    with torch.no_grad():
        for name, p in mod.named_parameters():
            p.copy_(torch.from_numpy(params[name]))
        xt = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float64))
        if not cached:
            return [mod(xt).numpy()]
        cache, outs, start = ref.KVCache(), [], 0
        for n in chunks:
            outs.append(mod(xt[:, start:start + n], cache).numpy())
            start += n
        return outs


@remembered
def _mistakes(params, x, num_heads, chunks, cached=True):
    return known.decode_mistakes(params, x, num_heads, chunks, cached)


def _chunks_text(chunks):
    return "+".join(str(n) for n in chunks)


# ------------------------------------------------------------------ structure
def _fmt_shape(shape):
    return "(" + ", ".join(str(n) for n in shape) + ")"


def _expect_structure(student):
    # the probe cannot fit, so the child builds the module and reports its parameters without forward()
    _unused, shapes = student.module(MODULE, INIT, {PROBE: np.zeros(1)}, np.zeros((1, 1, D)))
    have = {str(k): tuple(v) for k, v in shapes.items() if k != PROBE}
    expected = {f"{p}.weight": (D, D) for p in PROJ}
    if have != expected:
        listing = ", ".join(f"{k} {_fmt_shape(s)}" for k, s in list(have.items())[:12]) or _("no parameters")
        fail(_("{module} should have exactly the parameters {expected}; yours has: {listing}. Define self.q_proj, "
               "self.k_proj, self.v_proj, self.out_proj = nn.Linear(d_model, d_model, bias=False) (four of them): "
               "the grader loads its weights by these names.", module=f"{MODULE}({D}, {H})",
               expected=", ".join(f"{k} {_fmt_shape(s)}" for k, s in expected.items()), listing=listing))


# ------------------------------------------------------------------ the cache on its own
def _lengths(value):
    """The len(cache) values the child reported (ints: len() admits nothing else)."""
    return [v if type(v) is int else None for v in (value.items if isinstance(value, Seq) else [])]


def _kv(key, t_new):
    return tuple(randn((STEP, key, name, t_new), (B, H, t_new, HD)) for name in ("k", "v"))


def _expect_cache(student, key, sizes):
    """KVCache() fed (k, v) of `sizes` new positions: each append returns everything held, along time,
    and len() is the number of positions held (0 before any append)."""
    pairs = [_kv(key, n) for n in sizes]
    what = f"{CACHE}().append(k, v) (" + _("new positions {sizes}", sizes=", ".join(map(str, sizes))) + ")"
    value = student.cache(CACHE, pairs)
    returned, lengths = expect_pair(value, what, ("returned", "lengths"))
    expected = known.append(pairs)
    wrong = known.append_mistakes(pairs)
    items = returned.items if isinstance(returned, Seq) else []
    if len(items) != len(pairs):
        fail(_("{what}: each append(k, v) must return the pair (k_all, v_all).", what=what))
    held = 0
    for i, (item, (k_all, v_all), n) in enumerate(zip(items, expected, sizes)):
        held += n
        label = _("{what}, append number {i}", what=what, i=i + 1)
        k_got, v_got = expect_pair(item, label, ("k_all", "v_all"))
        k_got = expect_array(k_got, label + ": k_all", "torch")
        v_got = expect_array(v_got, label + ": v_all", "torch")
        # both shapes first: k and v may be appended along different axes
        # each wrong axis one way of the one mistake: named where it matches here and on most appends so far
        named = attention.named_if_matches("kv-cache-wrong-axis", (k_got.array, v_got.array),
                                           [found[i] for found in wrong.values()])
        for got, exp, name in ((k_got, k_all, "k_all"), (v_got, v_all, "v_all")):
            try:
                expect_shape(got, exp.shape, label + ": " + name)
                expect_close(got, exp, label + ": " + name, "float64")
            except CheckFailed as failure:
                fail(failure.message + "\n" + _("The cache holds (B, h, T_cached, head_dim): append along time, "
                                                 "dim -2 (torch.cat([self.k, k], dim=-2))."), named[:1])
    got_lengths = _lengths(lengths)
    want = [0] + [int(n) for n in np.cumsum(sizes)]
    if got_lengths != want:
        fail(_("{what}: len(cache) was {got}, expected {expected} (0 before any append, then the number of "
               "positions held).", what=what, got=got_lengths, expected=want))


# ------------------------------------------------------------------ forward, with and without the cache
def _what(chunks=None):
    if chunks is None:
        return f"{MODULE}({D}, {H}).forward(x)"
    return _("{module}: x of {t} tokens fed {chunks} at a time with one KVCache", module=f"{MODULE}({D}, {H})",
             t=sum(chunks), chunks=_chunks_text(chunks))


def _run(student, params, x, chunks=None, dtype="float64", device=None):
    """The student's outputs, [(Returned) each chunk's out], checked for type and shape; with chunks, also
    len(cache) after each chunk."""
    what = _what(chunks)
    value, shapes = student.module(MODULE, INIT, params, x, dtype=dtype,
                                   cache=None if chunks is None else (CACHE, chunks))
    if value is None:
        _expect_structure(student)
        fail(_("{what}: the grader could not load its parameters into your module.", what=what))
    if chunks is None:
        out = expect_array(value, what, "torch", device=device)
        expect_shape(out, x.shape, what)
        return [out], what
    outs, lengths = expect_pair(value, what, ("outs", "lengths"))
    items = outs.items if isinstance(outs, Seq) else []
    got = []
    for i, (item, n) in enumerate(zip(items, chunks)):
        label = _("{what}: the output of chunk {i} ({n} tokens)", what=what, i=i + 1, n=n)
        out = expect_array(item, label, "torch", device=device)
        expect_shape(out, (x.shape[0], n, x.shape[2]), label)
        got.append(out)
    got_lengths = _lengths(lengths)
    want = [int(n) for n in np.cumsum(chunks)]
    if got_lengths != want:
        fail(_("{what}: len(cache) after each chunk was {got}, expected {expected}: forward must append the new "
               "tokens' keys and values to the cache it is given.", what=what, got=got_lengths,
               expected=want))
    return got, what


def _expect_outputs(student, outs, what, params, x, chunks, dtype, with_mistakes=True, cached=True, level="op"):
    """Each chunk's out against the reference's (tolerance `level`, see expect_close), the mistake that
    explains every chunk named."""
    expected = _reference(params, x, H, chunks, cached)
    problems = []
    for i, (got, exp) in enumerate(zip(outs, expected)):
        try:
            expect_close(got, exp, what if len(outs) == 1 else _("{what}, chunk {i}", what=what, i=i + 1), dtype,
                         level)
        except CheckFailed as failure:
            problems.append(failure.message)
    if not problems:
        return
    found = []
    if with_mistakes:
        rtol, atol = 1e-4, 1e-5
        # matched on every chunk here, and on most of the step's inputs compared with it (Evidence)
        found = named_on_evidence(tuple(g.array for g in outs),
                                  {mid: tuple(v) for mid, v in _mistakes(params, x, H, chunks, cached).items()},
                                  (rtol * 10, atol * 10))
        if cached and "kv-cache-no-causal-new" in found:
            # without the cache a causal forward: the mask was dropped for the cache only
            full, _w = _run(student, params, x)
            exact = attention.differs(full[0].array, _reference(params, x, H, None, False)[0]) is None
            found = [m for m in found if m != ("causal-mask-missing" if exact else "kv-cache-no-causal-new")]
    text = problems[0]
    for p in problems[1:3]:
        text = text + "\n" + p
    fail(text, found[:1] if "kv-cache-no-causal-new" not in found else ["kv-cache-no-causal-new"])


def _numbers(student, request, key, chunks=None, dtype="float64"):
    x = randn((STEP, key, "x"), (B, T, D))
    x_low, x64 = rounded(x, dtype) if dtype != "float64" else (x, x)
    params = _params(key, "float32" if dtype == "float64" else dtype)
    outs, what = _run(student, params, x_low, chunks, dtype)
    if dtype != "float64":
        what = _("{what} in {dtype}", what=what, dtype=dtype)
    for out in outs:
        expect_dtype(request, out, dtype, what, "torch")
    if dtype == "float64" and chunks is None:
        expect_full_precision(student, student.module_request(MODULE, INIT, params, x_low), what)
    _expect_outputs(student, outs, what, params, x64, chunks or [T], dtype, cached=chunks is not None)


# ------------------------------------------------------------------ graded checks
@check("5.1", points=1, kind="structure")
def test_structure(student):
    """CausalSelfAttention(d_model, num_heads) has q_proj, k_proj, v_proj, out_proj: nn.Linear(d_model, d_model, bias=False)"""
    _expect_structure(student)


@check("5.2", points=1.25, kind="numbers")
def test_cache(student):
    """KVCache on its own: append(k, v) returns everything held along time, len() counts the positions (0 when empty)"""
    _expect_cache(student, "5.2 even", (3, 3))
    _expect_cache(student, "5.2", (3, 2, 1))


@check("5.3", points=1.5, kind="numbers")
def test_forward_float64(student, request):
    """forward(x) without a cache: causal multi-head attention, float64"""
    _numbers(student, request, "5.3")


@check("5.4", points=0.5, kind="numbers")
def test_forward_float32(student, request):
    """forward(x) in float32 (dtype kept), without a cache and with one (a prefill of 3, then 2 and 1 new tokens)"""
    _numbers(student, request, "5.4", dtype="float32")
    _numbers(student, request, "5.4 cache", [3, 2, 1], dtype="float32")


@check("5.5", points=1.25, kind="property")
def test_token_by_token(student, request):
    """Decoding token by token with the cache (6 calls of one token) gives the full causal forward's outputs, and len(cache) grows by one each time"""
    _numbers(student, request, "5.5", [1] * T)


@check("5.6", points=1, kind="property")
def test_prefill(student, request):
    """After a prefill of any length (3, 1, 5 tokens), one or several new tokens at once give the full causal forward's outputs"""
    for chunks in ([3, 2, 1], [1, 4, 1], [5, 1]):
        _numbers(student, request, "5.6", chunks)


# ------------------------------------------------------------------ GPU (no points; skipped without CUDA)
def _on_gpu(student, cuda, request, dtype, key):
    chunks = [3, 2, 1]
    x_low, x64 = rounded(randn((STEP, key, "x"), (B, T, D)), dtype)
    params = _params(key, dtype)
    gpu = student.on(cuda, cast=None if dtype == "float32" else dtype)
    outs, what = _run(gpu, params, x_low, chunks, dtype, device=cuda)
    what = _("{what} on {device} in {dtype}", what=what, device=cuda, dtype=dtype)
    for out in outs:
        expect_dtype(request, out, dtype, what, "torch")
    _expect_outputs(gpu, outs, what, params, x64, chunks, dtype, with_mistakes=False)


@check("5.9", points=0, kind="device")
def test_cuda_float32(student, cuda, request):
    """On CUDA, float32: a prefill and new tokens with the cache stay on the GPU in float32 and match the reference"""
    with gpu_usable():
        _on_gpu(student, cuda, request, "float32", "5.9")


@check("5.10", points=0, kind="device")
def test_cuda_float16(student, cuda, request):
    """On CUDA, float16: a prefill and new tokens with the cache stay float16 on the GPU and match the reference"""
    with gpu_usable():
        _on_gpu(student, cuda, request, "float16", "5.10")


@check("5.11", points=0, kind="device")
def test_cuda_bfloat16(student, cuda, request):
    """On CUDA, bfloat16: a prefill and new tokens with the cache stay bfloat16 on the GPU and match the reference"""
    with gpu_usable():
        _on_gpu(student, cuda, request, "bfloat16", "5.11")


# ------------------------------------------------------------------ complexity and shortcuts
GROW = {"T": (8, 16, 32), "B": (2, 3, 4)}                 # d_model 32, 4 heads
CACHED = (16, 32, 64)                                      # the cached lengths a decode step is measured at
C_D, C_H = 32, 4


def _complexity_case(B_, T_, key="5.7"):
    return _params(key, d=C_D), randn((STEP, key, B_, T_), (B_, T_, C_D))


def _decode_flops(student, what, n):
    """The multiply-adds of one decode step after a prefill of n tokens: (prefill + 1) minus prefill."""
    params, x = _complexity_case(1, n + 1, "5.7 decode")
    def flops(chunks, x_):
        m = student.measure(student.module_request(MODULE, {"d_model": C_D, "num_heads": C_H}, params, x_,
                                                   cache=(CACHE, chunks)), what)
        complexity.expect_flops(m, 0, what)           # measured at all (no reference bound here)
        return m.flops
    return flops([n, 1], x) - flops([n], x[:, :n])


def _reference_decode_flops(n):
    params, x = _complexity_case(1, n + 1, "5.7 decode")
    mod = ref.CausalSelfAttention(C_D, C_H).double()
    with torch.no_grad():
        for name, p in mod.named_parameters():
            p.copy_(torch.from_numpy(params[name]))
    xt = torch.from_numpy(x)

    def run(chunks):
        cache, start = ref.KVCache(), 0
        for c in chunks:
            mod(xt[:, start:start + c], cache)
            start += c
    return meters.flops_of(run, [n, 1]) - meters.flops_of(run, [n])


@check("5.7", points=1, kind="complexity")
def test_complexity(student, request):
    """Vectorised (no Python loop over tokens or batch entries), and a decode step's multiply-adds grow linearly with the cached length without re-projecting the cached tokens"""
    what = f"{MODULE}({C_D}, {C_H}).forward(x)"

    def measure(B, T):
        params, x = _complexity_case(B, T)
        return student.measure(student.module_request(MODULE, {"d_model": C_D, "num_heads": C_H}, params, x), what)
    complexity.expect_vectorised(request, measure, what, {"B": 2, "T": 8}, GROW)
    what = _("one decode step of {module} with a KVCache", module=f"{MODULE}({C_D}, {C_H})")
    got = [_decode_flops(student, what, n) for n in CACHED]
    expected = [_reference_decode_flops(n) for n in CACHED]
    steps = [b - a for a, b in zip(got, got[1:])]
    if got[-1] > complexity.FLOP_FACTOR * expected[-1]:
        fail(_("{what}: with {sizes} tokens cached, one new token cost {flops} multiply-adds; the reference's "
               "cost {reference}. A decode step projects only the new token (q, k and v of one position) and "
               "reads the cached keys and values as they are: re-projecting the whole sequence makes every "
               "generated token cost as much as the prompt.", what=what, sizes=", ".join(map(str, CACHED)),
               flops=", ".join(f"{f:,}" for f in got), reference=", ".join(f"{f:,}" for f in expected)),
             ["kv-cache-reprojects"])
    if steps[0] > 0 and steps[1] > 2.5 * steps[0]:
        fail(_("{what}: with {sizes} tokens cached, one new token cost {flops} multiply-adds: the cost grows "
               "faster than the cached length. A decode step's attention reads each cached key and value once.",
               what=what, sizes=", ".join(map(str, CACHED)), flops=", ".join(f"{f:,}" for f in got)))


@check("5.8", points=1, kind="api")
def test_no_library_attention(student):
    """Calls none of the library attention functions (F.scaled_dot_product_attention, nn.MultiheadAttention, ...), with or without the cache"""
    names = complexity.forbidden_apis(STEP)
    x = randn((STEP, "5.8", "x"), (B, T, D))
    params = _params("5.8")
    measured = [student.measure(student.module_request(MODULE, INIT, params, x, cache=cache), _what(),
                                forbidden=names, count=False) for cache in (None, (CACHE, [3, 2, 1]))]
    complexity.expect_no_forbidden(measured, _what(), names)


# ------------------------------------------------------------------ gradients
SMALL_B, SMALL_T, SMALL_D, SMALL_H = 1, 3, 4, 2       # the gradcheck case: 76 inputs
GRAD_CHUNKS = [3, 2, 1]                               # a prefill of 3, then 2 new tokens and 1
SMALL_CHUNKS = [2, 1]


def _grad_case(key, b, t, d):
    """float64 parameters ~ N(0, 1/d), x (b, t, d) and, per chunk of GRAD_CHUNKS, a cotangent."""
    params = {f"{p}.weight": randn((STEP, key, p), (d, d), d ** -0.5) for p in PROJ}
    return params, randn((STEP, key, "x"), (b, t, d))


def _reference_forward(d, h, chunks):
    """forward(x, *weights) -> (out,) or (out of each chunk) of the reference module, for
    gradients.reference_gradients: the weights in PROJ order, a fresh reference KVCache per call."""
    mod = ref.CausalSelfAttention(d, h).double()
    names = [f"{p}.weight" for p in PROJ]

    def forward(x, *ws):
        def step(*args):
            return torch.func.functional_call(mod, dict(zip(names, ws)), args)
        if chunks is None:
            return (step(x),)
        cache, outs, start = ref.KVCache(), [], 0
        for n in chunks:
            outs.append(step(x[:, start:start + n], cache))
            start += n
        return tuple(outs)
    return forward


def _expect_gradients(student, key, chunks):
    """The student's float64 gradients w.r.t. x and the four weights, without a cache (chunks None) or
    through one (a prefill, then new tokens), against the reference's; gradcheck on a small case."""
    params, x = _grad_case(key, B, T, D)
    s_params, s_x = _grad_case(key + " small", SMALL_B, SMALL_T, SMALL_D)
    sizes = [T] if chunks is None else chunks
    cotangents = [randn((STEP, key, "d_out", i), (B, n, D)) for i, n in enumerate(sizes)]
    cache = None if chunks is None else (CACHE, chunks)
    what = _what(chunks)
    got = gradients.run_backward(
        student, gradients.module_target(MODULE, INIT, params, x, cache), cotangents,
        gradients.module_target(MODULE, {"d_model": SMALL_D, "num_heads": SMALL_H}, s_params, s_x,
                                None if chunks is None else (CACHE, SMALL_CHUNKS)), what)
    if got.value is None:
        _expect_structure(student)
        fail(_("{what}: the grader could not load its parameters into your module.", what=what))
    refs, expected = gradients.reference_gradients(_reference_forward(D, H, chunks), {"x": x, **params}, cotangents)
    if chunks is None:
        outs = [expect_array(got.value, what, "torch")]
    else:
        items = got.value.items if isinstance(got.value, Seq) else []
        if len(items) != len(chunks):
            fail(_("{what}: expected the output of each of the {n} chunks.", what=what, n=len(chunks)))
        outs = [expect_array(item, _("{what}: the output of chunk {i} ({n} tokens)", what=what, i=i + 1, n=n),
                             "torch") for i, (item, n) in enumerate(zip(items, chunks))]
    for out, exp in zip(outs, refs):
        expect_shape(out, exp.shape, what)
    names = ["out"] if chunks is None else [f"out[{i + 1}]" for i in range(len(chunks))]
    gradients.expect_gradients(got, list(zip(names, outs, refs)), expected, what,
                               gradients.small_case(SMALL_B, SMALL_T, SMALL_D, SMALL_H))


@check("5.12", points=1, kind="gradients")
def test_gradients(student):
    """Gradients w.r.t. x and the four weights match the reference's (float64), without a cache and through one (a prefill of 3, then 2 and 1 new tokens), and gradcheck passes"""
    _expect_gradients(student, "5.12", None)
    _expect_gradients(student, "5.12 cache", GRAD_CHUNKS)


# ------------------------------------------------------------------ large scores
# x ~ N(0, 30^2): scaled scores in the thousands, beyond exp()'s range in float64 (709) and float32 (88)
LARGE = 30.0


def _scores(params, x64):
    """The reference's scaled scores of every query over every key (float64, (B, h, T, T)), the keys after
    each query -inf: a chunk's queries see the same rows, cut at the keys held."""
    heads = [(x64 @ params[f"{p}.weight"].T).reshape(B, T, H, HD).transpose(0, 2, 1, 3) for p in ("q_proj", "k_proj")]
    scores = attention.scaled_scores(*heads)
    return np.where(np.tril(np.ones((T, T), dtype=bool)), scores, -np.inf)


def _overflows_like_plain_exp(outs, scores, dtype):
    """Are the rows of out that hold NaN or inf exactly the rows where a softmax without the max subtracted
    (exp() overflowing in `dtype`) gives NaN in some head?"""
    bad = np.concatenate([~np.isfinite(o.array).all(-1) for o in outs], axis=1)            # (B, T)
    with np.errstate(over="ignore", invalid="ignore"):
        naive = variants.naive_softmax(scores.astype(dtype))
    return bool(np.array_equal(bad, (~np.isfinite(naive)).any(axis=(1, 3))))


def _expect_stable(student, request, key, dtype, chunks=None):
    """forward on large scores in `dtype`, without a cache or chunk by chunk with one: every output finite
    (a softmax that overflows named), and right at a tolerance that grows with the scores."""
    x_low, x64 = rounded(randn((STEP, key, "x"), (B, T, D), LARGE), dtype)
    params = _params(key, dtype)
    outs, what = _run(student, params, x_low, chunks, dtype)
    what = _("{what} in {dtype}", what=what, dtype=dtype)
    scores = _scores(params, x64)
    largest = float(np.abs(scores[np.isfinite(scores)]).max())
    if not all(np.isfinite(o.array).all() for o in outs):
        found = (["softmax-unstable"] if largest > attention.EXP_LIMIT[dtype]
                 and _overflows_like_plain_exp(outs, scores, dtype) else [])
        hint = _("The largest scores here are about {largest}; exp() of more than {limit} overflows "
                 "{dtype}. torch.softmax, or subtracting each row's maximum before exp(), avoids that.",
                 largest=f"{largest:.0f}", limit=attention.EXP_LIMIT[dtype], dtype=dtype)
        for i, out in enumerate(outs):
            try:
                expect_finite(out, what if chunks is None else _("{what}, chunk {i}", what=what, i=i + 1), hint)
            except CheckFailed as failure:
                fail(failure.message, found)
    try:
        _expect_outputs(student, outs, what, params, x64, chunks or [T], dtype, cached=chunks is not None,
                        level=large_scores_tolerance(dtype, largest))
    except CheckFailed as failure:
        if not failure.misconceptions:
            raise
        # stable is all this check asks: the mistake costs the numbers checks' points
        note(request, _("Stable, but the values show the mistake named in {check} ({ids}); "
                        "that costs the numbers points, not these.",
                        check="5.3" if chunks is None else "5.6", ids=", ".join(failure.misconceptions)))


@check("5.13", points=0.5, kind="stability")
def test_large_scores(student, request):
    """No overflow when scores reach the thousands, float64 and float32, without a cache and with one (a prefill of 3, then 2 and 1 new tokens): every output finite, values right"""
    for dtype in ("float64", "float32"):
        _expect_stable(student, request, "5.13", dtype)
        _expect_stable(student, request, "5.13 cache", dtype, [3, 2, 1])


# ------------------------------------------------------------------ the feedback page's example (not a check)
@example
def test_example(student, request):
    """Head 0's weights of 2 new tokens over all 5 positions, computed from the keys your KVCache holds after a prefill of 3 (the reference's queries), drawn beside the reference's with the causal mask's region"""
    key = ("html", STEP)
    pairs = [_kv(key, 3), _kv(key, 2)]
    q = randn(key + ("q",), (B, H, 2, HD))
    mask = np.arange(5)[None, :] <= np.arange(2)[:, None] + 3

    def weights(k_all):
        s = np.where(mask, attention.scaled_scores(q[0, 0], k_all[0, 0]), -np.inf)
        e = np.exp(s - s.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)
    expected = weights(known.append(pairs)[1][0])

    def ask():
        value = student.cache(CACHE, pairs)
        items = value.items[0].items if isinstance(value, Seq) and isinstance(value.items[0], Seq) else []
        second = items[1] if len(items) == 2 else None
        k_all = second.items[0] if isinstance(second, Seq) and second.items else None
        if not isinstance(k_all, Returned) or k_all.array.shape != (B, H, 5, HD):
            fail(_("its second append did not return k_all of shape {shape}", shape=(B, H, 5, HD)))
        return Returned(weights(k_all.array.astype(np.float64)), k_all.kind, k_all.type, k_all.dtype)
    show_example(request, _("weights of 2 new tokens over 5 positions (head 0) from the keys KVCache holds after "
                            "appending 3 and 2 positions"), expected, ask, mask=mask)
