"""Known mistakes of step 6 (06_flash_attention), applied to its reference in torch float64.

`tiled(q, k, v, block_size, causal, mistake)` is the reference's online softmax written once more
with one catalogued mistake switched on (mistake=None: the reference's arithmetic, which a test
holds to solutions/), so what a student who made that one mistake would get on the same inputs is
computed, never guessed. reference/misconceptions.py says what each one means.

Shapes: q (B, h, T_q, d), k and v (B, h, T_k, d); out (B, h, T_q, d), lse (B, h, T_q).
"""
import math

import torch

from solutions.modern_attention import step06_flash_attention as ref

# the ids `mistakes` computes (misconceptions.CATALOGUE)
MISTAKES = ("online-no-rescale", "online-no-final-division", "online-max-not-kept", "lse-without-max",
            "last-block-dropped", "causal-aligned-at-start", "masked-row-nan", "scale-missing")
# each id's variants: the ways of making it that give different numbers ("online-no-rescale": neither the
# sum nor the accumulator rescaled, which is also what taking the factor after updating the max gives;
# or the sum rescaled and the accumulator not)
VARIANTS = {"online-no-rescale": ("both", "acc")}


def tiled(q, k, v, block_size=64, causal=False, mistake=None, variant=None):
    """(out, lse) of tiled attention with the one `mistake` (an id of MISTAKES, or None) applied."""
    T_q, T_k, d = q.shape[-2], k.shape[-2], q.shape[-1]
    scale = 1.0 if mistake == "scale-missing" else 1.0 / math.sqrt(d)
    m = torch.full(q.shape[:-1], float("-inf"), dtype=q.dtype)
    l = torch.zeros_like(m)
    acc = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    offset = 0 if mistake == "causal-aligned-at-start" else T_k - T_q
    query_pos = torch.arange(T_q)[:, None] + offset
    # the last partial block dropped: range over whole blocks only
    stop = (T_k // block_size) * block_size if mistake == "last-block-dropped" else T_k
    for start in range(0, stop, block_size):
        kb, vb = k[..., start:start + block_size, :], v[..., start:start + block_size, :]
        s = q @ kb.transpose(-2, -1) * scale
        if causal:
            key_pos = torch.arange(start, start + kb.shape[-2])[None, :]
            s = s.masked_fill(key_pos > query_pos, float("-inf"))
        m_new = torch.maximum(m, s.amax(dim=-1))
        shift = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
        p = torch.exp(s - shift[..., None])
        correction = torch.exp(m - shift)
        if mistake == "online-no-rescale":
            l = l * (correction if variant == "acc" else 1.0) + p.sum(dim=-1)
            acc = acc + p @ vb
        else:
            # with the max not kept (m_new computed, m never assigned) m stays -inf: the correction is 0 at
            # every block, the sums start again and only the last block is left; lse = -inf + log(l)
            l = l * correction + p.sum(dim=-1)
            acc = acc * correction[..., None] + p @ vb
        if mistake != "online-max-not-kept":
            m = m_new
    seen = l > 0
    if mistake == "masked-row-nan":
        return acc / l[..., None], m + torch.log(l)             # 0 / 0 and -inf + log(0)
    safe = torch.where(seen, l, torch.ones_like(l))
    out = acc if mistake == "online-no-final-division" else acc / safe[..., None]
    logs = torch.log(safe) if mistake == "lse-without-max" else m + torch.log(safe)
    lse = torch.where(seen, logs, torch.full_like(l, float("-inf")))
    return out, lse


def mistakes(q, k, v, block_size=64, causal=False):
    """{id or "id|variant": (out, lse)} as float64 numpy arrays, for every mistake that changes something on
    these inputs (a dropped last block needs a block that does not divide T_k; the causal alignment,
    causal=True and T_q != T_k; a NaN row, a query with no allowed key)."""
    found = {}
    with torch.no_grad():
        right = ref.tiled_attention(q, k, v, block_size, causal)
        for mid in MISTAKES:
            for variant in VARIANTS.get(mid, (None,)):
                out, lse = tiled(q, k, v, block_size, causal, mid, variant)
                if torch.equal(out, right[0]) and torch.equal(lse, right[1]):
                    continue
                key = mid if variant is None else f"{mid}|{variant}"
                found[key] = (out.numpy(), lse.numpy())
    return found


def named(ids):
    """Catalogue ids from `mistakes`' keys (a variant's suffix dropped), in order, once each."""
    out = []
    for key in ids:
        mid = key.split("|")[0]
        if mid not in out:
            out.append(mid)
    return out


# ------------------------------------------------------------------ the audit's equivalence probes
def probes(rng, dtype, scale):
    """[(function name, args, kwargs)] for the mutation audit's equivalence check (reference/equivalence.py):
    tiled_attention on torch tensors of `dtype` (float64 ones require grad), scaled by `scale`: blocks that
    divide T_k, that do not, larger than T_k and of 1; causal with T_q < T_k, T_q > T_k (queries with no
    allowed key: their lse is -inf, not differentiated) and T_q = T_k; the default block size."""
    grad = dtype == "float64"

    def t(*shape):
        return torch.tensor((rng.standard_normal(shape) * scale).astype(dtype), requires_grad=grad)
    B, h, d = 2, 3, 5
    q4, q9, q70 = t(B, h, 4, d), t(B, h, 9, d), t(1, 1, 70, d)
    k, v, k70, v70 = t(B, h, 7, d), t(B, h, 7, d), t(1, 1, 70, d), t(1, 1, 70, d)
    return [("tiled_attention", [q4, k, v], {}), ("tiled_attention", [q4, k, v, 2], {}),
            ("tiled_attention", [q4, k, v], {"block_size": 3, "causal": True}),
            ("tiled_attention", [q4, k, v, 7, True], {}), ("tiled_attention", [q4, k, v, 1, True], {}),
            ("tiled_attention", [q4, k, v, 16], {"causal": False}),
            (_no_grad_lse, [q9, k, v, 3, True], {}),
            ("tiled_attention", [q70, k70, v70], {"causal": True}), ("tiled_attention", [q70, k70, v70, 32], {})]


def _no_grad_lse(module, q, k, v, block_size, causal):
    """tiled_attention where some queries have no allowed key: out differentiated, lse (-inf there) compared
    as a value only."""
    out, lse = module.tiled_attention(q, k, v, block_size, causal)
    return out, lse.detach()
