"""The third assignment's (decoder, issue 31) part of tests/reference/test_misconception_catalogue.py: correct
templates for steps 1-3 written in another idiom than solutions/decoder/ (einsum, unflatten, a list of
chunks as the cache, chunk() for the halves), and each catalogued mistake of those steps written into
them. test_misconception_catalogue.py adds them to its TEMPLATES and CASES and grades them like the
others: named with exactly their id, failing exactly the checks listed."""

TEMPLATES = {
    "01_rmsnorm": dict(code='''
import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-06):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        work = $work
        ms = torch.einsum("...d,...d->...", work, work).unsqueeze(-1) / work.shape[-1]
        y = $normed
        return (self.weight.to(y.dtype) * y).to(x.dtype)
''', work="x.to(torch.float32) if x.element_size() < 4 else x", normed="work / torch.sqrt(ms + self.eps)"),
    "02_swiglu": dict(code='''
import torch
import torch.nn.functional as F
from torch import nn


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.gate_proj, self.up_proj = (nn.Linear(dim, hidden_dim, bias=False) for _ in range(2))
        self.down_proj = nn.Linear(hidden_dim, dim, bias=False)

    def forward(self, x):
        a, b = self.$first(x), self.$second(x)
        return self.down_proj($act(a) * b)
''', first="gate_proj", second="up_proj", act="F.silu"),
    "03_decoder_block": dict(code='''
import math

import torch
import torch.nn.functional as F
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-06):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(dim)), eps

    def forward(self, x):
        w = x.float() if x.element_size() < 4 else x
        return (w * (w.square().mean(-1, keepdim=True) + self.eps).rsqrt() * self.weight.to(w.dtype)).to(x.dtype)


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden_dim, bias=False)
        self.up_proj = nn.Linear(dim, hidden_dim, bias=False)
        self.down_proj = nn.Linear(hidden_dim, dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


def turn(t, pos, base):
    d = t.shape[-1]
    inv = torch.pow(base, -torch.arange(0, d, 2, dtype=torch.float64, device=t.device) / d)
    ang = torch.einsum("...t,f->...tf", pos.to(device=t.device, dtype=torch.float64), inv)
    if ang.dim() == 3:
        ang = ang.unsqueeze(1)
    c, s = ang.cos().to(t.dtype), ang.sin().to(t.dtype)
    a, b = t.chunk(2, dim=-1)
    return torch.cat((a * c - b * s, a * s + b * c), dim=-1)


class LayerCache:
    def __init__(self):
        self.keys, self.values = [], []

    def append(self, k, v):
        self.keys.append(k)
        self.values.append(v)
        return torch.cat(self.keys, dim=2), torch.cat(self.values, dim=2)

    def __len__(self):
        return sum(k.shape[2] for k in self.keys)


class DecoderBlock(nn.Module):
    def __init__(self, dim, num_heads, num_kv_heads, hidden_dim, eps=1e-06, rope_base=10000.0):
        super().__init__()
        self.h, self.kv, self.base = num_heads, num_kv_heads, rope_base
        hd = dim // num_heads
        self.attn_norm, self.ffn_norm = RMSNorm(dim, eps), RMSNorm(dim, eps)
        self.q_proj = nn.Linear(dim, dim, bias=False)
        self.k_proj = nn.Linear(dim, num_kv_heads * hd, bias=False)
        self.v_proj = nn.Linear(dim, num_kv_heads * hd, bias=False)
        self.o_proj = nn.Linear(dim, dim, bias=False)
        self.ffn = SwiGLU(dim, hidden_dim)

    def forward(self, x, cache=None, positions=None, key_mask=None):
        a = $a
        h = $h
        f = $f
        return $out

    def attend(self, a, cache, positions, key_mask):
        B, T, _ = a.shape
        past = len(cache) if cache is not None else 0
        pos = positions if positions is not None else $pos
        q = self.q_proj(a).unflatten(-1, (self.h, -1)).transpose(1, 2)
        k = self.k_proj(a).unflatten(-1, (self.kv, -1)).transpose(1, 2)
        v = self.v_proj(a).unflatten(-1, (self.kv, -1)).transpose(1, 2)
        $turn
        rep = self.h // self.kv
        k, v = $kread
        T_k = k.shape[2]
        s = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(q.shape[-1])
        ok = torch.ones(T, T_k, dtype=torch.bool, device=a.device).tril($offset)
        if key_mask is not None:
            ok = ok & key_mask[:, None, None, :].to(a.device)
        ok = ok.expand_as(s)
        some = ok.any(-1, keepdim=True)
        w = torch.softmax(s.masked_fill(~ok, float("-inf")).masked_fill(~some, 0.0), -1) * ok
        o = torch.einsum("bhqk,bhkd->bhqd", w, v)
        return self.o_proj(o.transpose(1, 2).flatten(2))
''', a="self.attn_norm(x)", h="x + self.attend(a, cache, positions, key_mask)", f="self.ffn_norm(h)",
        out="h + self.ffn(f)", pos="past + torch.arange(T, device=a.device)",
        turn="q, k = turn(q, pos, self.base), turn(k, pos, self.base)\n        if cache is not None:\n"
             "            k, v = cache.append(k, v)",
        kread="k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)", offset="T_k - T"),
}

_TURN_ALL_HEADS = ("q, k = turn(q, pos, self.base), turn(k, pos, self.base)\n"
                   "        k, v = k.repeat_interleave(self.h // self.kv, 1), v.repeat_interleave(self.h // self.kv, 1)\n"
                   "        if cache is not None:\n            k, v = cache.append(k, v)")
_TURN_BEFORE_ROPE = ("q = turn(q, pos, self.base)\n        if cache is not None:\n"
                     "            k, v = cache.append(k, v)\n"
                     "        k = turn(k, torch.arange(k.shape[2], device=a.device) if positions is None else pos, "
                     "self.base)")

# (id, stem, slots, the checks it fails)
CASES = [
    # eps outside the root: visible at the default eps on ordinary and small inputs, at eps 0.5; not at 400
    ("rmsnorm-eps-outside-root", "01_rmsnorm", dict(normed="work / (torch.sqrt(ms) + self.eps)"), "1.1 1.2 1.3 1.5"),
    # float16 squares above 65,504 overflow: rows of zeros in 1.4 only (bfloat16 has float32's range)
    ("rmsnorm-half-precision", "01_rmsnorm", dict(work="x"), "1.4"),
    ("swiglu-gate-swapped", "02_swiglu", dict(first="up_proj", second="gate_proj"), "2.2 2.3 2.4"),
    ("swiglu-wrong-activation", "02_swiglu", dict(act="torch.relu"), "2.2 2.3 2.4"),
    ("swiglu-wrong-activation", "02_swiglu", dict(act="F.gelu"), "2.2 2.3 2.4"),
    ("block-residual-around-norm", "03_decoder_block",
     dict(h="a + self.attend(a, cache, positions, key_mask)", out="f + self.ffn(f)"), "3.3 3.4 3.5 3.7 3.9 3.11"),
    ("block-post-norm", "03_decoder_block",
     dict(a="x", h="self.attn_norm(x + self.attend(x, cache, positions, key_mask))", f="h",
          out="self.ffn_norm(h + self.ffn(h))"), "3.3 3.4 3.5 3.6 3.7 3.9 3.11"),
    ("rope-on-values", "03_decoder_block",
     dict(turn="q, k, v = (turn(t, pos, self.base) for t in (q, k, v))\n        if cache is not None:\n"
               "            k, v = cache.append(k, v)"), "3.3 3.4 3.5 3.7 3.9 3.11"),
    # right without a cache and for the prefill; every later token turned at position 0
    ("rope-position-ignores-cache", "03_decoder_block", dict(pos="torch.arange(T, device=a.device)"),
     "3.4 3.5 3.6 3.9 3.11"),
    ("block-causal-aligned-at-start", "03_decoder_block", dict(offset="0"), "3.4 3.5 3.7 3.9 3.11"),
    ("rope-keys-rotated-twice", "03_decoder_block",
     dict(kread="(turn(k, torch.arange(k.shape[2], device=a.device), self.base) if cache is not None else k)"
                ".repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)"), "3.4 3.5 3.7 3.9 3.11"),
    # right values: only the keys handed to cache.append show them
    ("cache-all-query-heads", "03_decoder_block", dict(turn=_TURN_ALL_HEADS, kread="k, v"), "3.6"),
    ("cache-keys-before-rope", "03_decoder_block", dict(turn=_TURN_BEFORE_ROPE), "3.6 3.7"),
]
