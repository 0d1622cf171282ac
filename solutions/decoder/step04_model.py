"""Reference for step 4, generated from source/decoder/04_model.ipynb
by `python -m autograder build`. Do not edit: edit the notebook and rebuild."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


# >>> given: a locked cell of the notebook, not the student's code (the audit does not mutate it)
# The pieces of steps 1-3 (RMSNorm, SwiGLU, LayerCache, DecoderBlock), given here so that this step stands
# on its own (locked: read them, do not change them).


class RMSNorm(nn.Module):
    """Step 1: y = x / sqrt(mean(x**2, -1) + eps) * weight; half precision computed in float32."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
        y = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return (y * self.weight.to(h.dtype)).to(x.dtype)


class SwiGLU(nn.Module):
    """Step 2: down_proj(silu(gate_proj(x)) * up_proj(x))."""

    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden_dim, bias=False)
        self.up_proj = nn.Linear(dim, hidden_dim, bias=False)
        self.down_proj = nn.Linear(hidden_dim, dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LayerCache:
    """Step 3: one block's keys (after RoPE) and values, num_kv_heads heads, appended along time."""

    def __init__(self):
        self.k = self.v = None

    def append(self, k, v):
        if self.k is None:
            self.k, self.v = k, v
        else:
            self.k, self.v = torch.cat([self.k, k], dim=-2), torch.cat([self.v, v], dim=-2)
        return self.k, self.v

    def __len__(self):
        return 0 if self.k is None else self.k.shape[-2]


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


def rope(x, positions, base):
    """x (B, h, T, hd) rotated at positions (T,) or (B, T): rotate-half RoPE, angles computed in float64."""
    hd = x.shape[-1]
    inv_freq = base ** (-torch.arange(0, hd, 2, dtype=torch.float64, device=x.device) / hd)
    angles = positions.to(torch.float64)[..., None] * inv_freq
    angles = torch.cat([angles, angles], dim=-1)
    if angles.dim() == 3:                              # (B, T, hd) -> (B, 1, T, hd): one row of positions per entry
        angles = angles[:, None]
    return x * angles.cos().to(x.dtype) + rotate_half(x) * angles.sin().to(x.dtype)


class DecoderBlock(nn.Module):
    """Step 3: h = x + attention(attn_norm(x)); out = h + ffn(ffn_norm(h))."""

    def __init__(self, dim, num_heads, num_kv_heads, hidden_dim, eps=1e-6, rope_base=10000.0):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.head_dim = num_heads, num_kv_heads, dim // num_heads
        self.rope_base = rope_base
        self.attn_norm = RMSNorm(dim, eps)
        self.q_proj = nn.Linear(dim, dim, bias=False)
        self.k_proj = nn.Linear(dim, num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(dim, num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(dim, dim, bias=False)
        self.ffn_norm = RMSNorm(dim, eps)
        self.ffn = SwiGLU(dim, hidden_dim)

    def attention(self, x, cache, positions, key_mask):
        B, T, D = x.shape
        hd, h, h_kv = self.head_dim, self.num_heads, self.num_kv_heads
        if positions is None:
            positions = (0 if cache is None else len(cache)) + torch.arange(T, device=x.device)
        q = self.q_proj(x).view(B, T, h, hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, h_kv, hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, h_kv, hd).transpose(1, 2)
        q, k = rope(q, positions, self.rope_base), rope(k, positions, self.rope_base)
        if cache is not None:
            k, v = cache.append(k, v)                  # rotated keys, num_kv_heads heads
        k, v = k.repeat_interleave(h // h_kv, dim=1), v.repeat_interleave(h // h_kv, dim=1)
        T_k = k.shape[-2]
        allowed = torch.ones(T, T_k, dtype=torch.bool, device=x.device).tril(T_k - T)   # aligned at the end
        if key_mask is not None:
            allowed = allowed & key_mask.bool()[:, None, None, :]
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
        weights = torch.softmax(scores.masked_fill(~allowed, torch.finfo(scores.dtype).min), dim=-1)
        return self.o_proj((weights @ v).transpose(1, 2).reshape(B, T, D))

    def forward(self, x, cache=None, positions=None, key_mask=None):
        h = x + self.attention(self.attn_norm(x), cache, positions, key_mask)
        return h + self.ffn(self.ffn_norm(h))
# <<< end of the given code


# Difficulty: ★★☆, about 20 minutes
class DecoderLM(nn.Module):
    """tokens (B, T) -> logits (B, T, vocab_size): embedding, num_layers blocks, final norm, output head."""

    def __init__(self, vocab_size, dim, num_layers, num_heads, num_kv_heads, hidden_dim, eps=1e-6,
                 rope_base=10000.0, tie_embeddings=False):
        super().__init__()
        # embed, blocks (an nn.ModuleList), norm and lm_head; lm_head.weight IS embed.weight when tie_embeddings.
        self.embed = nn.Embedding(vocab_size, dim)
        self.blocks = nn.ModuleList(DecoderBlock(dim, num_heads, num_kv_heads, hidden_dim, eps, rope_base)
                                    for _ in range(num_layers))
        self.norm = RMSNorm(dim, eps)
        self.lm_head = nn.Linear(dim, vocab_size, bias=False)
        if tie_embeddings:
            self.lm_head.weight = self.embed.weight         # one Parameter, two uses

    def forward(self, tokens, cache=None, attention_mask=None):
        # Positions: continue after the cache (len(cache[0]) + arange(T)); with an attention_mask of
        # (B, T_cached + T), a row's positions count its real tokens only (cumsum(mask) - 1, last T columns).
        T = tokens.shape[1]
        if attention_mask is None:
            past = 0 if cache is None else len(cache[0])
            positions = past + torch.arange(T, device=tokens.device)
        else:
            positions = (attention_mask.long().cumsum(-1) - 1)[:, -T:].clamp(min=0)
        x = self.embed(tokens)
        for i, block in enumerate(self.blocks):
            x = block(x, None if cache is None else cache[i], positions, attention_mask)
        return self.lm_head(self.norm(x))


# Difficulty: ★☆☆, about 2 minutes
def new_cache(model):
    """One empty LayerCache per block of the model."""
    return [LayerCache() for _ in model.blocks]
