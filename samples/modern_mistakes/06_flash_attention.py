"""A student's 06_flash_attention with one habit: the online softmax's accumulator not rescaled when the maximum grows."""
import math

import torch


# Difficulty: ★★★, about 30 minutes
def tiled_attention(q, k, v, block_size=64, causal=False):
    """softmax(q k^T / sqrt(d)) v, one block of keys at a time (online softmax), and each row's log-sum-exp.

    q: (B, h, T_q, d); k, v: (B, h, T_k, d); causal: query i may attend keys j <= T_k - T_q + i
    returns out (B, h, T_q, d) and lse (B, h, T_q); a query with no allowed key gets out 0 and lse -inf
    """
    T_q, T_k, d = q.shape[-2], k.shape[-2], q.shape[-1]
    scale = 1.0 / math.sqrt(d)
    m = torch.full(q.shape[:-1], float("-inf"), dtype=q.dtype, device=q.device)   # running max (B, h, T_q)
    l = torch.zeros_like(m)                                                       # running sum of exp
    acc = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype, device=q.device) # running sum of exp * v
    query_pos = torch.arange(T_q, device=q.device)[:, None] + (T_k - T_q)          # (T_q, 1), aligned at the end
    for start in range(0, T_k, block_size):
        kb, vb = k[..., start:start + block_size, :], v[..., start:start + block_size, :]
        s = q @ kb.transpose(-2, -1) * scale                                      # (B, h, T_q, b): one tile
        if causal:
            key_pos = torch.arange(start, start + kb.shape[-2], device=q.device)[None, :]
            s = s.masked_fill(key_pos > query_pos, float("-inf"))
        m_new = torch.maximum(m, s.amax(dim=-1))
        shift = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)  # nothing allowed yet: 0
        p = torch.exp(s - shift[..., None])                                       # masked scores give 0
        correction = torch.exp(m - shift)                                         # re-measure what was summed
        l = l * correction + p.sum(dim=-1)
        acc = acc + p @ vb
        m = m_new
    seen = l > 0                                                                  # False: no allowed key
    out = acc / torch.where(seen, l, torch.ones_like(l))[..., None]
    lse = torch.where(seen, m + torch.log(torch.where(seen, l, torch.ones_like(l))), torch.full_like(l, float("-inf")))
    return out, lse
