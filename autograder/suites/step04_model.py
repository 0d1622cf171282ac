"""Hidden suite, decoder step 4: DecoderLM and new_cache (torch). 10 points.

The grader builds the student's DecoderLM(vocab 29, dim 16, 2 layers, 4 query heads sharing 2 key/value
heads, hidden 24) in its child process with the blocks the step's notebook gives, copies its own
weights in by name (embed.weight, blocks.0.q_proj.weight, ...), and runs forward over token batches
(B=2, T=8) at once, or as a sequence of calls on one cache of the student's new_cache(model) (a
prefill, then one or several tokens a call: protocol.model_calls_request), or left-padded with an
attention_mask. Every logit must equal the reference's (float64), at the real tokens of a padded row.
"""
import numpy as np
import torch

from autograder.checks import complexity
from autograder.checks.expect import check, expect_array, expect_close, expect_dtype, expect_seq, expect_shape, fail
from autograder.checks.inputs import randn, rng, rounded
from autograder.checks.memo import Remembering, remembered
from autograder.child import meters
from autograder.i18n import _, join
from autograder.reference.decoder import model as _known
from autograder.sandbox.protocol import Returned, Seq, encode_value, ref
from solutions.decoder import step04_model as reference

known = Remembering(_known)     # the references' answers, remembered for the next submission

STEP = "04_model"
MODEL, NEW_CACHE = "DecoderLM", "new_cache"
B, T = 2, 8
CONFIG = dict(vocab_size=29, dim=16, num_layers=2, num_heads=4, num_kv_heads=2, hidden_dim=24)
V = CONFIG["vocab_size"]


# ------------------------------------------------------------------ inputs and the reference (float64)
def _shapes(tie=False, config=CONFIG):
    """{name: shape} of the reference's parameters (a tied head is the embedding's: not listed twice)."""
    return {n: tuple(p.shape) for n, p in reference.DecoderLM(**config, tie_embeddings=tie).named_parameters()}


def _params(key, tie=False, dtype="float32", config=CONFIG):
    """Weights ~ N(0, 1/fan_in), norm scales ~ 1 + N(0, 0.1^2), exactly representable in `dtype`."""
    out = {}
    for name, shape in _shapes(tie, config).items():
        if len(shape) == 1:
            values = 1 + randn((STEP, key, name), shape, 0.1)
        else:
            values = randn((STEP, key, name), shape, 1.0 if name == "embed.weight" else shape[-1] ** -0.5)
        out[name] = rounded(values, dtype)[1]
    return out


def _tokens(key, b=B, t=T, vocab=V):
    return rng(STEP, key, "tokens", b, t).integers(0, vocab, (b, t)).astype(np.int64)


def _left_padded(key, b=3, t=T):
    """tokens (b, t) and a mask with row i padded by i * 2 tokens on the left (row 0 none)."""
    tokens = _tokens(key, b, t)
    mask = np.ones((b, t), dtype=bool)
    for i in range(b):
        mask[i, :2 * i] = False
    return tokens, mask


def _init(tie=False, config=CONFIG):
    return dict(config, tie_embeddings=tie)


# ------------------------------------------------------------------ the student's logits
def _what(chunks=None, mask=None, tie=False):
    text = f"{MODEL}(" + ", ".join(f"{k}={v}" for k, v in _init(tie).items() if k != "tie_embeddings" or tie) + ")"
    if chunks is None and mask is None:
        return _("{model}.forward(tokens)", model=text)
    if chunks is None:
        return _("{model}.forward(tokens, attention_mask=mask) with left-padded rows", model=text)
    return _("{model}: tokens fed {chunks} at a time with one cache from new_cache(model)", model=text,
             chunks="+".join(map(str, chunks)))


def _calls(tokens, chunks=None, mask=None):
    if chunks is None:
        return [(None, [tokens], {} if mask is None else {"attention_mask": mask}, False)]
    calls, start = [], 0
    for n in chunks:
        calls.append((None, [tokens[:, start:start + n], ref("cache")],
                      {} if mask is None else {"attention_mask": mask[:, :start + n]}, False))
        start += n
    return calls


def _run(student, params, tokens, chunks=None, mask=None, tie=False, dtype="float64"):
    """The student's logits of each call ([Returned]), checked for type and shape, and the cache's length
    after each call checked; and what was asked, for messages."""
    what = _what(chunks, mask, tie)
    request = student.model_calls_request(MODEL, _init(tie), params, _calls(tokens, chunks, mask), dtype,
                                          cache_fn=None if chunks is None else NEW_CACHE)
    value, shapes = student.model_calls(request, what)
    if value is None:
        _expect_structure(student, tie)
        fail(_("{what}: the grader could not load its parameters into your model.", what=what))
    outs, lengths, _read, _drawn = expect_seq(value, 4, what, ("outs", "lengths", "params", "drawn"))
    items = outs.items if isinstance(outs, Seq) else []
    got = []
    for i, (item, n) in enumerate(zip(items, chunks or [tokens.shape[1]])):
        label = what if chunks is None else _("{what}, call {i} ({n} tokens)", what=what, i=i + 1, n=n)
        out = expect_array(item, label, "torch")
        expect_shape(out, (tokens.shape[0], n, V), label)
        got.append(out)
    if chunks is not None:
        held = [v if type(v) is int else None for v in (lengths.items if isinstance(lengths, Seq) else [])]
        want = [int(n) for n in np.cumsum(chunks)]
        if held != want:
            fail(_("{what}: len(cache[0]) after each call was {got}, expected {expected}: every block appends the "
                   "new tokens' keys and values to its own cache.", what=what, got=held, expected=want))
    return got, what


def _joined(outs, mask=None):
    """The logits of all the calls, along time, as one Returned; padding positions zeroed (compared: the
    real tokens only)."""
    array = np.concatenate([o.array.astype(np.float64) for o in outs], axis=1)
    if mask is not None:
        array = array * mask[..., None]
    first = outs[0]
    return Returned(array, first.kind, first.type, first.dtype, first.device, first.requires_grad,
                    tuple(m for o in outs for m in o.mutated))


def _expect_logits(student, key, chunks=None, mask=None, tie=False, tokens=None, dtype="float64", request=None):
    params = _params(key, tie, "float32")
    tokens = _tokens(key) if tokens is None else tokens
    outs, what = _run(student, params, tokens, chunks, mask, tie, dtype)
    if request is not None:
        for out in outs:
            expect_dtype(request, out, dtype, what, "torch")
    expected = np.concatenate(known.run(params, CONFIG, tokens, chunks, mask, tie), axis=1)
    variants = {mid: np.concatenate(v, axis=1) for mid, v in known.mistakes(params, CONFIG, tokens, chunks, mask,
                                                                             tie).items()}
    if mask is not None:
        expected = expected * mask[..., None]
        variants = {mid: v * mask[..., None] for mid, v in variants.items()}
    if dtype != "float64":
        variants = {}
    expect_close(_joined(outs, mask), expected, what, dtype, "composed", variants)


# ------------------------------------------------------------------ structure
def _expect_structure(student, tie=False):
    probe = {"grader-probe.not-a-parameter": np.zeros(1)}
    request = student.model_calls_request(MODEL, _init(tie), probe, [])
    _value, shapes = student.model_calls(request, _what(tie=tie))
    have = {str(k): tuple(v) for k, v in shapes.items() if not str(k).startswith("grader-probe")}
    expected = _shapes(tie)
    if have == expected:
        return
    listing = ", ".join(f"{k} {v}" for k, v in list(have.items())[:16]) or _("no parameters")
    found = ["decoder-head-not-tied"] if tie and have == _shapes(False) else []
    fail(_("{model} should have exactly the parameters {expected}; yours has: {listing}. The grader loads its "
           "weights by these names (embed, blocks, norm, lm_head; with tie_embeddings, lm_head.weight is "
           "embed.weight itself, so a model lists it once).",
           model=f"{MODEL}(..., tie_embeddings={tie})",
           expected=", ".join(f"{k} {v}" for k, v in expected.items()), listing=listing), found)


# ------------------------------------------------------------------ graded checks
@check("4.1", points=1, kind="structure")
def test_structure(student):
    """DecoderLM has embed, blocks (num_layers DecoderBlock), norm and lm_head, named as the contract says; with tie_embeddings, one matrix for the embedding and the head"""
    _expect_structure(student)
    _expect_structure(student, tie=True)


@check("4.2", points=1.5, kind="numbers")
def test_forward(student):
    """forward(tokens) without a cache: the embedding, the blocks in order, the final norm and the head, float64"""
    _expect_logits(student, "4.2")
    _expect_logits(student, "4.2 b", tokens=_tokens("4.2 b", 3, 5))


@check("4.3", points=1, kind="numbers")
def test_tied(student):
    """With tie_embeddings=True, the head's logits are the hidden states times the embedding matrix"""
    _expect_structure(student, tie=True)
    _expect_logits(student, "4.3", tie=True)


@check("4.4", points=2, kind="property")
def test_cached(student):
    """A prefill and then one or several tokens a call with one cache give the logits of one call over the whole sequence: positions continue after the cache"""
    for chunks in ([4, 1, 1, 2], [1] * T, [5, 3]):
        _expect_logits(student, "4.4", chunks)


@check("4.5", points=2, kind="property")
def test_padding(student):
    """Left-padded rows with an attention_mask: at its real tokens, a row's logits are those it has alone (padding keys masked, positions counting real tokens only), with and without a cache"""
    tokens, mask = _left_padded("4.5")
    _expect_logits(student, "4.5", mask=mask, tokens=tokens)
    _expect_logits(student, "4.5", chunks=[6, 1, 1], mask=mask, tokens=tokens)


@check("4.6", points=0.5, kind="numbers")
def test_float32(student, request):
    """forward in float32 (dtype kept), without a cache and with one"""
    _expect_logits(student, "4.6", dtype="float32", request=request)
    _expect_logits(student, "4.6", chunks=[5, 2, 1], dtype="float32", request=request)


# ------------------------------------------------------------------ counted cost: one decode step
CACHED = (8, 16, 32)         # cached lengths a decode step is measured at


def _decode_flops(student, what, n):
    """The multiply-adds of one decode step after a prefill of n tokens: (prefill + 1 token) minus prefill."""
    params, tokens = _params("4.7"), _tokens("4.7", 1, n + 1)

    def flops(chunks):
        request = student.model_calls_request(MODEL, _init(), params, _calls(tokens, chunks), cache_fn=NEW_CACHE)
        m = student.measure(request, what)
        complexity.expect_flops(m, 0, what)
        return m.flops
    return flops([n, 1]) - flops([n])


@remembered          # a count of the reference's, the same for every submission
def _reference_decode_flops(n):
    params, tokens = _params("4.7"), torch.from_numpy(_tokens("4.7", 1, n + 1))
    model = known.build(params, CONFIG)

    def run(chunks):
        cache, start = reference.new_cache(model), 0
        for c in chunks:
            model(tokens[:, start:start + c], cache)
            start += c
    return meters.flops_of(run, [n, 1]) - meters.flops_of(run, [n])


@check("4.7", points=1.5, kind="complexity")
def test_decode_cost(student):
    """One decode step with the cache costs what the reference's costs (multiply-adds counted): per layer a constant factor of one block's work on one token, plus its attention over the cached keys"""
    what = _("one decode step of {model} with a cache", model=MODEL)
    got = [_decode_flops(student, what, n) for n in CACHED]
    expected = [_reference_decode_flops(n) for n in CACHED]
    if any(g > complexity.FLOP_FACTOR * e for g, e in zip(got, expected)):
        fail(_("{what}: with {sizes} tokens cached, one new token cost {flops} multiply-adds; the reference's cost "
               "{reference}. A decode step runs the new token alone through each block, which reads the cached "
               "keys and values as they are.", what=what, sizes=", ".join(map(str, CACHED)),
               flops=", ".join(f"{f:,}" for f in got), reference=", ".join(f"{f:,}" for f in expected)))


# ------------------------------------------------------------------ gradients
def _expect_grads(student, key, chunks=None, tie=False):
    """The gradients of sum_i <logits of call i, a random cotangent> by every parameter (float64), as the
    reference's: the graph from the embedding through the blocks, the final norm and the head (tied: the
    embedding's two uses summed) kept whole, with and without the cache."""
    params, tokens = _params(key, tie, "float32"), _tokens(key)
    names = sorted(params)
    sizes = chunks or [T]
    cotangents = [randn((STEP, key, "d_logits", i), (B, n, V)) for i, n in enumerate(sizes)]
    what = _("{what}: the gradients of the logits by every parameter", what=_what(chunks, None, tie))
    request = student.model_calls_request(MODEL, _init(tie), params, _calls(tokens, chunks), grad=True, read=names,
                                          cache_fn=None if chunks is None else NEW_CACHE,
                                          cotangents=[encode_value(c, True) for c in cotangents])
    value, _shapes = student.model_calls(request, what)
    if value is None:
        _expect_structure(student, tie)
        fail(_("{what}: the grader could not load its parameters into your model.", what=what))
    _outs, _lengths, read, _drawn = expect_seq(value, 4, what, ("outs", "lengths", "params", "drawn"))
    got = read.items if isinstance(read, Seq) else []
    missing = [n for n, g in zip(names, got) if not isinstance(g, Returned)]
    if len(got) != len(names) or missing:
        fail(_("{what}: no gradient reached {names}: the logits must depend on every parameter through operations "
               "autograd follows (no .detach(), no torch.no_grad() in forward).", what=what,
               names=join(", ", missing or names)))
    expected = known.grads(params, CONFIG, tokens, cotangents, chunks, tie)
    joined = np.concatenate([g.array.astype(np.float64).ravel() for g in got])
    expect_close(Returned(joined, "tensor", "torch.Tensor", "float64"),
                 np.concatenate([expected[n].ravel() for n in names]), what, "float64", "composed")


@check("4.8", points=0.5, kind="gradients")
def test_gradients(student):
    """Gradients of the logits w.r.t. every parameter match the reference's (float64): without a cache, through one (a prefill of 5, then 2 and 1), and with tie_embeddings"""
    _expect_grads(student, "4.8")
    _expect_grads(student, "4.8 cached", chunks=[5, 2, 1])
    _expect_grads(student, "4.8 tied", tie=True)
