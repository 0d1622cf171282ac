"""A student's 05_kv_cache with one habit: the causal mask applied only without a cache (new tokens see each other's future)."""
import math

import torch
import torch.nn as nn


# Difficulty: ★☆☆, about 10 minutes
class KVCache:
    """The keys and values of one attention layer for every position generated so far.

    append(k, v): k, v (B, h, T_new, hd) -> (k_all, v_all), each (B, h, T_cached + T_new, hd)
    len(cache): T_cached, the number of positions held
    """

    def __init__(self):
        # Start empty: nothing is cached yet.
        self.k = None                      # (B, h, T_cached, hd) once something is appended
        self.v = None

    def append(self, k, v):
        # Add k and v after what is held, along the time axis (dim -2); return everything held.
        if self.k is None:
            self.k, self.v = k, v
        else:
            self.k = torch.cat([self.k, k], dim=-2)      # along time
            self.v = torch.cat([self.v, v], dim=-2)
        return self.k, self.v

    def __len__(self):
        # The number of cached positions.
        return 0 if self.k is None else self.k.shape[-2]


# Difficulty: ★★★, about 25 minutes
class CausalSelfAttention(nn.Module):
    """Causal multi-head self-attention that can continue from a KVCache.

    forward(x, cache=None): x (B, T, D) -> out (B, T, D). With a cache, x holds the new tokens only:
    their keys and values are appended, and they attend to every cached position and, causally, to each other.
    """

    def __init__(self, d_model, num_heads):
        super().__init__()
        # Check that d_model is divisible by num_heads, store num_heads and head_dim, and create
        # self.q_proj, self.k_proj, self.v_proj, self.out_proj, each nn.Linear(d_model, d_model, bias=False).
        assert d_model % num_heads == 0, "d_model must be divisible by num_heads"
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, d_model, bias=False)
        self.v_proj = nn.Linear(d_model, d_model, bias=False)
        self.out_proj = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        # Project the new tokens, append their keys and values to the cache (if any), attend causally
        # to every position held, merge the heads, apply out_proj. Return out.
        B, T, D = x.shape
        h, hd = self.num_heads, self.head_dim
        q = self.q_proj(x).view(B, T, h, hd).transpose(1, 2)            # (B, h, T, hd): new tokens only
        k = self.k_proj(x).view(B, T, h, hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, h, hd).transpose(1, 2)
        if cache is not None:
            k, v = cache.append(k, v)                                   # (B, h, T_k, hd): cached + new
        T_k = k.shape[-2]
        scores = q @ k.transpose(-2, -1) / math.sqrt(hd)                # (B, h, T, T_k)
        query_pos = torch.arange(T, device=x.device)[:, None] + (T_k - T)   # new query i is at T_k - T + i
        key_pos = torch.arange(T_k, device=x.device)[None, :]
        if cache is None:
            scores = scores.masked_fill(key_pos > query_pos, float("-inf"))  # no key after the query
        weights = torch.softmax(scores, dim=-1)
        heads = weights @ v                                             # (B, h, T, hd)
        return self.out_proj(heads.transpose(1, 2).reshape(B, T, D))    # (B, T, D)
