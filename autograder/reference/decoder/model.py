"""decoder step 4 (DecoderLM): the reference's logits on the grader's weights, and its known mistakes
applied to it (torch float64): what a model with one mistake gives on the same inputs."""
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


def mistakes(params, config, tokens, chunks=None, mask=None, tie=False):
    """{id: [the logits of each call]} of every mistake that differs from the reference here."""
    right = run(params, config, tokens, chunks, mask, tie)
    out = {}
    for mid in MISTAKES:
        got = run(params, config, tokens, chunks, mask, tie, mid)
        if any(not np.allclose(a, b, rtol=1e-6, atol=1e-8) for a, b in zip(got, right)):
            out[mid] = got
    return out


def probes(rng, dtype=torch.float64, scale=1.0):
    """The audit's inputs: a small model's weights and tokens (not used by the audit yet)."""
    config = dict(vocab_size=11, dim=8, num_layers=1, num_heads=2, num_kv_heads=1, hidden_dim=12)
    model = ref.DecoderLM(**config)
    params = {n: rng.standard_normal(tuple(p.shape)) * scale for n, p in model.named_parameters()}
    return params, config, rng.integers(0, 11, (2, 5))
