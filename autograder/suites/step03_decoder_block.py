"""Hidden suite, decoder step 3: LayerCache and DecoderBlock (torch). 10 points.

The grader builds the student's DecoderBlock(24, 4, 2, 40) in its child process (head_dim 6, two query
heads per key/value head), copies its own weights in by name (attn_norm.weight, q_proj.weight, ...,
ffn.down_proj.weight) and runs forward over x (B=2, T=6, D=24) at once, or chunk by chunk with one
instance of the student's own LayerCache (protocol module_request's `cache`): token by token, or a
prefill followed by one or several new tokens, the keys handed to cache.append recorded. Every chunk's
output must equal the matching rows of the whole sequence's. Weights ~ N(0, 1/D), norms' scales
~ 1 + N(0, 0.2^2): every mistake of composition shows in the numbers, or in the keys the cache gets.
Expected values from the reference; reference/decoder/decoder_block.py writes its arithmetic out once
more with each mistake.
"""
import numpy as np
import torch

from autograder.checks import complexity, gradients
from autograder.checks.expect import (CheckFailed, check, expect_array, expect_close, expect_dtype,
                                      expect_full_precision, expect_pair, expect_seq, expect_shape, fail, gpu_usable,
                                      named_on_evidence)
from autograder.checks.inputs import randn, rounded
from autograder.checks.memo import Remembering, remembered
from autograder.child import meters
from autograder.i18n import _
from autograder.reference.decoder import decoder_block as _known
from autograder.sandbox.protocol import Seq, encode_value
from solutions.decoder import step03_decoder_block as ref

known = Remembering(_known)     # the references' answers, remembered for the next submission

STEP = "03_decoder_block"
B, T, D, H, KV, HID = 2, 6, 24, 4, 2, 40
HD = D // H
MODULE, CACHE = "DecoderBlock", "LayerCache"
PROBE = "grader-probe.not-a-parameter"
INIT = {"dim": D, "num_heads": H, "num_kv_heads": KV, "hidden_dim": HID}


def _shapes(d=D, h=H, kv=KV, hid=HID):
    hd = d // h
    return {"attn_norm.weight": (d,), "q_proj.weight": (d, d), "k_proj.weight": (kv * hd, d),
            "v_proj.weight": (kv * hd, d), "o_proj.weight": (d, d), "ffn_norm.weight": (d,),
            "ffn.gate_proj.weight": (hid, d), "ffn.up_proj.weight": (hid, d), "ffn.down_proj.weight": (d, hid)}


def _params(key, dtype="float32", d=D, h=H, kv=KV, hid=HID):
    """Every parameter by name, exactly representable in `dtype`."""
    out = {}
    for name, shape in _shapes(d, h, kv, hid).items():
        values = (1 + randn((STEP, key, name), shape, 0.2)) if len(shape) == 1 else \
            randn((STEP, key, name), shape, shape[1] ** -0.5)
        out[name] = rounded(values, dtype)[1]
    return out


def _module_text(d=D, h=H, kv=KV, hid=HID):
    return f"{MODULE}({d}, {h}, {kv}, {hid})"


def _what(chunks=None):
    if chunks is None:
        return f"{_module_text()}.forward(x)"
    return _("{module}: x of {t} tokens fed {chunks} at a time with one LayerCache", module=_module_text(),
             t=sum(chunks), chunks="+".join(str(n) for n in chunks))


def _structure(student):
    _unused, shapes = student.module(MODULE, INIT, {PROBE: np.zeros(1)}, np.zeros((1, 1, D)))
    have = {str(k): tuple(v) for k, v in shapes.items() if k != PROBE}
    expected = _shapes()
    if have != expected:
        listing = ", ".join(f"{k} {tuple(s)}" for k, s in list(have.items())[:16]) or _("no parameters")
        fail(_("{module} should have exactly the parameters {expected}; yours has: {listing}. attn_norm and "
               "ffn_norm are RMSNorm(dim, eps); q_proj and o_proj nn.Linear(dim, dim, bias=False); k_proj and "
               "v_proj nn.Linear(dim, num_kv_heads * head_dim, bias=False); ffn SwiGLU(dim, hidden_dim): the "
               "grader loads its weights by these names.", module=_module_text(),
               expected=", ".join(f"{k} {s}" for k, s in expected.items()), listing=listing))


def _lengths(value):
    return [v if type(v) is int else None for v in (value.items if isinstance(value, Seq) else [])]


# ------------------------------------------------------------------ running the student's block
def _run(student, params, x, chunks=None, dtype="float64", device=None, record=False, kwargs=None, chunked=None):
    """[each chunk's out (Returned)], what, and with record the keys handed to cache.append."""
    what = _what(chunks)
    cache = None if chunks is None else ((CACHE, chunks, True) if record else (CACHE, chunks))
    value, _shapes_ = student.module(MODULE, INIT, params, x, dtype=dtype, cache=cache, kwargs=kwargs, chunked=chunked)
    if value is None:
        _structure(student)
        fail(_("{what}: the grader could not load its parameters into your module.", what=what))
    if chunks is None:
        out = expect_array(value, what, "torch", device=device)
        expect_shape(out, x.shape, what)
        return [out], what, None
    items = expect_seq(value, 3, what, ("outs", "lengths", "keys")) if record else expect_pair(value, what,
                                                                                                ("outs", "lengths"))
    outs = items[0].items if isinstance(items[0], Seq) else []
    got = []
    for i, (item, n) in enumerate(zip(outs, chunks)):
        label = _("{what}: the output of chunk {i} ({n} tokens)", what=what, i=i + 1, n=n)
        out = expect_array(item, label, "torch", device=device)
        expect_shape(out, (x.shape[0], n, x.shape[2]), label)
        got.append(out)
    if len(got) != len(chunks):
        fail(_("{what}: expected the output of each of the {n} chunks.", what=what, n=len(chunks)))
    want = [int(n) for n in np.cumsum(chunks)]
    if _lengths(items[1]) != want:
        fail(_("{what}: len(cache) after each chunk was {got}, expected {expected}: forward must append the new "
               "tokens' keys and values to the cache it is given.", what=what, got=_lengths(items[1]),
               expected=want))
    keys = None
    if record:
        keys = [k for k in (items[2].items if isinstance(items[2], Seq) else [])]
    return got, what, keys


def _expect_outputs(outs, what, params, x64, chunks, dtype, level="composed", positions=None, key_mask=None,
                    name=True):
    expected, _k = known.block(params, x64, H, KV, chunks, positions, key_mask)
    problems = []
    for i, (got, exp) in enumerate(zip(outs, expected)):
        try:
            expect_close(got, exp.numpy(), what if len(outs) == 1 else _("{what}, chunk {i}", what=what, i=i + 1),
                         dtype, level)
        except CheckFailed as failure:
            problems.append(failure.message)
    if not problems:
        return
    found = []
    if name:
        candidates = {mid: tuple(v) for mid, v in
                      known.block_mistakes(params, x64, H, KV, chunks, positions, key_mask).items()}
        found = named_on_evidence(tuple(o.array for o in outs), candidates, (1e-4, 1e-5))
    text = problems[0]
    for p in problems[1:3]:
        text = text + "\n" + p
    fail(text, found[:1])


def _numbers(student, request, key, chunks=None, dtype="float64"):
    x_low, x64 = rounded(randn((STEP, key, "x"), (B, T, D)), dtype)
    params = _params(key, "float32" if dtype == "float64" else dtype)
    outs, what, _keys = _run(student, params, x_low, chunks, dtype)
    if dtype != "float64":
        what = _("{what} in {dtype}", what=what, dtype=dtype)
    for out in outs:
        expect_dtype(request, out, dtype, what, "torch")
    if dtype == "float64" and chunks is None:
        expect_full_precision(student, student.module_request(MODULE, INIT, params, x_low), what)
    _expect_outputs(outs, what, params, x64, chunks, dtype)


# ------------------------------------------------------------------ graded checks
@check("3.1", points=1, kind="structure")
def test_structure(student):
    """DecoderBlock(dim, num_heads, num_kv_heads, hidden_dim) has attn_norm, q_proj, k_proj, v_proj (num_kv_heads * head_dim outputs), o_proj, ffn_norm and ffn with the contract's names and shapes"""
    _structure(student)


@check("3.2", points=1, kind="numbers")
def test_cache(student):
    """LayerCache on its own: append(k, v) returns everything held along time, len() counts the positions (0 when empty)"""
    sizes = (3, 2, 1)
    pairs = [tuple(randn((STEP, "3.2", name, i), (B, KV, n, HD)) for name in ("k", "v")) for i, n in enumerate(sizes)]
    what = f"{CACHE}().append(k, v) (" + _("new positions {sizes}", sizes=", ".join(map(str, sizes))) + ")"
    returned, lengths = expect_pair(student.cache(CACHE, pairs), what, ("returned", "lengths"))
    items = returned.items if isinstance(returned, Seq) else []
    if len(items) != len(pairs):
        fail(_("{what}: each append(k, v) must return the pair (k_all, v_all).", what=what))
    for i, item in enumerate(items):
        label = _("{what}, append number {i}", what=what, i=i + 1)
        k_got, v_got = expect_pair(item, label, ("k_all", "v_all"))
        for got, which, name in ((k_got, 0, "k_all"), (v_got, 1, "v_all")):
            got = expect_array(got, label + ": " + name, "torch")
            exp = np.concatenate([p[which] for p in pairs[:i + 1]], axis=2)
            try:
                expect_shape(got, exp.shape, label + ": " + name)
                expect_close(got, exp, label + ": " + name, "float64")
            except CheckFailed as failure:
                fail(failure.message + "\n" + _("The cache holds (B, num_kv_heads, T_cached, head_dim): append along "
                                                 "time, dim -2 (torch.cat([self.k, k], dim=-2))."))
    want = [0] + [int(n) for n in np.cumsum(sizes)]
    if _lengths(lengths) != want:
        fail(_("{what}: len(cache) was {got}, expected {expected} (0 before any append, then the number of "
               "positions held).", what=what, got=_lengths(lengths), expected=want))


@check("3.3", points=1.75, kind="numbers")
def test_forward_float64(student, request):
    """forward(x) without a cache, float64: pre-norm residuals, causal grouped-query attention with RoPE on queries and keys, SwiGLU"""
    _numbers(student, request, "3.3")
    _numbers(student, request, "3.3 again")


@check("3.4", points=0.5, kind="numbers")
def test_forward_float32(student, request):
    """forward(x) in float32 (dtype kept), without a cache and with one (a prefill of 3, then 2 and 1 new tokens)"""
    _numbers(student, request, "3.4", dtype="float32")
    _numbers(student, request, "3.4 cache", [3, 2, 1], dtype="float32")


@check("3.5", points=2, kind="property")
def test_cached_decode(student, request):
    """Decoding with the cache (token by token; a prefill of 3 then 2 and 1; a prefill of 4 then 2) gives the whole sequence's outputs: RoPE at the cache's offset, the causal mask aligned at the end"""
    for chunks in ([1] * T, [3, 2, 1], [4, 2]):
        _numbers(student, request, "3.5", chunks)


@check("3.6", points=1, kind="property")
def test_cache_contents(student):
    """What forward hands to cache.append: the new tokens' keys after RoPE, with num_kv_heads heads (never repeated to num_heads)"""
    chunks = [3, 2, 1]
    x = randn((STEP, "3.6", "x"), (B, T, D))
    params = _params("3.6")
    outs, what, keys = _run(student, params, x, chunks, record=True)
    if not keys:
        fail(_("{what}: forward never called cache.append(k, v): the grader reads what the cache receives there. "
               "Append the new keys and values with the cache's own append.", what=what))
    expected = known.stored_keys(params, x, H, KV, chunks)
    arrays = [expect_array(k, _("{what}: the keys appended", what=what), "torch") for k in keys]
    candidates = {mid: tuple(known.stored_keys(params, x, H, KV, chunks, mid)) for mid in known.STORED}
    ok = len(arrays) == len(expected) and all(
        a.shape == e.shape and np.allclose(a.array, e, rtol=1e-6, atol=1e-8) for a, e in zip(arrays, expected))
    if ok:
        named_on_evidence(tuple(a.array for a in arrays), candidates, (1e-5, 1e-7))     # right: evidence against each
        return
    found = named_on_evidence(tuple(a.array for a in arrays), candidates, (1e-5, 1e-7))
    right = known.block(params, x, H, KV, chunks)[0]
    if not found and not all(o.array.shape == r.shape and np.allclose(o.array, r.numpy(), rtol=1e-6, atol=1e-8)
                             for o, r in zip(outs, right)):
        fail(_("{what}: the outputs already differ from the expected ones (check 3.5 says where), and so do the "
               "keys handed to cache.append: they are judged once the outputs are right.", what=what))
    shapes = ", ".join(str(a.shape) for a in arrays[:4])
    fail(_("{what}: the keys handed to cache.append were {shapes}; expected the new tokens' keys after RoPE, "
           "(B, num_kv_heads, T_new, head_dim) = {expected} for each call, those of {n} calls.", what=what,
           shapes=shapes, expected=", ".join(str(e.shape) for e in expected), n=len(expected)), found[:1])


@check("3.7", points=1, kind="property")
def test_positions_and_key_mask(student, request):
    """positions (B, T) and key_mask (B, T_cached + T) given: two left-padded rows, their positions counting real tokens only (from 4093 on; int64, and int32 with the cache), padded keys weighted 0 (at once, and a prefill of 3 then 3 with the cache)"""
    x = randn((STEP, "3.7", "x"), (B, T, D))
    params = _params("3.7")
    mask = np.array([[False, False, True, True, True, True], [True] * T])
    # far from 0 (a context continued at 4093): angles computed in float32 show there
    positions = (np.maximum(np.cumsum(mask, axis=-1) - 1, 0) + 4093).astype(np.int64)
    for chunks in (None, [3, 3]):
        kwargs = {"positions": positions if chunks is None else positions.astype(np.int32), "key_mask": mask}
        outs, what, _k = _run(student, params, x, chunks, kwargs=kwargs,
                              chunked={"positions": "chunk", "key_mask": "prefix"})
        what = _("{what}, with positions and key_mask", what=what)
        for out in outs:
            if not np.isfinite(out.array).all():
                fail(_("{what} gave NaN or inf: the first query of a left-padded row has no real key before it. "
                       "Give a query with no allowed key zero weights.", what=what))
        _expect_outputs(outs, what, params, x, chunks, "float64", positions=positions, key_mask=mask, name=False)


# ------------------------------------------------------------------ the counted cost
C_D, C_H, C_KV, C_HID = 32, 4, 2, 64
C_INIT = {"dim": C_D, "num_heads": C_H, "num_kv_heads": C_KV, "hidden_dim": C_HID}
CACHED = (16, 32, 64)


def _cost_case(b, t, key="3.8"):
    return _params(key, d=C_D, h=C_H, kv=C_KV, hid=C_HID), randn((STEP, key, b, t), (b, t, C_D))


def _decode_flops(student, what, n):
    """The multiply-adds of one decode step after a prefill of n tokens: (prefill + 1) minus prefill."""
    params, x = _cost_case(1, n + 1, "3.8 decode")

    def flops(chunks, x_):
        m = student.measure(student.module_request(MODULE, C_INIT, params, x_, cache=(CACHE, chunks)), what)
        complexity.expect_flops(m, 0, what)
        return m.flops
    return flops([n, 1], x) - flops([n], x[:, :n])


@remembered          # a count of the reference's, the same for every submission
def _reference_decode_flops(n):
    params, x = _cost_case(1, n + 1, "3.8 decode")
    mod = ref.DecoderBlock(C_D, C_H, C_KV, C_HID).double()
    with torch.no_grad():
        for name, p in mod.named_parameters():
            p.copy_(torch.from_numpy(params[name]))
    xt = torch.from_numpy(x)

    def run(chunks):
        cache, start = ref.LayerCache(), 0
        for c in chunks:
            mod(xt[:, start:start + c], cache)
            start += c
    return meters.flops_of(run, [n, 1]) - meters.flops_of(run, [n])


@remembered          # a count of the reference's, the same for every submission
def _one_token_flops():
    """One block's work on one token, counted: the reference without a cache on x of one token."""
    params, x = _cost_case(1, 1, "3.8 decode")
    mod = ref.DecoderBlock(C_D, C_H, C_KV, C_HID).double()
    return meters.flops_of(lambda: mod(torch.from_numpy(x)))


@check("3.8", points=1, kind="complexity")
def test_cost(student, request):
    """Vectorised (no Python loop over tokens or batch entries), and decoding one token with the cache costs a constant factor of one block's work on one token (multiply-adds counted, growing only with the attention over the cached keys)"""
    what = f"{_module_text(C_D, C_H, C_KV, C_HID)}.forward(x)"

    def measure(B, T):
        params, x = _cost_case(B, T)
        return student.measure(student.module_request(MODULE, C_INIT, params, x), what)
    complexity.expect_vectorised(request, measure, what, {"B": 2, "T": 8}, {"T": (8, 16, 32), "B": (2, 3, 4)})
    what = _("one decode step of {module} with a LayerCache", module=_module_text(C_D, C_H, C_KV, C_HID))
    got = [_decode_flops(student, what, n) for n in CACHED]
    expected = [_reference_decode_flops(n) for n in CACHED]
    one = _one_token_flops()
    steps = [b - a for a, b in zip(got, got[1:])]
    if got[-1] > complexity.FLOP_FACTOR * expected[-1]:
        fail(_("{what}: with {sizes} tokens cached, one new token cost {flops} multiply-adds; the reference's cost "
               "{reference}, about the {one} of one block on one token plus the attention over the cached keys. "
               "A decode step runs the block on the new token only and reads the cached keys and values as they "
               "are.", what=what, sizes=", ".join(map(str, CACHED)), flops=", ".join(f"{f:,}" for f in got),
               reference=", ".join(f"{f:,}" for f in expected), one=f"{one:,}"))
    if steps[0] > 0 and steps[1] > 2.5 * steps[0]:
        fail(_("{what}: with {sizes} tokens cached, one new token cost {flops} multiply-adds: the cost grows "
               "faster than the cached length. A decode step's attention reads each cached key and value once.",
               what=what, sizes=", ".join(map(str, CACHED)), flops=", ".join(f"{f:,}" for f in got)))


# ------------------------------------------------------------------ gradients
SMALL = {"dim": 4, "num_heads": 2, "num_kv_heads": 1, "hidden_dim": 3}


def _reference_forward(chunks, positions=None):
    mod = ref.DecoderBlock(D, H, KV, HID).double()
    names = [n for n, _p in mod.named_parameters()]

    def forward(x, *ws):
        def step(*args):
            return torch.func.functional_call(mod, dict(zip(names, ws)), args)
        if chunks is None:
            return (step(x) if positions is None else step(x, None, torch.from_numpy(positions)),)
        cache, outs, start = ref.LayerCache(), [], 0
        for n in chunks:
            outs.append(step(x[:, start:start + n], cache))
            start += n
        return tuple(outs)
    return forward, names


def _expect_gradients(student, key, chunks, positions=None):
    forward, names = _reference_forward(chunks, positions)
    raw = {n: randn((STEP, key, n), s, 0.2) + 1 if len(s) == 1 else randn((STEP, key, n), s, s[1] ** -0.5)
           for n, s in _shapes().items()}
    params = {n: raw[n] for n in names}
    x = randn((STEP, key, "x"), (B, T, D))
    sizes = [T] if chunks is None else chunks
    cotangents = [randn((STEP, key, "d_out", i), (B, n, D)) for i, n in enumerate(sizes)]
    s_params = {n: randn((STEP, key, "small", n), s, 0.5) + (1 if len(s) == 1 else 0)
                for n, s in _shapes(4, 2, 1, 3).items()}
    s_x = randn((STEP, key, "small x"), (1, 3, 4))
    cache = None if chunks is None else (CACHE, chunks)
    what = _what(chunks)
    target = gradients.module_target(MODULE, INIT, params, x, cache,
                                     None if positions is None else {"positions": positions})
    if positions is not None:       # forward's positions, an int64 tensor as the contract has it (not differentiated)
        target["forward"]["kwargs"]["positions"] = encode_value(positions, True)
    got = gradients.run_backward(
        student, target, cotangents,
        gradients.module_target(MODULE, SMALL, s_params, s_x, None if chunks is None else (CACHE, [2, 1])), what)
    if got.value is None:
        _structure(student)
        fail(_("{what}: the grader could not load its parameters into your module.", what=what))
    refs, expected = gradients.reference_gradients(forward, {"x": x, **params}, cotangents)
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
    labels = ["out"] if chunks is None else [f"out[{i + 1}]" for i in range(len(chunks))]
    gradients.expect_gradients(got, list(zip(labels, outs, refs)), expected, what, gradients.small_case(1, 3, 4, 2))


@check("3.9", points=0.5, kind="gradients")
def test_gradients(student):
    """Gradients w.r.t. x and every parameter match the reference's (float64), without a cache, through one (a prefill of 3, then 2 and 1), and at positions from 4093 on, and gradcheck passes"""
    _expect_gradients(student, "3.9", None)
    _expect_gradients(student, "3.9 cache", [3, 2, 1])
    _expect_gradients(student, "3.9 offset", None, np.arange(4093, 4093 + T))      # positions not starting at 0


# ------------------------------------------------------------------ GPU (no points; skipped without CUDA)
@check("3.10", points=0, kind="device")
def test_cuda(student, cuda, request):
    """On CUDA, float32 and bfloat16: a prefill and new tokens with the cache stay on the GPU in the input's dtype and match the reference"""
    with gpu_usable():
        for dtype in ("float32", "bfloat16"):
            x_low, x64 = rounded(randn((STEP, "3.10", "x"), (B, T, D)), dtype)
            params = _params("3.10", dtype)
            gpu = student.on(cuda, cast=None if dtype == "float32" else dtype)
            outs, what, _k = _run(gpu, params, x_low, [3, 2, 1], dtype, device=cuda)
            what = _("{what} on {device} in {dtype}", what=what, device=cuda, dtype=dtype)
            for out in outs:
                expect_dtype(request, out, dtype, what, "torch")
            _expect_outputs(outs, what, params, x64, [3, 2, 1], dtype, name=False)


# ------------------------------------------------------------------ scores in the thousands
@check("3.11", points=0.25, kind="numbers")
def test_large_scores(student):
    """Attention scores in the thousands (q_proj and k_proj weights 32 times larger), without a cache and with one (a prefill of 4, then 2): finite and right, the softmax's exp taken after subtracting the max"""
    params = _params("3.11")
    for name in ("q_proj.weight", "k_proj.weight"):
        params[name] = params[name] * 32.0                  # a power of two: still exact in float32
    x = randn((STEP, "3.11", "x"), (B, T, D))
    for chunks in (None, [4, 2]):
        outs, what, _k = _run(student, params, x, chunks)
        what = _("{what}, q_proj and k_proj weights 32 times larger (scores in the thousands)", what=what)
        _expect_outputs(outs, what, params, x, chunks, "float64")
