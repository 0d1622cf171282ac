"""Known mistakes of step 3 (03_decoder_block), applied to its reference's arithmetic in torch float64.

`block(params, x, num_heads, num_kv_heads, chunks, ...)` runs DecoderBlock over x's time axis in
`chunks` (one forward per chunk with one cache; chunks None: one forward over all of x without a
cache), the reference's arithmetic written out once more with one catalogued mistake switched on
(mistake=None: the reference's answer, which a test holds to solutions/). It returns the outputs of
every chunk and the keys each call appends to the cache (what the grader records of the student's).
reference/misconceptions.py says what each mistake means.

Shapes: x (B, T, D); params by the module's names ("attn_norm.weight" (D,), "q_proj.weight" (D, D),
"k_proj.weight" (kv * hd, D), ..., "ffn.down_proj.weight" (D, hidden)); positions int (T,) or (B, T);
key_mask bool (B, T); each chunk's out (B, T_chunk, D); the keys appended (B, kv, T_chunk, hd).
"""
import functools
import math

import torch
import torch.nn.functional as F

# value mistakes (the outputs show them); "rope-keys-rotated-twice", "rope-position-ignores-cache" and
# "block-causal-aligned-at-start" only with a cache
MISTAKES = ("block-residual-around-norm", "block-post-norm", "rope-on-values", "rope-position-ignores-cache",
            "block-causal-aligned-at-start", "rope-keys-rotated-twice")
CACHED_ONLY = ("rope-position-ignores-cache", "block-causal-aligned-at-start", "rope-keys-rotated-twice")
# what only the keys handed to the cache show (the outputs may be right)
STORED = ("cache-all-query-heads", "cache-keys-before-rope")


def _t(a, dtype=torch.float64):
    return torch.as_tensor(a).to(dtype)


def rope(x, positions, base=10000.0):
    """Rotate half at `positions` (T,) or (B, T): x (B, h, T, hd), float64 angles."""
    half = x.shape[-1] // 2
    inv = base ** (-torch.arange(half, dtype=torch.float64) * 2 / x.shape[-1])
    ang = _t(positions)[..., None] * inv
    ang = ang[:, None] if ang.dim() == 3 else ang
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)


def _norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def block(params, x, num_heads, num_kv_heads, chunks=None, positions=None, key_mask=None, eps=1e-06,
          base=10000.0, mistake=None):
    """((out of each chunk), (keys appended by each call)) as float64 tensors. positions: of all of x's
    tokens (cut per chunk); key_mask: of all of x's tokens (each call sees its prefix)."""
    P = {n: _t(v) for n, v in params.items()}
    x = _t(x)
    B, T, D = x.shape
    h, kv, hd = num_heads, num_kv_heads, D // num_heads
    cached = chunks is not None
    chunks = list(chunks) if cached else [T]
    k_all = v_all = None
    outs, appended, start = [], [], 0

    def attention(n_in, pos, mask):
        nonlocal k_all, v_all
        Tn = n_in.shape[1]
        q = (n_in @ P["q_proj.weight"].T).view(B, Tn, h, hd).transpose(1, 2)
        k = (n_in @ P["k_proj.weight"].T).view(B, Tn, kv, hd).transpose(1, 2)
        v = (n_in @ P["v_proj.weight"].T).view(B, Tn, kv, hd).transpose(1, 2)
        q, k_rot = rope(q, pos, base), rope(k, pos, base)
        if mistake == "rope-on-values":
            v = rope(v, pos, base)
        group = h // kv
        stored = k if mistake == "cache-keys-before-rope" else k_rot
        if mistake == "cache-all-query-heads":
            stored = stored.repeat_interleave(group, dim=1)
        appended.append(stored)
        if cached:
            k_all = k_rot if k_all is None else torch.cat([k_all, k_rot], dim=-2)
            v_all = v if v_all is None else torch.cat([v_all, v], dim=-2)
            keys, values = k_all, v_all
        else:
            keys, values = k_rot, v
        T_k = keys.shape[-2]
        if mistake == "rope-keys-rotated-twice" and cached:
            keys = rope(keys, torch.arange(T_k), base)
        heads = torch.arange(h) // group
        s = q @ keys[:, heads].transpose(-2, -1) / math.sqrt(hd)
        offset = 0 if (mistake == "block-causal-aligned-at-start" and cached) else T_k - Tn
        allowed = (torch.arange(T_k)[None, :] <= (offset + torch.arange(Tn))[:, None]).expand(B, 1, Tn, T_k)
        if mask is not None:
            allowed = allowed & _t(mask, torch.bool)[:, None, None, :]
        w = torch.softmax(s.masked_fill(~allowed, float("-inf")), -1).nan_to_num(0.0)
        return (w @ values[:, heads]).transpose(1, 2).reshape(B, Tn, D) @ P["o_proj.weight"].T

    def ffn(t):
        g = t @ P["ffn.gate_proj.weight"].T
        return (F.silu(g) * (t @ P["ffn.up_proj.weight"].T)) @ P["ffn.down_proj.weight"].T

    for n in chunks:
        xn = x[:, start:start + n]
        if positions is not None:
            pos = _t(positions, torch.int64)[..., start:start + n]
        elif mistake == "rope-position-ignores-cache":
            pos = torch.arange(n)
        else:
            pos = start + torch.arange(n)
        mask = None if key_mask is None else _t(key_mask, torch.bool)[..., :start + n]
        if mistake == "block-post-norm":
            hh = _norm(xn + attention(xn, pos, mask), P["attn_norm.weight"], eps)
            out = _norm(hh + ffn(hh), P["ffn_norm.weight"], eps)
        elif mistake == "block-residual-around-norm":
            n1 = _norm(xn, P["attn_norm.weight"], eps)
            hh = n1 + attention(n1, pos, mask)
            n2 = _norm(hh, P["ffn_norm.weight"], eps)
            out = n2 + ffn(n2)
        else:
            hh = xn + attention(_norm(xn, P["attn_norm.weight"], eps), pos, mask)
            out = hh + ffn(_norm(hh, P["ffn_norm.weight"], eps))
        outs.append(out)
        start += n
    return tuple(outs), tuple(appended)


def block_mistakes(params, x, num_heads, num_kv_heads, chunks=None, positions=None, key_mask=None):
    """{id: [out of each chunk as numpy]} for every value mistake that changes something on these inputs."""
    right, _keys = block(params, x, num_heads, num_kv_heads, chunks, positions, key_mask)
    found = {}
    for mid in MISTAKES:
        if mid in CACHED_ONLY and chunks is None:
            continue
        got, _k = block(params, x, num_heads, num_kv_heads, chunks, positions, key_mask, mistake=mid)
        if not all(torch.allclose(a, b, rtol=0, atol=1e-12) for a, b in zip(got, right)):
            found[mid] = [o.numpy() for o in got]
    return found


def stored_keys(params, x, num_heads, num_kv_heads, chunks, mistake=None):
    """[keys appended by each call, numpy]: the reference's, or those of a STORED mistake."""
    return [k.numpy() for k in block(params, x, num_heads, num_kv_heads, chunks, mistake=mistake)[1]]


# ------------------------------------------------------------------ the audit's equivalence probes
NAMES = ("attn_norm.weight", "q_proj.weight", "k_proj.weight", "v_proj.weight", "o_proj.weight", "ffn_norm.weight",
         "ffn.gate_proj.weight", "ffn.up_proj.weight", "ffn.down_proj.weight")


def _run(module, *args, num_heads=4, num_kv_heads=2, hidden=20, chunks=None, positions=None, key_mask=None):
    """The module (reference or mutant) holding these weights over x, chunk by chunk with one of its own
    caches (chunks None: no cache): the outputs of every chunk, then len(cache) after each as a tensor."""
    *weights, x = args
    D = x.shape[-1]
    layer = module.DecoderBlock(D, num_heads, num_kv_heads, hidden).to(x.dtype)
    own = dict(layer.named_parameters())
    with torch.no_grad():
        for name, w in zip(NAMES, weights):
            own[name].copy_(w)
    kw = {}
    if chunks is None:
        if positions is not None:
            kw["positions"] = positions
        if key_mask is not None:
            kw["key_mask"] = key_mask
        return (layer(x, **kw),)
    cache, outs, lengths, start = module.LayerCache(), [], [], 0
    for n in chunks:
        outs.append(layer(x[:, start:start + n], cache))
        lengths.append(len(cache))
        start += n
    return tuple(outs) + (torch.tensor(lengths, dtype=x.dtype),)


def probes(rng, dtype, scale):
    """[(callable, args, kwargs)] for the mutation audit's equivalence check: D = 16 with 4 query heads over
    2 and 1 key/value heads, without a cache, token by token, after a prefill, with left padding."""
    grad = dtype == "float64"

    def t(shape, s, g=False):
        return torch.tensor((rng.standard_normal(shape) * s).astype(dtype), requires_grad=g)
    D, hidden, calls = 16, 20, []
    mask = torch.tensor([[False, False, True, True, True, True, True], [True] * 7])
    # the last two: scores in the thousands (q_proj and k_proj weights 32 times larger, as check 3.11 does),
    # where a softmax that takes exp() before subtracting the max overflows; x's scale alone cannot get
    # there, the block normalises x first
    for kv, chunks, padded, large in ((2, None, False, 1), (2, [1] * 7, False, 1), (1, [3, 2, 1, 1], False, 1),
                                      (4, [5, 2], False, 1), (2, None, True, 1), (2, None, False, 32),
                                      (2, [4, 3], False, 32)):
        hd = D // 4
        weights = [1 + t((D,), 0.2), t((D, D), D ** -0.5), t((kv * hd, D), D ** -0.5), t((kv * hd, D), D ** -0.5),
                   t((D, D), D ** -0.5), 1 + t((D,), 0.2), t((hidden, D), D ** -0.5), t((hidden, D), D ** -0.5),
                   t((D, hidden), hidden ** -0.5)]
        weights[1], weights[2] = weights[1] * large, weights[2] * large
        kw = dict(num_kv_heads=kv, chunks=chunks)
        if padded:
            kw.update(positions=(mask.cumsum(-1) - 1).clamp(min=0), key_mask=mask)
        calls.append((functools.partial(_run, **kw), weights + [t((2, 7, D), scale, grad)], {}))
    return calls
