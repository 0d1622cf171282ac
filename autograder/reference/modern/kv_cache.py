"""Known mistakes of step 5 (05_kv_cache), applied to its reference's arithmetic in torch float64.

`decode(params, x, num_heads, chunks, cached, mistake)` runs CausalSelfAttention over x's time axis in
`chunks` (one forward per chunk, with a cache when `cached`, else one forward over all of x), the
reference's arithmetic written out once more with one catalogued mistake switched on (mistake=None:
the reference's answer, which a test holds to solutions/). `append(pairs, mistake)` does the same for
KVCache on its own. reference/misconceptions.py says what each mistake means.

Shapes: x (B, T, D); params {"q_proj.weight", ...: (D, D)} (nn.Linear's (out, in) layout); each chunk's
out (B, T_chunk, D); k, v (B, h, T_new, hd).
"""
import functools
import math

import torch

from solutions.modern_attention import step05_kv_cache as ref

# the ids `decode_mistakes` computes; "kv-cache-wrong-axis" is append_mistakes'
MISTAKES = ("kv-cache-no-causal-new", "causal-aligned-at-start", "causal-mask-missing", "scale-by-d-model")
WRONG_AXES = (0, 1, 3)                 # batch, heads, head dim: anything but time (dim 2, -2)


def _t(a):
    return torch.as_tensor(a, dtype=torch.float64)


def decode(params, x, num_heads, chunks, cached=True, mistake=None):
    """(out of each chunk) as float64 tensors: the module's forward over each chunk of x with one cache
    (cached), or, with cached=False, a single forward over all of x (chunks ignored)."""
    W = {n: _t(params[f"{n}.weight"]) for n in ("q_proj", "k_proj", "v_proj", "out_proj")}
    x = _t(x)
    B, T, D = x.shape
    h, hd = num_heads, D // num_heads
    chunks = chunks if cached else [T]
    outs, k_all, v_all, start = [], None, None, 0

    def heads(t, n):
        return t.view(B, n, h, hd).transpose(1, 2)
    for n in chunks:
        xn = x[:, start:start + n]
        start += n
        q, k, v = (heads(xn @ W[p].T, n) for p in ("q_proj", "k_proj", "v_proj"))
        k_all = k if k_all is None else torch.cat([k_all, k], dim=-2)
        v_all = v if v_all is None else torch.cat([v_all, v], dim=-2)
        T_k = k_all.shape[-2]
        scores = q @ k_all.transpose(-2, -1) / math.sqrt(D if mistake == "scale-by-d-model" else hd)
        offset = 0 if mistake == "causal-aligned-at-start" else T_k - n
        query_pos = torch.arange(n)[:, None] + offset
        masked = not (mistake == "causal-mask-missing" or (mistake == "kv-cache-no-causal-new" and cached))
        if masked:
            scores = scores.masked_fill(torch.arange(T_k)[None, :] > query_pos, float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v_all
        outs.append(out.transpose(1, 2).reshape(B, n, D) @ W["out_proj"].T)
    return tuple(outs)


def decode_mistakes(params, x, num_heads, chunks, cached=True):
    """{id: [out of each chunk as numpy]} for every mistake that changes something on these inputs."""
    right = decode(params, x, num_heads, chunks, cached)
    found = {}
    for mid in MISTAKES:
        if mid == "kv-cache-no-causal-new" and not cached:
            continue
        got = decode(params, x, num_heads, chunks, cached, mid)
        if not all(torch.allclose(a, b, rtol=0, atol=1e-12) for a, b in zip(got, right)):
            found[mid] = [o.numpy() for o in got]
    return found


def append(pairs, mistake=None):
    """[(k_all, v_all) after each append] of a KVCache fed `pairs` [(k, v)], or with the cache appended
    along another axis (mistake "kv-cache-wrong-axis:<dim>"); None where that concatenation cannot fit."""
    dim = -2 if mistake is None else int(mistake.split(":")[1])
    out, k_all, v_all = [], None, None
    for k, v in pairs:
        k, v = _t(k), _t(v)
        try:
            k_all = k if k_all is None else torch.cat([k_all, k], dim=dim)
            v_all = v if v_all is None else torch.cat([v_all, v], dim=dim)
        except RuntimeError:
            return None
        out.append((k_all.numpy(), v_all.numpy()))
    return out


def append_mistakes(pairs):
    """{"kv-cache-wrong-axis:<dim>": [(k_all, v_all)]} for each wrong axis whose concatenation fits."""
    found = {f"kv-cache-wrong-axis:{d}": append(pairs, f"kv-cache-wrong-axis:{d}") for d in WRONG_AXES}
    return {m: v for m, v in found.items() if v is not None}


# ------------------------------------------------------------------ the audit's equivalence probes
def _run(module, W_q, W_k, W_v, W_o, x, num_heads=4, chunks=None):
    """The module (reference or mutant) holding these weights, over x in `chunks` with one of its own caches
    (chunks None: no cache): the outputs of every chunk, then len(cache) after each as a tensor."""
    D = x.shape[-1]
    layer = module.CausalSelfAttention(D, num_heads).to(x.dtype)
    with torch.no_grad():
        for proj, w in zip((layer.q_proj, layer.k_proj, layer.v_proj, layer.out_proj), (W_q, W_k, W_v, W_o)):
            proj.weight.copy_(w)
    if chunks is None:
        return (layer(x),)
    cache, outs, lengths, start = module.KVCache(), [], [], 0
    for n in chunks:
        outs.append(layer(x[:, start:start + n], cache))
        lengths.append(len(cache))
        start += n
    return tuple(outs) + (torch.tensor(lengths, dtype=x.dtype),)


def probes(rng, dtype, scale):
    """[(callable, args, kwargs)] for the mutation audit's equivalence check (reference/equivalence.py): the
    module without a cache, then decoding token by token, after a prefill, several tokens at once; x of
    `dtype` (float64 requires grad), scaled by `scale`; D = 24 with 4 heads (head dim 6) and 3."""
    grad = dtype == "float64"

    def t(shape, s, g=False):
        return torch.tensor((rng.standard_normal(shape) * s).astype(dtype), requires_grad=g)
    calls = []
    for h, chunks in ((4, None), (4, [1, 1, 1, 1, 1, 1, 1]), (4, [3, 2, 1, 1]), (3, [1, 4, 2]), (3, None), (4, [7])):
        D = 24
        weights = [t((D, D), D ** -0.5) for _n in range(4)]
        calls.append((functools.partial(_run, num_heads=h, chunks=chunks), weights + [t((2, 7, D), scale, grad)], {}))
    return calls

