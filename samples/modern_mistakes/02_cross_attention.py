"""A student's 02_cross_attention with one habit: keys and values projected from x, not from the context."""
import math

import torch


# Difficulty: ★★☆, about 15 minutes
def cross_attention(x, context, W_Q, W_K, W_V, W_O, num_heads, context_mask=None):
    """Multi-head attention from the tokens of x to the tokens of context.

    x: (B, T_q, D)   context: (B, T_k, D_c)
    W_Q: (D, D)   W_K, W_V: (D_c, D)   W_O: (D, D), each applied as t @ W
    context_mask: bool (B, T_k), True = a real context token; None = every token is real
    returns out (B, T_q, D) and weights (B, h, T_q, T_k)
    """
    B, T_q, D = x.shape
    T_k = x.shape[1]
    head_dim = D // num_heads
    q = (x @ W_Q).view(B, T_q, num_heads, head_dim).transpose(1, 2)           # (B, h, T_q, hd): from x
    k = (x @ W_K).view(B, T_k, num_heads, head_dim).transpose(1, 2)     # (B, h, T_k, hd): from context
    v = (x @ W_V).view(B, T_k, num_heads, head_dim).transpose(1, 2)     # (B, h, T_k, hd)
    scores = q @ k.transpose(-2, -1) / math.sqrt(head_dim)                    # (B, h, T_q, T_k)
    if context_mask is None:
        weights = torch.softmax(scores, dim=-1)
    else:
        blocked = ~context_mask.to(scores.device)[:, None, None, :]           # (B, 1, 1, T_k): keys only
        weights = torch.softmax(scores.masked_fill(blocked, float("-inf")), dim=-1)
        weights = weights.masked_fill(blocked, 0.0)                           # no real context token: 0, not NaN
    heads = weights @ v                                                        # (B, h, T_q, hd)
    out = heads.transpose(1, 2).reshape(B, T_q, D) @ W_O                      # (B, T_q, D)
    return out, weights
