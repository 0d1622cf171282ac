"""decoder step 4 (DecoderLM): the reference's logits on the grader's weights, and its known mistakes
applied to it (torch float64): what a model with one mistake gives on the same inputs."""
import functools

import numpy as np
import torch

from solutions.decoder import step04_model as ref

# how each mistake changes the reference's forward (see forward)
MISTAKES = {
    "decoder-positions-restart": "every call's positions start at 0, the cache ignored",
    "decoder-padding-unmasked": "the attention_mask not given to the blocks (padding keys attended)",
    "decoder-final-norm-missing": "no final norm before the head",
}


def build(params, config, tie=False, dtype=torch.float64):
    """The reference DecoderLM(**config) holding `params` ({name: array}) in `dtype`, eval mode."""
    model = ref.DecoderLM(**config, tie_embeddings=tie).to(dtype)
    own = dict(model.named_parameters())
    with torch.no_grad():
        for name, value in params.items():
            own[name].copy_(torch.from_numpy(np.asarray(value)))
    return model.eval()


def forward(model, tokens, cache=None, mask=None, mistake=None):
    """The reference's forward, or with `mistake` (an id of MISTAKES)."""
    T = tokens.shape[1]
    past = 0 if cache is None else len(cache[0])
    if mistake == "decoder-positions-restart":
        positions = torch.arange(T) if mask is None else (mask[:, -T:].long().cumsum(-1) - 1).clamp(min=0)
    elif mask is None:
        positions = past + torch.arange(T)
    else:
        positions = (mask.long().cumsum(-1) - 1)[:, -T:].clamp(min=0)
    x = model.embed(tokens)
    key_mask = None if mistake == "decoder-padding-unmasked" else mask
    for i, block in enumerate(model.blocks):
        x = block(x, None if cache is None else cache[i], positions, key_mask)
    if mistake != "decoder-final-norm-missing":
        x = model.norm(x)
    return model.lm_head(x)


def run(params, config, tokens, chunks=None, mask=None, tie=False, mistake=None):
    """[the logits of each call] (float64 numpy): one call over tokens (chunks None), or the chunks one call
    each with one cache (a prefill, then new tokens); mask (B, T) bool, each call given its columns so far."""
    model = build(params, config, tie)
    tokens = torch.from_numpy(np.asarray(tokens))
    mask = None if mask is None else torch.from_numpy(np.asarray(mask))
    with torch.no_grad():
        if chunks is None:
            return [forward(model, tokens, None, mask, mistake).numpy()]
        cache, outs, start = ref.new_cache(model), [], 0
        for n in chunks:
            outs.append(forward(model, tokens[:, start:start + n], cache,
                                None if mask is None else mask[:, :start + n], mistake).numpy())
            start += n
        return outs


def grads(params, config, tokens, cotangents, chunks=None, tie=False):
    """{name: float64 gradient} of sum_i <logits of call i, cotangents[i]> by each of the reference's parameters:
    one call over tokens (chunks None), or the chunks one call each with one cache."""
    model = build(params, config, tie)
    tokens = torch.from_numpy(np.asarray(tokens))
    outs, cache, start = [], (None if chunks is None else ref.new_cache(model)), 0
    for n in chunks or [tokens.shape[1]]:
        outs.append(model(tokens[:, start:start + n], cache))
        start += n
    total = sum((o * torch.from_numpy(np.asarray(c))).sum() for o, c in zip(outs, cotangents))
    named = dict(model.named_parameters())
    got = torch.autograd.grad(total, list(named.values()))
    return {n: g.numpy() for n, g in zip(named, got)}


def mistakes(params, config, tokens, chunks=None, mask=None, tie=False):
    """{id: [the logits of each call]} of every mistake that differs from the reference here."""
    right = run(params, config, tokens, chunks, mask, tie)
    out = {}
    for mid in MISTAKES:
        got = run(params, config, tokens, chunks, mask, tie, mid)
        if any(not np.allclose(a, b, rtol=1e-6, atol=1e-8) for a, b in zip(got, right)):
            out[mid] = got
    return out


# ------------------------------------------------------------------ the audit's equivalence probes
CONFIG = dict(vocab_size=11, dim=8, num_layers=2, num_heads=2, num_kv_heads=1, hidden_dim=12)
MASK = torch.tensor([[False, False, True, True, True, True, True], [True] * 7])


def weights(rng, dtype, scale, config=CONFIG, tie=False, grad=False):
    """{name: tensor} for the reference DecoderLM(**config) (its parameter names, lm_head left out when tied):
    weights of unit-order products, the embedding scaled by `scale`; float64 ones require grad when `grad`."""
    torch.manual_seed(0)
    shapes = {n: tuple(p.shape) for n, p in ref.DecoderLM(**config, tie_embeddings=tie).named_parameters()}
    out = {}
    for name, shape in shapes.items():
        if name.endswith("norm.weight"):
            a = 1 + 0.2 * rng.standard_normal(shape)
        elif name == "embed.weight":
            a = rng.standard_normal(shape) * scale
        else:
            a = rng.standard_normal(shape) * shape[-1] ** -0.5
        out[name] = torch.tensor(a.astype(dtype), requires_grad=grad)
    return out


def model_of(module, params, config=CONFIG, tie=False):
    """(the module's DecoderLM(**config), a function calling its forward with `params` as its parameters):
    the gradients reach `params`, and a model whose parameters are named otherwise fails."""
    torch.manual_seed(0)
    dtype = next(iter(params.values())).dtype
    model = module.DecoderLM(**config, tie_embeddings=tie).to(dtype).eval()
    missing = {n for n, _p in model.named_parameters()} - set(params)
    if missing:
        raise KeyError(f"parameters not in the reference: {sorted(missing)}")
    return model, lambda *a, **k: torch.func.functional_call(model, params, a, k)


def _run(module, *flat, names=(), tie=False, chunks=None, mask=None):
    """The module's DecoderLM holding these weights over the tokens (flat's last item), in one call (chunks
    None) or chunk by chunk with the module's new_cache: every call's logits, then len(cache[0]) after each."""
    *values, tokens = flat
    model, call = model_of(module, dict(zip(names, values)), tie=tie)
    if chunks is None:
        return (call(tokens) if mask is None else call(tokens, None, mask),)
    cache, outs, lengths, start = module.new_cache(model), [], [], 0
    for n in chunks:
        part = tokens[:, start:start + n]
        outs.append(call(part, cache) if mask is None else call(part, cache, mask[:, :start + n]))
        lengths.append(len(cache[0]))
        start += n
    return tuple(outs) + (torch.tensor(lengths, dtype=outs[0].dtype), torch.tensor(len(cache), dtype=outs[0].dtype))


def probes(rng, dtype, scale):
    """[(callable, args, kwargs)] for the mutation audit's equivalence check: a 2-layer model (2 query heads over
    1 key/value head) untied and tied, without a cache, token by token, after a prefill, with left padding
    (in one call and after a prefill); float64 weights require grad."""
    grad = dtype == "float64"
    calls = []
    for tie, chunks, padded in ((False, None, False), (True, None, False), (False, [1] * 7, False),
                                (True, [3, 2, 1, 1], False), (False, None, True), (False, [4, 2, 1], True)):
        params = weights(rng, dtype, scale, tie=tie, grad=grad)
        tokens = torch.tensor(rng.integers(0, CONFIG["vocab_size"], (2, 7)))
        kw = dict(names=tuple(params), tie=tie, chunks=chunks, mask=MASK if padded else None)
        calls.append((functools.partial(_run, **kw), list(params.values()) + [tokens], {}))
    return calls
