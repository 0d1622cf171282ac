"""Reference for step 7, generated from source/self_attention/07_full_module.ipynb
by `python -m autograder build`. Do not edit: edit the notebook and rebuild."""
import math

import torch
import torch.nn as nn


# Difficulty: ★★☆, about 10 minutes
class SingleHeadSelfAttention(nn.Module):
    """One head over the full model dimension.

    forward: x (B, T, D) -> out (B, T, D), attn_weights (B, T, T)
    """

    def __init__(self, d_model):
        super().__init__()
        # Store d_model and create self.W_q, self.W_k, self.W_v,
        # each nn.Linear(d_model, d_model, bias=False).
        self.d_model = d_model
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, d_model, bias=False)
        self.W_v = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x):
        # Project, score, divide by sqrt(d_model), softmax over the last dim, mix the values.
        # Return (out, attn_weights).
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)                 # (B, T, D) each
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_model)      # (B, T, T): divide by sqrt(d_k)
        attn_weights = torch.softmax(scores, dim=-1)                    # (B, T, T)
        return attn_weights @ v, attn_weights                           # (B, T, D), (B, T, T)


# Difficulty: ★★★, about 15 minutes
class MultiHeadSelfAttention(nn.Module):
    """h heads of size D / h, batched, then an output projection.

    forward: x (B, T, D) -> out (B, T, D), attn_weights (B, h, T, T)
    """

    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        # Check that d_model is divisible by num_heads, store num_heads and head_dim, and
        # create self.q_proj, self.k_proj, self.v_proj, self.out_proj,
        # each nn.Linear(d_model, d_model, bias=bias).
        assert d_model % num_heads == 0, "d_model must be divisible by num_heads"
        self.d_model = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x):
        # Project, split into heads (view + transpose), attend in every head at once,
        # merge (transpose + reshape), apply out_proj. Return (out, attn_weights).
        B, T, D = x.shape
        h, hd = self.num_heads, self.head_dim
        q = self.q_proj(x).view(B, T, h, hd).transpose(1, 2)            # (B, h, T, hd)
        k = self.k_proj(x).view(B, T, h, hd).transpose(1, 2)            # (B, h, T, hd)
        v = self.v_proj(x).view(B, T, h, hd).transpose(1, 2)            # (B, h, T, hd)
        scores = q @ k.transpose(-2, -1) / math.sqrt(hd)                # (B, h, T, T)
        attn_weights = torch.softmax(scores, dim=-1)                    # (B, h, T, T)
        heads = attn_weights @ v                                        # (B, h, T, hd)
        merged = heads.transpose(1, 2).reshape(B, T, D)                 # (B, T, D)
        return self.out_proj(merged), attn_weights
