"""Reference for step 6, generated from source/self_attention/06_multi_head.ipynb
by `python -m autograder build`. Do not edit: edit the notebook and rebuild."""
import math

import torch


# Difficulty: ★★☆, about 10 minutes
def split_heads(x, num_heads):
    """Cut the model dimension into heads.

    x: (B, T, D) with D divisible by num_heads
    returns (B, h, T, D // h): head i sees columns i*hd .. (i+1)*hd - 1
    """
    B, T, D = x.shape
    head_dim = D // num_heads
    x = x.view(B, T, num_heads, head_dim)  # (B, T, h, hd)
    return x.transpose(1, 2)                # (B, h, T, hd)


# Difficulty: ★★☆, about 5 minutes
def merge_heads(x):
    """Undo split_heads: (B, h, T, hd) -> (B, T, h * hd)."""
    B, h, T, hd = x.shape
    x = x.transpose(1, 2)                   # (B, T, h, hd)
    return x.reshape(B, T, h * hd)          # (B, T, D); reshape copies if needed


# Difficulty: ★★★, about 15 minutes
def multi_head_attention(x, W_Q, W_K, W_V, W_O, num_heads):
    """Multi-head self-attention with plain weight matrices.

    x: (B, T, D)   W_Q, W_K, W_V, W_O: (D, D), applied as x @ W
    returns out (B, T, D) and weights (B, h, T, T)
    """
    B, T, D = x.shape
    head_dim = D // num_heads
    q = split_heads(x @ W_Q, num_heads)                          # (B, h, T, hd)
    k = split_heads(x @ W_K, num_heads)                          # (B, h, T, hd)
    v = split_heads(x @ W_V, num_heads)                          # (B, h, T, hd)
    scores = q @ k.transpose(-2, -1) / math.sqrt(head_dim)      # (B, h, T, T), scale by the head's d_k
    weights = torch.softmax(scores, dim=-1)                      # (B, h, T, T)
    heads = weights @ v                                          # (B, h, T, hd)
    out = merge_heads(heads) @ W_O                               # (B, T, D): heads mixed by W_O
    return out, weights
