"""The catalogue's cases (tests/reference/test_misconception_catalogue.py): a correct template per step in another idiom than solutions/, and each catalogued mistake written into it. Read by the catalogue test, the visible-agree test and scripts/results_snapshot.py."""
from string import Template

# ------------------------------------------------------------------ correct templates, one per step
TEMPLATES = {
    "01_projection": dict(code='''
import numpy as np

def project_qkv(X, W_Q, W_K, W_V):
    $early
    mats = {"q": W_Q, "k": W_K, "v": W_V}
    return tuple(np.einsum("...i,ij->...j", X, mats[name]) for name in "$order")
''', order="qkv", early="pass"),
    "02_scores": dict(code='''
import numpy as np

def attention_scores(Q, K):
    $early
    return np.einsum("$spec", Q, K)
''', spec="...qd,...kd->...qk", early="pass"),
    "03_scaling": dict(code='''
import math
import numpy as np

def scale_scores(scores, d_k):
    $early
    return np.multiply(scores, $factor)
''', factor="1.0 / math.sqrt(d_k)", early="pass"),
    "04_softmax": dict(code='''
import numpy as np

def softmax(x, axis=-1):
    $early
    ax = $axis
    z = $shifted
    p = np.exp(z)
    return p / p.sum(axis=ax, keepdims=True)
''', axis="axis", shifted="x - np.amax(x, axis=ax, keepdims=True)", early="pass"),
    "05_weighted_sum": dict(code='''
import numpy as np

def weighted_sum(weights, V):
    $ws_early
    return np.einsum("$mix", weights, V)

def self_attention(X, W_Q, W_K, W_V):
    q, k, v = (np.tensordot(X, W, axes=1) for W in ($wq, $wk, $wv))
    s = np.einsum("$scores", q, k) $scale
    s_max = $shift
    e = np.exp(s - s_max)
    w = e / e.sum(axis=$axis, keepdims=True)
    return weighted_sum(w, v), w
''', mix="...qk,...kv->...qv", wq="W_Q", wk="W_K", wv="W_V", scores="...id,...jd->...ij",
        scale="/ np.sqrt(k.shape[-1], dtype=k.dtype)", shift="s.max(axis=-1, keepdims=True)", axis="-1",
        ws_early="pass"),
    "06_multi_head": dict(code='''
import torch

def split_heads(x, num_heads):
    return $split

def merge_heads(x):
    return $merge

def multi_head_attention(x, W_Q, W_K, W_V, W_O, num_heads):
    q, k, v = (split_heads(torch.einsum("btd,de->bte", x, W), num_heads) for W in ($wq, $wk, $wv))
    s = torch.einsum("$scores", q, k) $scale
    w = $softmax
    merged = merge_heads(torch.einsum("$mix", w, v))
    return $out, w
''', split="x.unflatten(-1, (num_heads, -1)).transpose(1, 2)", merge="x.transpose(1, 2).flatten(2)",
        wq="W_Q", wk="W_K", wv="W_V", scores="bhid,bhjd->bhij", scale="* q.shape[-1] ** -0.5",
        softmax="torch.nn.functional.softmax(s, dim=-1)", mix="bhij,bhjd->bhid", out="merged @ W_O"),
    "07_full_module": dict(code='''
import math
import torch
from torch import nn

def attend(q, k, v, d):
    """Scaled dot-product attention over the last two axes, shared by both modules."""
    s = torch.einsum("$scores", q, k) $scale
    w = $softmax
    return torch.einsum("$mix", w, v), w

class SingleHeadSelfAttention(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.W_q, self.W_k, self.W_v = (nn.Linear(d_model, d_model, bias=False) for _ in range(3))

    def forward(self, x):
        q, k, v = $single_qkv
        return attend(q, k, v, x.shape[-1])

class MultiHeadSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.h = num_heads
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (
            nn.Linear(d_model, d_model, bias=bias) for _ in range(4))

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = ($split for t in $multi_qkv)
        o, w = $attend(q, k, v, $head_dim)
        o = $merge
        return $out, w
''', scores="...id,...jd->...ij", scale="/ math.sqrt(d)", softmax="s.softmax(-1)", mix="...ij,...jd->...id",
        single_qkv="self.W_q(x), self.W_k(x), self.W_v(x)",
        multi_qkv="(self.q_proj(x), self.k_proj(x), self.v_proj(x))",
        split="t.view(B, T, self.h, -1).permute(0, 2, 1, 3)", head_dim="D // self.h",
        merge="o.permute(0, 2, 1, 3).reshape(B, T, D)", out="self.out_proj(o)", attend="attend"),
    # ---- modern_attention templates: 01_masks, 02_cross_attention
    # tril for the causal mask, expand for padding, einsum and torch.where for the attention (the
    # references: arange comparisons, masked_fill)
    "01_masks": dict(code='''
import torch

def causal_mask(T_q, T_k=None, device=None):
    $causal_early
    T_k = T_q if T_k is None else T_k
    full = torch.ones(T_q, T_k, dtype=torch.bool, device=device)
    return $causal

def padding_mask(lengths, T):
    return $padding

def masked_attention(q, k, v, mask=None):
    s = torch.einsum("...id,...jd->...ij", q, k) * q.shape[-1] ** -0.5
    if mask is None:
        w = s.softmax(-1)
    else:
        allowed = $allowed
        w = $weights
    return $out, w
''', causal_early="pass", causal="full.tril(diagonal=T_k - T_q)",
        padding="torch.arange(T, device=lengths.device).expand(len(lengths), T) < lengths.unsqueeze(-1)",
        allowed="mask.to(s.device)", weights="torch.where(allowed, torch.where(allowed, s, float('-inf')).softmax(-1), 0.0)",
        out='torch.einsum("...ij,...jd->...id", w, v)'),
    # unflatten for the heads, flatten to merge them, the mask viewed as (B, 1, 1, T_k)
    "02_cross_attention": dict(code='''
import torch

def cross_attention(x, context, W_Q, W_K, W_V, W_O, num_heads, context_mask=None):
    q = torch.einsum("btd,de->bte", x, W_Q).unflatten(-1, (num_heads, -1)).transpose(1, 2)
    k, v = (torch.einsum("btc,cd->btd", $kv, W).unflatten(-1, (num_heads, -1)).transpose(1, 2) for W in (W_K, W_V))
    s = torch.einsum("bhid,bhjd->bhij", q, k) / q.shape[-1] ** 0.5
    if context_mask is None:
        w = s.softmax(-1)
    else:
        allowed = $allowed
        w = $weights
    heads = $heads
    return heads.transpose(1, 2).flatten(2) @ W_O, w
''', kv="context", allowed="context_mask.to(s.device).view(context_mask.shape[0], 1, 1, -1)",
        weights="torch.where(allowed, torch.where(allowed, s, float('-inf')).softmax(-1), 0.0)",
        heads='torch.einsum("bhij,bhjd->bhid", w, v)'),
    # ---- modern_attention templates: 03_grouped_query, 04_rope
    # the key/value heads grouped by expand + reshape (no repeat_interleave), einsum, torch.where for the mask
    "03_grouped_query": dict(code='''
import torch

def _gqa(x, W_Q, W_K, W_V, W_O, num_heads, num_kv_heads, causal):
    B, T, D = x.shape
    hd = D // num_heads
    g = num_heads // num_kv_heads
    q = torch.einsum("btd,de->bte", x, W_Q).unflatten(-1, (num_heads, hd)).permute(0, 2, 1, 3)
    k, v = ($kv.permute(0, 2, 1, 3) for W in (W_K, W_V))
    k, v = ($group for t in (k, v))
    s = torch.einsum("bhid,bhjd->bhij", q, k) $scale
    if $causal:
        keep = torch.arange(T, device=x.device)[None, :] <= torch.arange(T, device=x.device)[:, None]
        $mask
    w = $softmax
    o = torch.einsum("bhij,bhjd->bihd", w, v).flatten(2)
    return $out, w

def grouped_query_attention(x, W_Q, W_K, W_V, W_O, num_heads, num_kv_heads, causal=True):
    $early
    return _gqa(x, W_Q, W_K, W_V, W_O, num_heads, num_kv_heads, causal)
''', kv='torch.einsum("btd,de->bte", x, W).unflatten(-1, (num_kv_heads, hd))',
        group="t[:, :, None].expand(B, num_kv_heads, g, T, hd).reshape(B, num_heads, T, hd)", scale="/ hd ** 0.5",
        causal="causal", mask='s = torch.where(keep, s, torch.tensor(float("-inf"), dtype=s.dtype, device=s.device))',
        softmax="torch.softmax(s, dim=-1)", out="o @ W_O", early="pass"),
    # RoPE with complex numbers in the rotate-half layout, frequencies through exp(-log(base) 2i / d)
    "04_rope": dict(code='''
import math
import torch

def rope_angles(positions, head_dim, base=10000.0):
    pos = $pos
    pairs = $pairs
    return torch.outer(pos, torch.exp($exponent))

def _turn(x, positions, base):
    d = x.shape[-1]
    theta = $theta
    z = torch.complex($re, $im) * $turn
    return ($out).to(x.dtype)

def apply_rope(x, positions, base=10000.0):
    $early
    return _turn(x, positions, base)
''', pos="torch.as_tensor(positions).to(torch.float64)",
        pairs="torch.arange(0, head_dim, 2, dtype=torch.float64, device=pos.device)",
        exponent="-math.log(base) * pairs / head_dim", theta="rope_angles(positions, d, base)", re="x[..., :d // 2]",
        im="x[..., d // 2:]", turn="torch.polar(torch.ones_like(theta), theta)",
        out="torch.cat([z.real, z.imag], dim=-1)", early="pass"),
    # ---- modern_attention templates: 05_kv_cache, 06_flash_attention
    # the cache as lists joined on demand (dim=2), unflatten and einsum, torch.where for the causal rule
    "05_kv_cache": dict(code='''
import torch
from torch import nn

class KVCache:
    def __init__(self):
        self.keys, self.values = [], []

    def append(self, k, v):
        self.keys.append(k)
        self.values.append(v)
        return $cat_k, $cat_v

    def __len__(self):
        return sum(k.shape[2] for k in self.keys)

class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h = num_heads
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (
            nn.Linear(d_model, d_model, bias=False) for _ in range(4))

    def forward(self, x, cache=None):
        $early
        B, T, D = x.shape
        q, k, v = (p(x).unflatten(-1, (self.h, -1)).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        if cache is not None:
            k, v = cache.append(k, v)
        T_k = k.shape[-2]
        s = torch.einsum("bhid,bhjd->bhij", q, k) / $scale
        allowed = torch.arange(T_k, device=x.device) <= torch.arange(T, device=x.device)[:, None] + $offset
        if $masked:
            s = torch.where(allowed, s, float("-inf"))
        o = torch.einsum("bhij,bhjd->bhid", $weights, v)
        return self.out_proj(o.transpose(1, 2).flatten(2))
''', cat_k="torch.cat(self.keys, dim=2)", cat_v="torch.cat(self.values, dim=2)", early="pass",
        scale="q.shape[-1] ** 0.5", offset="(T_k - T)", masked="True", weights="s.softmax(-1)"),
    # tiled attention with einsum, torch.where for the causal rule and the fold of one block in a helper
    "06_flash_attention": dict(code='''
import torch

def _fold(state, s, vb):
    m, l, acc = state
    m_new = torch.maximum(m, s.amax(-1))
    safe = torch.where(m_new == float("-inf"), torch.zeros_like(m_new), m_new)
    p = torch.exp(s - safe.unsqueeze(-1))
    c = torch.exp(m - safe)
    return $keep, l * $lc + p.sum(-1), acc * $ac + torch.einsum("...qk,...kd->...qd", p, vb)

def tiled_attention(q, k, v, block_size=64, causal=False):
    $early
    T_q, T_k = q.shape[-2], k.shape[-2]
    pos_q = torch.arange(T_q, device=q.device).unsqueeze(-1) + $offset
    state = (torch.full(q.shape[:-1], float("-inf"), dtype=q.dtype, device=q.device), q.new_zeros(q.shape[:-1]),
             q.new_zeros(*q.shape[:-1], v.shape[-1]))
    for start in range(0, $stop, block_size):
        kb, vb = k[..., start:start + block_size, :], v[..., start:start + block_size, :]
        s = torch.einsum("...qd,...kd->...qk", $qq, kb) * $scale
        if causal:
            pos_k = torch.arange(start, start + kb.shape[-2], device=q.device)
            s = torch.where(pos_k <= pos_q, s, float("-inf"))
        state = _fold(state, s, vb)
    m, l, acc = state
    has = l > 0
    den = torch.where(has, l, torch.ones_like(l))
    return $out, $lse
''', keep="m_new", lc="c", ac="c.unsqueeze(-1)", early="pass", offset="(T_k - T_q)", stop="T_k", qq="q",
        scale="q.shape[-1] ** -0.5", out="acc / den.unsqueeze(-1)",
        lse="torch.where(has, m + den.log(), torch.full_like(l, float('-inf')))"),
}

# ------------------------------------------------------------------ the mistakes
# (misconception id, step, the slots that differ from the correct template, checks that must fail)
CASES = [
    ("projection-swapped", "01_projection", dict(order="kqv"), "1.2 1.3 1.4 1.5"),
    # d_v != d_k: a swap with V shows in the shapes first, and every check needs the shapes
    ("projection-swapped", "01_projection", dict(order="vkq"), "1.1 1.2 1.3 1.4 1.5 1.6"),

    ("scores-transposed", "02_scores", dict(spec="...qd,...kd->...kq"), "2.1 2.2 2.3 2.4 2.5"),

    ("scale-multiplied", "03_scaling", dict(factor="math.sqrt(d_k)"), "3.2 3.3 3.4 3.6"),
    ("scale-multiplied", "03_scaling", dict(factor="1 / d_k ** -0.5"), "3.2 3.3 3.4 3.6"),   # the lesson's
    ("scale-missing", "03_scaling", dict(factor="1"), "3.2 3.3 3.4 3.6"),
    ("scale-by-d", "03_scaling", dict(factor="1 / d_k"), "3.2 3.3 3.4 3.6"),

    ("softmax-wrong-axis", "04_softmax", dict(axis="0"), "4.2 4.3 4.4 4.5 4.6"),
    ("softmax-unstable", "04_softmax", dict(shifted="x"), "4.7 4.8"),
    ("softmax-global-max", "04_softmax", dict(shifted="x - np.amax(x)"), "4.7 4.8"),

    ("weights-transposed", "05_weighted_sum", dict(mix="...kq,...kv->...qv"), "5.1 5.2 5.4 5.5"),
    ("scores-transposed", "05_weighted_sum", dict(scores="...jd,...id->...ij"), "5.4 5.5"),
    ("softmax-wrong-axis", "05_weighted_sum", dict(shift="s.max(axis=-2, keepdims=True)", axis="-2"),
     "5.4 5.5 5.6"),
    ("softmax-unstable", "05_weighted_sum", dict(shift="0.0"), "5.7"),
    ("softmax-global-max", "05_weighted_sum", dict(shift="s.max()"), "5.7"),
    ("scale-multiplied", "05_weighted_sum", dict(scale="/ k.shape[-1] ** -0.5"), "5.4 5.5"),
    ("scale-missing", "05_weighted_sum", dict(scale=""), "5.4 5.5"),
    ("scale-by-d", "05_weighted_sum", dict(scale="/ k.shape[-1]"), "5.4 5.5"),
    ("scale-by-d-model", "05_weighted_sum", dict(scale="/ np.sqrt(X.shape[-1])"), "5.4 5.5"),

    # a wrong forward has wrong gradients too: 6.13 compares them with the reference's
    ("heads-reshape-no-transpose", "06_multi_head",
     dict(split="x.reshape(x.shape[0], num_heads, x.shape[1], -1)"), "6.1 6.4 6.5 6.13"),
    ("heads-merge-no-transpose", "06_multi_head", dict(merge="x.reshape(x.shape[0], x.shape[2], -1)"),
     "6.2 6.4 6.5 6.13"),
    ("missing-output-projection", "06_multi_head", dict(out="merged"), "6.4 6.5 6.13"),
    ("projection-swapped", "06_multi_head", dict(wq="W_V", wv="W_Q"), "6.4 6.5 6.13"),
    ("scores-transposed", "06_multi_head", dict(scores="bhjd,bhid->bhij"), "6.4 6.5 6.13"),
    ("weights-transposed", "06_multi_head", dict(mix="bhji,bhjd->bhid"), "6.4 6.5 6.13"),
    ("softmax-wrong-axis", "06_multi_head", dict(softmax="torch.softmax(s, dim=-2)"), "6.4 6.5 6.6 6.13"),
    ("softmax-unstable", "06_multi_head", dict(softmax="s.exp() / s.exp().sum(dim=-1, keepdim=True)"), "6.7"),
    ("softmax-global-max", "06_multi_head",
     dict(softmax="(s - s.max()).exp() / (s - s.max()).exp().sum(dim=-1, keepdim=True)"), "6.7"),
    ("scale-multiplied", "06_multi_head", dict(scale="/ q.shape[-1] ** -0.5"), "6.4 6.5 6.13"),
    ("scale-missing", "06_multi_head", dict(scale=""), "6.4 6.5 6.13"),
    ("scale-by-d", "06_multi_head", dict(scale="/ q.shape[-1]"), "6.4 6.5 6.13"),
    ("scale-by-d-model", "06_multi_head", dict(scale="/ x.shape[-1] ** 0.5"), "6.4 6.5 6.13"),
    ("detached-graph", "06_multi_head", dict(softmax="torch.nn.functional.softmax(s.detach(), dim=-1)"),
     "6.13"),

    # in `attend`, shared by both modules: both lose their numbers checks (and 7.14, their gradients)
    ("scale-multiplied", "07_full_module", dict(scale="/ d ** -0.5"), "7.2 7.3 7.5 7.6 7.7 7.14"),
    ("scale-missing", "07_full_module", dict(scale=""), "7.2 7.3 7.5 7.6 7.7 7.14"),
    ("scale-by-d", "07_full_module", dict(scale="/ d"), "7.2 7.3 7.5 7.6 7.7 7.14"),
    ("scores-transposed", "07_full_module", dict(scores="...jd,...id->...ij"), "7.2 7.3 7.5 7.6 7.7 7.14"),
    ("weights-transposed", "07_full_module", dict(mix="...ji,...jd->...id"), "7.2 7.3 7.5 7.6 7.7 7.14"),
    ("softmax-wrong-axis", "07_full_module", dict(softmax="s.softmax(-2)"), "7.2 7.3 7.5 7.6 7.7 7.8 7.14"),
    ("projection-swapped", "07_full_module",
     dict(single_qkv="self.W_v(x), self.W_k(x), self.W_q(x)",
          multi_qkv="(self.v_proj(x), self.k_proj(x), self.q_proj(x))"), "7.2 7.3 7.5 7.6 7.7 7.14"),
    ("softmax-unstable", "07_full_module", dict(softmax="s.exp() / s.exp().sum(-1, keepdim=True)"), "7.15"),
    ("softmax-global-max", "07_full_module",
     dict(softmax="(s - s.max()).exp() / (s - s.max()).exp().sum(-1, keepdim=True)"), "7.15"),
    # in the multi-head module only
    ("scale-by-d-model", "07_full_module", dict(head_dim="D"), "7.5 7.6 7.7 7.14"),
    ("heads-reshape-no-transpose", "07_full_module", dict(split="t.view(B, self.h, T, -1)"), "7.5 7.6 7.7 7.14"),
    ("heads-merge-no-transpose", "07_full_module", dict(merge="o.reshape(B, T, D)"), "7.5 7.6 7.7 7.14"),
    ("missing-output-projection", "07_full_module", dict(out="o"), "7.5 7.6 7.7 7.14"),
    # a cut graph in `attend`: the values are right, the gradients are not
    ("detached-graph", "07_full_module", dict(softmax="s.detach().softmax(-1)"), "7.14"),

    # right values, found by the complexity check (counts) or the api check (calls), and only there
    ("not-vectorized", "01_projection",
     dict(early="return tuple(np.stack([row @ W for row in np.moveaxis(X, -2, 0)], axis=-2) for W in (W_Q, W_K, W_V))"),
     "1.7"),
    ("not-vectorized", "02_scores", dict(early='return np.stack([np.einsum("...d,...kd->...k", Q[..., i, :], K) '
                                                'for i in range(Q.shape[-2])], axis=-2)'), "2.7"),
    ("not-vectorized", "03_scaling",
     dict(early="return np.stack([s * (1.0 / math.sqrt(d_k)) for s in np.moveaxis(scores, -1, 0)], axis=-1)"), "3.7"),
    ("not-vectorized", "04_softmax",
     dict(early="return np.apply_along_axis(lambda r: np.exp(r - r.max()) / np.exp(r - r.max()).sum(), axis, x)"),
     "4.9"),
    ("forbidden-api", "04_softmax",
     dict(early="import torch; return torch.softmax(torch.from_numpy(x), axis).numpy()"), "4.10"),
    ("not-vectorized", "05_weighted_sum",
     dict(ws_early='return np.stack([np.einsum("...k,...kv->...v", w, V) for w in np.moveaxis(weights, -2, 0)], '
                   'axis=-2)'), "5.8"),
    ("broadcast-weighted-sum", "05_weighted_sum",
     dict(ws_early="return (weights[..., :, :, None] * V[..., None, :, :]).sum(axis=-2)"), "5.8"),
    # merge_heads one batch entry at a time
    ("not-vectorized", "06_multi_head", dict(merge="torch.stack([xb.transpose(0, 1).flatten(1) for xb in x])"),
     "6.11"),
    ("forbidden-api", "06_multi_head",
     dict(out="merge_heads(torch.nn.functional.scaled_dot_product_attention(q, k, v)) @ W_O"), "6.12"),
    # one head at a time in the multi-head module (step 6 only notes it; step 7 charges it)
    ("not-vectorized", "07_full_module",
     dict(attend="(lambda q, k, v, d: tuple(torch.stack(r, 1) for r in zip(*[attend(q[:, i], k[:, i], v[:, i], d) "
                 "for i in range(q.shape[1])])))"), "7.12"),
    ("forbidden-api", "07_full_module",
     dict(attend="(lambda q, k, v, d: (torch.nn.functional.scaled_dot_product_attention(q, k, v), "
                 "attend(q, k, v, d)[1]))"), "7.13"),
    # ---- modern_attention cases: 01_masks, 02_cross_attention
    # each mask function is checked on its own (1.1, 1.2, 1.4-1.6 with the grader's masks), then through the
    # others (1.7 causal, 1.8 padding): a convention flipped in all three composes right there, not alone
    ("causal-upper-triangle", "01_masks", dict(causal="full.triu(diagonal=T_k - T_q)"), "1.1 1.7"),
    ("mask-true-blocked", "01_masks",
     dict(causal="~full.tril(diagonal=T_k - T_q)", allowed="~mask.to(s.device)",
          padding="~(torch.arange(T, device=lengths.device).expand(len(lengths), T) < lengths.unsqueeze(-1))"),
     "1.1 1.2 1.4 1.5 1.6 1.9"),
    ("causal-aligned-at-start", "01_masks", dict(causal="full.tril()"), "1.1 1.7"),
    ("causal-excludes-diagonal", "01_masks", dict(causal="full.tril(diagonal=T_k - T_q - 1)"), "1.1 1.7"),
    ("padding-off-by-one", "01_masks",
     dict(padding="torch.arange(T, device=lengths.device).expand(len(lengths), T) <= lengths.unsqueeze(-1)"), "1.2 1.8"),
    ("mask-after-softmax", "01_masks", dict(weights="torch.where(allowed, s.softmax(-1), 0.0)"),
     "1.4 1.5 1.6 1.7 1.8 1.9"),
    ("mask-fill-zero", "01_masks", dict(weights="torch.where(allowed, s, 0.0).softmax(-1)"), "1.4 1.5 1.6 1.7 1.8 1.9"),
    ("mask-ignored", "01_masks", dict(weights="s.softmax(-1)"), "1.4 1.5 1.6 1.7 1.8 1.9"),
    # right wherever a query has an allowed key: only the rows without one show them
    ("masked-row-nan", "01_masks", dict(weights="torch.where(allowed, s, float('-inf')).softmax(-1)"),
     "1.4 1.5 1.6 1.9"),
    ("mask-fill-finite", "01_masks", dict(weights="torch.where(allowed, s, -1e9).softmax(-1)"), "1.4 1.5 1.6 1.9"),
    ("not-vectorized", "01_masks",
     dict(causal_early="return torch.stack([torch.arange(T_k or T_q, device=device) <= i + (T_k or T_q) - T_q "
                       "for i in range(T_q)])"), "1.11"),
    ("forbidden-api", "01_masks", dict(out="torch.nn.functional.scaled_dot_product_attention(q, k, v) if mask is None "
                                           'else torch.einsum("...ij,...jd->...id", w, v)'), "1.12"),
    # D_c != D: x @ W_K raises wherever the shapes differ; 2.4 (T_q = T_k, D_c = D) names it
    ("kv-from-x", "02_cross_attention", dict(kv="x"), "2.1 2.2 2.3 2.4 2.5 2.6 2.7 2.8 2.9 2.10 2.11"),
    ("key-padding-mask-convention", "02_cross_attention",
     dict(allowed="~context_mask.to(s.device).view(context_mask.shape[0], 1, 1, -1)"), "2.2 2.3 2.4 2.6 2.7 2.8"),
    ("mask-after-softmax", "02_cross_attention", dict(weights="torch.where(allowed, s.softmax(-1), 0.0)"),
     "2.2 2.3 2.4 2.6 2.7 2.8"),
    ("mask-fill-zero", "02_cross_attention", dict(weights="torch.where(allowed, s, 0.0).softmax(-1)"),
     "2.2 2.3 2.4 2.6 2.7 2.8"),
    ("mask-ignored", "02_cross_attention", dict(weights="s.softmax(-1)"), "2.2 2.3 2.4 2.6 2.7 2.8"),
    # 2.8's gradients go through a context with no real token too (issue 28's domain coverage)
    ("masked-row-nan", "02_cross_attention", dict(weights="torch.where(allowed, s, float('-inf')).softmax(-1)"),
     "2.2 2.7 2.8"),
    ("mask-fill-finite", "02_cross_attention", dict(weights="torch.where(allowed, s, -1e9).softmax(-1)"),
     "2.2 2.7 2.8"),
    # the weighted sum one batch entry at a time
    ("not-vectorized", "02_cross_attention", dict(heads="torch.stack([wb @ vb for wb, vb in zip(w, v)])"), "2.10"),
    ("forbidden-api", "02_cross_attention",
     dict(heads="torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=allowed) if context_mask is not "
                'None else torch.einsum("bhij,bhjd->bhid", w, v)'), "2.11"),
    # ---- modern_attention cases: 03_grouped_query, 04_rope
    # a wrong grouping shows with 1 < num_kv_heads < num_heads: 3.2-3.4 and 3.5's own-function comparison
    ("gqa-heads-tiled", "03_grouped_query", dict(group="t.repeat(1, g, 1, 1)"), "3.2 3.3 3.4 3.5 3.7"),
    ("gqa-kv-layout", "03_grouped_query",
     dict(kv='torch.einsum("btd,de->bte", x, W).unflatten(-1, (hd, num_kv_heads)).transpose(-1, -2)'),
     "3.2 3.3 3.4 3.5 3.7"),
    ("causal-mask-missing", "03_grouped_query", dict(causal="False"), "3.2 3.3 3.5 3.6 3.7"),
    ("causal-flag-ignored", "03_grouped_query", dict(causal="True"), "3.4 3.5"),
    ("causal-upper-triangle", "03_grouped_query",
     dict(mask='s = torch.where(keep.T, s, torch.tensor(float("-inf"), dtype=s.dtype, device=s.device))'),
     "3.2 3.3 3.5 3.6 3.7"),
    ("mask-fill-zero", "03_grouped_query", dict(mask="s = torch.where(keep, s, torch.zeros((), dtype=s.dtype))"),
     "3.2 3.3 3.5 3.6 3.7"),
    ("scale-by-d-model", "03_grouped_query", dict(scale="/ D ** 0.5"), "3.2 3.3 3.4 3.5 3.7"),
    ("gqa-scale-by-kv-width", "03_grouped_query", dict(scale="/ W_K.shape[1] ** 0.5"), "3.2 3.3 3.4 3.5 3.7"),
    ("missing-output-projection", "03_grouped_query", dict(out="o"), "3.2 3.3 3.4 3.5 3.7"),
    ("softmax-wrong-axis", "03_grouped_query", dict(softmax="torch.softmax(s, dim=-2)"), "3.2 3.3 3.4 3.5 3.6 3.7"),
    ("detached-graph", "03_grouped_query", dict(softmax="torch.softmax(s.detach(), dim=-1)"), "3.7"),
    ("softmax-unstable", "03_grouped_query", dict(softmax="s.exp() / s.exp().sum(dim=-1, keepdim=True)"), "3.13"),
    ("softmax-global-max", "03_grouped_query",
     dict(softmax="(s - s.max()).exp() / (s - s.max()).exp().sum(dim=-1, keepdim=True)"), "3.13"),
    ("not-vectorized", "03_grouped_query",
     dict(early="return tuple(torch.cat(r) for r in zip(*[_gqa(xb[None], W_Q, W_K, W_V, W_O, num_heads, num_kv_heads, "
                "causal) for xb in x]))"), "3.8"),
    ("forbidden-api", "03_grouped_query",
     dict(out="torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal).transpose(1, 2).flatten(2) "
              "@ W_O"), "3.9"),
    ("rope-interleaved", "04_rope",
     dict(re="x[..., 0::2]", im="x[..., 1::2]", out="torch.stack([z.real, z.imag], dim=-1).flatten(-2)"),
     "4.3 4.4 4.5 4.7"),
    ("rope-sign-flipped", "04_rope", dict(turn="torch.polar(torch.ones_like(theta), theta).conj()"), "4.3 4.4 4.7"),
    ("rope-sin-cos-swapped", "04_rope", dict(turn="torch.complex(theta.sin(), theta.cos())"), "4.3 4.4 4.5 4.7"),
    # a mistake in rope_angles shows in apply_rope too (which uses it)
    ("rope-exponent-i", "04_rope", dict(exponent="-math.log(base) * pairs / (2 * head_dim)"), "4.2 4.3 4.4 4.7"),
    ("rope-positions-from-1", "04_rope", dict(pos="torch.as_tensor(positions).to(torch.float64) + 1"),
     "4.2 4.3 4.4 4.5 4.7"),
    ("rope-positions-ignored", "04_rope", dict(pos="torch.arange(len(positions), dtype=torch.float64)"),
     "4.2 4.3 4.4 4.5 4.7"),
    ("rope-freqs-reversed", "04_rope", dict(exponent="-math.log(base) * pairs.flip(0) / head_dim"), "4.2 4.3 4.4 4.7"),
    ("rope-base-ignored", "04_rope", dict(exponent="-math.log(10000.0) * pairs / head_dim"), "4.2 4.3"),
    # angles in the input's dtype: float64 is right, float32 is off past position 1,000
    ("rope-angles-float32", "04_rope", dict(theta="rope_angles(positions, d, base).to(x.dtype)"), "4.4"),
    ("rope-angles-float32", "04_rope",
     dict(pos="torch.as_tensor(positions).float()", pairs="torch.arange(0, head_dim, 2, device=pos.device).float()"),
     "4.1 4.2 4.3 4.4 4.6 4.7"),
    ("detached-graph", "04_rope", dict(early="return _turn(x.detach(), positions, base)"), "4.7"),
    ("not-vectorized", "04_rope",
     dict(early="return torch.cat([_turn(x[..., t:t + 1, :], positions[t:t + 1], base) for t in range(x.shape[-2])], "
                "dim=-2)"), "4.8"),
    # ---- modern_attention cases: 05_kv_cache, 06_flash_attention
    # the cache along the heads: KVCache alone names it (5.2); the module then raises wherever it uses the cache
    ("kv-cache-wrong-axis", "05_kv_cache",
     dict(cat_k="torch.cat(self.keys, dim=1)", cat_v="torch.cat(self.values, dim=1)"),
     "5.2 5.4 5.5 5.6 5.7 5.8 5.12 5.13"),
    # one new token may see everything: only a prefill or several new tokens show a mask dropped for the cache
    # (5.12: the gradients through the cache follow the wrong forward; 5.13 notes a named mistake, passes)
    ("kv-cache-no-causal-new", "05_kv_cache", dict(masked="cache is None"), "5.4 5.6 5.12"),
    ("causal-aligned-at-start", "05_kv_cache", dict(offset="0"), "5.4 5.5 5.6 5.12"),
    ("causal-mask-missing", "05_kv_cache", dict(masked="False"), "5.3 5.4 5.6 5.12"),
    ("scale-by-d-model", "05_kv_cache", dict(scale="D ** 0.5"), "5.3 5.4 5.5 5.6 5.12"),
    # exp() without the max: right on ordinary scores, NaN in the thousands
    ("softmax-unstable", "05_kv_cache", dict(weights="(s.exp() / s.exp().sum(-1, keepdim=True))"), "5.13"),
    # the keys the cache returns cut off the graph: right values, no gradient reaches k_proj through the cache
    ("detached-graph", "05_kv_cache", dict(cat_k="torch.cat(self.keys, dim=2).detach()"), "5.12"),
    # right values, the whole sequence projected again at every step: only the counted multiply-adds show it
    ("kv-cache-reprojects", "05_kv_cache",
     dict(early="if cache is not None:\n            cache.xs = torch.cat([getattr(cache, 'xs', x[:, :0]), x], 1)\n"
                "            k_all, v_all = (p(cache.xs).unflatten(-1, (self.h, -1)).transpose(1, 2) "
                "for p in (self.k_proj, self.v_proj))\n"
                "            cache.keys, cache.values = [k_all[:, :, :-x.shape[1]]], [v_all[:, :, :-x.shape[1]]]"),
     "5.7"),
    ("not-vectorized", "05_kv_cache",
     dict(early="if cache is None and x.shape[0] > 1: return torch.cat([self(xb[None]) for xb in x])"), "5.7"),
    ("forbidden-api", "05_kv_cache",
     dict(early="if cache is None: torch.nn.functional.scaled_dot_product_attention(x[:, None], x[:, None], "
                "x[:, None])"), "5.8"),
    # a wrong online softmax is wrong at every block size: 6.2-6.4, 6.6 (large scores), 6.7 (its gradients)
    ("online-no-rescale", "06_flash_attention", dict(lc="1", ac="1"), "6.2 6.3 6.4 6.5 6.6 6.7"),
    ("online-no-rescale", "06_flash_attention", dict(ac="1"), "6.2 6.3 6.4 6.5 6.6 6.7"),  # the sum rescaled only
    ("online-no-final-division", "06_flash_attention", dict(out="acc"), "6.2 6.3 6.4 6.5 6.6 6.7"),
    ("online-max-not-kept", "06_flash_attention", dict(keep="m"), "6.2 6.3 6.4 6.5 6.6 6.7"),
    ("lse-without-max", "06_flash_attention",
     dict(lse="torch.where(has, den.log(), torch.full_like(l, float('-inf')))"), "6.2 6.3 6.4 6.5 6.6 6.7"),
    ("last-block-dropped", "06_flash_attention", dict(stop="T_k - block_size + 1"), "6.2 6.3 6.4 6.5 6.6 6.7"),
    ("causal-aligned-at-start", "06_flash_attention", dict(offset="0"), "6.2 6.3 6.4 6.5 6.6 6.7"),
    ("scale-missing", "06_flash_attention", dict(scale="1.0"), "6.2 6.3 6.4 6.5 6.6 6.7"),
    # right wherever a query has an allowed key: 6.5, and 6.7's gradients through queries with none
    ("masked-row-nan", "06_flash_attention", dict(out="acc / l.unsqueeze(-1)", lse="m + l.log()"), "6.5 6.7"),
    ("detached-graph", "06_flash_attention", dict(qq="q.detach()"), "6.7"),
    ("not-vectorized", "06_flash_attention",
     dict(early="if q.dim() == 4: return tuple(torch.stack(r) for r in zip(*[tiled_attention(a, b, c, block_size, "
                "causal) for a, b, c in zip(q, k, v)]))"), "6.8"),
    # the whole score matrix: right values, memory like T^2
    ("tiled-full-scores", "06_flash_attention",
     dict(early="s = torch.einsum('...qd,...kd->...qk', q, k) * q.shape[-1] ** -0.5\n    if causal:\n        "
                "s = s.masked_fill(~torch.ones(s.shape[-2:], dtype=torch.bool, device=q.device).tril(k.shape[-2] - "
                "q.shape[-2]), float('-inf'))\n    lse = torch.logsumexp(s, -1)\n    "
                "return torch.exp(s - lse.unsqueeze(-1)).nan_to_num(0.0) @ v, lse"), "6.8"),
    ("forbidden-api", "06_flash_attention",
     dict(early="if not causal: return torch.nn.functional.scaled_dot_product_attention(q, k, v), torch.logsumexp("
                "torch.einsum('...qd,...kd->...qk', q, k) * q.shape[-1] ** -0.5, -1)"), "6.9"),
]

# the third assignment's steps 1-3 (decoder, issue 31), in a file of their own
from harness.catalogue_decoder import CASES as DECODER_CASES, TEMPLATES as DECODER_TEMPLATES  # noqa: E402

TEMPLATES.update(DECODER_TEMPLATES)
CASES += DECODER_CASES
# the decoder's steps 4-6 (issue 31): the masters' own code whole, each mistake applied to it
# (graded here only: tests/suites/test_decoder_steps_4_6.py checks that each of its cases is here)
from harness.decoder_cases import CASES as _DECODER_CASES, STEMS as _DECODER_STEMS, master_code, mutated  # noqa: E402
TEMPLATES.update({stem: dict(code="$body", body=master_code(stem)) for stem in _DECODER_STEMS})
CASES += [(mid, stem, dict(body=mutated(stem, replacements)), failing)
          for mid, stem, replacements, failing in _DECODER_CASES]


def case_id(case):
    """e.g. "03-scale-multiplied", with a suffix when one step has several cases for an id."""
    same = [c for c in CASES if c[:2] == case[:2]]
    return f"{case[1][:2]}-{case[0]}" + (f"-{same.index(case) + 1}" if len(same) > 1 else "")


def source(stem, slots=None):
    """The step's template with its default slots, then `slots` applied."""
    template = dict(TEMPLATES[stem])
    code = template.pop("code")
    template.update(slots or {})
    return Template(code).substitute(template)
