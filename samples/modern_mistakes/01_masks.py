"""A student's 01_masks with one habit: the mask applied after the softmax (blocked weights zeroed, the rest not renormalised)."""
import math

import torch


# Difficulty: ★★☆, about 10 minutes
def causal_mask(T_q, T_k=None, device=None):
    """Which keys each query may attend under the causal rule.

    T_q: the number of queries, the last T_q positions of the sequence
    T_k: the number of keys (T_q if None)
    device: where to create the mask (None: the default device)
    returns a bool tensor (T_q, T_k): True where j <= T_k - T_q + i (query i at position T_k - T_q + i)
    """
    T_k = T_q if T_k is None else T_k
    query_position = torch.arange(T_q, device=device) + (T_k - T_q)   # (T_q,): the last T_q positions
    key_position = torch.arange(T_k, device=device)                   # (T_k,)
    return key_position[None, :] <= query_position[:, None]           # (T_q, T_k), bool


# Difficulty: ★☆☆, about 5 minutes
def padding_mask(lengths, T):
    """Which positions of a padded batch hold real tokens.

    lengths: int tensor (B,), the real length of each sequence (0 <= lengths[b] <= T)
    T: the padded length
    returns a bool tensor (B, T) on lengths' device: True for the first lengths[b] positions of row b
    """
    positions = torch.arange(T, device=lengths.device)       # (T,)
    return positions[None, :] < lengths[:, None]              # (B, T), bool


# Difficulty: ★★☆, about 15 minutes
def masked_attention(q, k, v, mask=None):
    """Scaled dot-product attention in which a query attends only the keys its mask allows.

    q: (..., T_q, d)   k: (..., T_k, d)   v: (..., T_k, d_v)
    mask: bool, broadcastable to (..., T_q, T_k), True = may attend; None = no mask
    returns out (..., T_q, d_v) and weights (..., T_q, T_k); blocked weights are exactly 0, and a query
    with no allowed key gets zero weights and a zero output
    """
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])        # (..., T_q, T_k)
    if mask is None:
        weights = torch.softmax(scores, dim=-1)
    else:
        blocked = ~mask.to(scores.device)                             # True = may not attend
        weights = torch.softmax(scores, dim=-1).masked_fill(blocked, 0.0)
        weights = weights.masked_fill(blocked, 0.0)                   # rows with no allowed key: NaN -> 0
    return weights @ v, weights                                        # (..., T_q, d_v), (..., T_q, T_k)
