"""Reference for step 3, generated from source/decoder/03_decoder_block.ipynb
by `python -m autograder build`. Do not edit: edit the notebook and rebuild."""
# >>> given: a locked cell of the notebook, not the student's code (the audit does not mutate it)
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


# The pieces of earlier steps (locked): RMSNorm (step 1), SwiGLU (step 2) and RoPE (the second assignment).
class RMSNorm(nn.Module):
    """RMSNorm(dim, eps=1e-06): x (..., dim) -> x / sqrt(mean(x ** 2, -1) + eps) * weight, dtype kept."""

    def __init__(self, dim, eps=1e-06):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        dtype = x.dtype
        h = x.float() if dtype in (torch.float16, torch.bfloat16) else x
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return (h * self.weight.to(h.dtype)).to(dtype)


class SwiGLU(nn.Module):
    """SwiGLU(dim, hidden_dim): x (..., dim) -> down_proj(silu(gate_proj(x)) * up_proj(x))."""

    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden_dim, bias=False)
        self.up_proj = nn.Linear(dim, hidden_dim, bias=False)
        self.down_proj = nn.Linear(hidden_dim, dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


def rope(x, positions, base=10000.0):
    """Rotate half: x (B, h, T, head_dim), positions int (T,) or (B, T) -> x turned, its shape and dtype.

    Element i pairs with element i + head_dim / 2; the pair of the token at position p is turned by the
    angle p * base ** (-2i / head_dim), computed in float64, its cos and sin cast to x's dtype.
    """
    half = x.shape[-1] // 2
    inv_freq = base ** (-torch.arange(half, dtype=torch.float64, device=x.device) * 2 / x.shape[-1])
    angles = positions.to(device=x.device, dtype=torch.float64)[..., None] * inv_freq      # (T, half) or (B, T, half)
    if angles.dim() == 3:
        angles = angles[:, None]                                                           # (B, 1, T, half)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
# <<< end of the given code


# Difficulty: ★☆☆, about 10 minutes
class LayerCache:
    """The rotated keys and the values of one block, for every position seen so far.

    append(k, v): k, v (B, num_kv_heads, T_new, head_dim) -> (k_all, v_all), each
                  (B, num_kv_heads, T_cached + T_new, head_dim)
    len(cache): T_cached, the number of positions held
    """

    def __init__(self):
        # Start empty.
        self.k = None
        self.v = None

    def append(self, k, v):
        # Add k and v after what is held, along time (dim -2); return everything held.
        if self.k is None:
            self.k, self.v = k, v
        else:
            self.k = torch.cat([self.k, k], dim=-2)
            self.v = torch.cat([self.v, v], dim=-2)
        return self.k, self.v

    def __len__(self):
        # The number of cached positions.
        return 0 if self.k is None else self.k.shape[-2]


# Difficulty: ★★★, about 50 minutes
class DecoderBlock(nn.Module):
    """One pre-norm block of a Llama-style decoder.

    DecoderBlock(dim, num_heads, num_kv_heads, hidden_dim, eps=1e-06, rope_base=10000.0):
        attn_norm, ffn_norm: RMSNorm(dim, eps); q_proj, o_proj: nn.Linear(dim, dim, bias=False);
        k_proj, v_proj: nn.Linear(dim, num_kv_heads * head_dim, bias=False); ffn: SwiGLU(dim, hidden_dim)
    forward(x, cache=None, positions=None, key_mask=None):
        x (B, T, dim): the new tokens; cache: a LayerCache (its keys and values come first);
        positions: int (T,) or (B, T), default len(cache) + arange(T);
        key_mask: bool (B, T_cached + T), True = a real token
        -> out (B, T, dim): h = x + attention(attn_norm(x)); out = h + ffn(ffn_norm(h))
    """

    def __init__(self, dim, num_heads, num_kv_heads, hidden_dim, eps=1e-06, rope_base=10000.0):
        super().__init__()
        # Keep the sizes; make the two norms, the four projections and the feed-forward network.
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_dim = dim // num_heads
        self.rope_base = rope_base
        self.attn_norm = RMSNorm(dim, eps)
        self.q_proj = nn.Linear(dim, dim, bias=False)
        self.k_proj = nn.Linear(dim, num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(dim, num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(dim, dim, bias=False)
        self.ffn_norm = RMSNorm(dim, eps)
        self.ffn = SwiGLU(dim, hidden_dim)

    def forward(self, x, cache=None, positions=None, key_mask=None):
        # Pre-norm: the residuals add the block's input and h, not their norms.
        h = x + self.attention(self.attn_norm(x), cache, positions, key_mask)
        return h + self.ffn(self.ffn_norm(h))

    def attention(self, x, cache=None, positions=None, key_mask=None):
        # Causal grouped-query attention with RoPE at the cache's offset; x is already normalised.
        B, T, D = x.shape
        past = 0 if cache is None else len(cache)
        if positions is None:
            positions = past + torch.arange(T, device=x.device)                 # continue where the cache ends
        q = self.q_proj(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2)
        q, k = rope(q, positions, self.rope_base), rope(k, positions, self.rope_base)   # never v
        if cache is not None:
            k, v = cache.append(k, v)                                           # rotated keys, num_kv_heads heads
        group = self.num_heads // self.num_kv_heads
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        T_k = k.shape[-2]
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)            # (B, h, T, T_k)
        allowed = (torch.arange(T_k, device=x.device)[None, :]
                   <= (T_k - T + torch.arange(T, device=x.device))[:, None])    # causal, aligned at the end
        if key_mask is not None:
            allowed = allowed & key_mask.to(device=x.device, dtype=torch.bool)[:, None, None, :]
        allowed = allowed.expand(scores.shape)
        any_key = allowed.any(-1, keepdim=True)
        scores = scores.masked_fill(~allowed, float("-inf")).masked_fill(~any_key, 0.0)
        weights = torch.softmax(scores, dim=-1) * allowed                      # a row with no key: zeros
        out = (weights @ v).transpose(1, 2).reshape(B, T, D)
        return self.o_proj(out)
