"""A student's 04_rope with one habit: RoPE pairs taken interleaved (2i, 2i+1) instead of rotate-half (i, i + d/2)."""
import math

import torch


# Difficulty: ★☆☆, about 10 minutes
def rope_angles(positions, head_dim, base=10000.0):
    """The angle by which each pair of each token turns, in float64.

    positions: (T,) integer tensor, the tokens' positions (0 for the first token of a sequence)
    head_dim: even int; base: float
    returns (T, head_dim // 2) float64: angles[t, i] = positions[t] * base ** (-2 i / head_dim)
    """
    positions = torch.as_tensor(positions)
    i = torch.arange(head_dim // 2, dtype=torch.float64, device=positions.device)   # pair index
    freqs = base ** (-2.0 * i / head_dim)                                           # (head_dim / 2,)
    return positions.to(torch.float64)[:, None] * freqs[None, :]                    # (T, head_dim / 2)


# Difficulty: ★★☆, about 15 minutes
def apply_rope(x, positions, base=10000.0):
    """Turn every pair (x[..., t, i], x[..., t, i + head_dim/2]) by angle positions[t] * base ** (-2i / head_dim).

    x: (..., T, head_dim) with head_dim even; positions: (T,) integer tensor
    returns the turned x: same shape, dtype and device as x
    """
    half = x.shape[-1] // 2
    angles = rope_angles(positions, x.shape[-1], base)                 # (T, half), float64
    cos = angles.cos().to(device=x.device, dtype=x.dtype)              # cast only after cos and sin
    sin = angles.sin().to(device=x.device, dtype=x.dtype)
    x1, x2 = x[..., 0::2], x[..., 1::2]                              # pair i is (x1[..., i], x2[..., i])
    return torch.stack([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).flatten(-2)
