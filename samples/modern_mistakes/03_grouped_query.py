"""A student's 03_grouped_query with one habit: key/value heads shared with `repeat` (tiled) where `repeat_interleave` is meant."""
import math

import torch


# Difficulty: ★★☆, about 15 minutes
def grouped_query_attention(x, W_Q, W_K, W_V, W_O, num_heads, num_kv_heads, causal=True):
    """Self-attention with num_heads query heads sharing num_kv_heads key/value heads.

    x: (B, T, D)   W_Q, W_O: (D, D)   W_K, W_V: (D, num_kv_heads * head_dim), head_dim = D // num_heads
    query head i reads key/value head i // (num_heads // num_kv_heads); causal: step 1's causal mask
    returns out (B, T, D) and weights (B, num_heads, T, T)
    """
    B, T, D = x.shape
    head_dim = D // num_heads
    group = num_heads // num_kv_heads                                          # query heads per key/value head
    q = (x @ W_Q).view(B, T, num_heads, head_dim).transpose(1, 2)             # (B, h, T, hd)
    k = (x @ W_K).view(B, T, num_kv_heads, head_dim).transpose(1, 2)          # (B, h_kv, T, hd)
    v = (x @ W_V).view(B, T, num_kv_heads, head_dim).transpose(1, 2)          # (B, h_kv, T, hd)
    k = k.repeat(1, group, 1, 1)                                      # (B, h, T, hd): head i gets i // group
    v = v.repeat(1, group, 1, 1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(head_dim)                    # (B, h, T, T)
    if causal:
        allowed = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()   # key j <= query i
        scores = scores.masked_fill(~allowed, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    out = (weights @ v).transpose(1, 2).reshape(B, T, D) @ W_O                # (B, T, D)
    return out, weights
