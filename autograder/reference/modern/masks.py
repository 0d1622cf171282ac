"""Known mistakes of step 1 (01_masks), applied to its reference in torch float64.

Each function computes what a student who made one catalogued mistake would get on the same
inputs (mistake=None: the reference's own answer). The suite compares a wrong answer with these and
names the mistake whose answer it matches; reference/misconceptions.py says what each one means.

Masks are bool tensors, True = may attend (the contract); "blocked" below means False.
"""
import math

import torch

from solutions.modern_attention import step01_masks as ref

# the mistakes each function can show, in the catalogue's ids
CAUSAL_MISTAKES = ("causal-upper-triangle", "mask-true-blocked", "causal-aligned-at-start", "causal-excludes-diagonal")
PADDING_MISTAKES = ("mask-true-blocked", "padding-off-by-one")
ATTENTION_MISTAKES = ("mask-after-softmax", "mask-fill-zero", "mask-true-blocked", "masked-row-nan",
                      "mask-fill-finite", "mask-ignored")

# a finite "minus infinity" (-1e9, torch.finfo(dtype).min): exp() of it minus the row's maximum is 0
FINITE_FILL = -1e9


def causal_mask(T_q, T_k=None, mistake=None):
    """(T_q, T_k) bool: the causal mask, or the one `mistake` builds.

    causal-upper-triangle: j >= the query's position (the future instead of the past);
    mask-true-blocked: the complement (True = blocked, PyTorch's attn_mask convention for bool masks
        in nn.Transformer, or `triu(diagonal=1)`);
    causal-aligned-at-start: query i at position i (`tril()` without the T_k - T_q offset);
    causal-excludes-diagonal: j < the query's position (`<` for `<=`, `tril(-1)`).
    """
    T_k = T_q if T_k is None else T_k
    right = ref.causal_mask(T_q, T_k)
    ones = torch.ones(T_q, T_k, dtype=torch.bool)
    if mistake is None:
        return right
    if mistake == "causal-upper-triangle":
        return ones.triu(T_k - T_q)
    if mistake == "mask-true-blocked":
        return ~right
    if mistake == "causal-aligned-at-start":
        n = max(T_q, T_k)
        return ref.causal_mask(n)[:T_q, :T_k]
    if mistake == "causal-excludes-diagonal":
        return ones.tril(T_k - T_q - 1)
    raise KeyError(mistake)


def padding_mask(lengths, T, mistake=None):
    """(B, T) bool: the padding mask of int `lengths` (B,), or the one `mistake` builds.

    mask-true-blocked: True on the padding; padding-off-by-one: `t <= lengths[b]`.
    """
    right = ref.padding_mask(lengths, T)
    if mistake is None:
        return right
    if mistake == "mask-true-blocked":
        return ~right
    if mistake == "padding-off-by-one":
        return ref.padding_mask(lengths + 1, T)
    raise KeyError(mistake)


def no_key(mask, shape):
    """(..., T_q, 1) bool: the queries whose row of `mask` (broadcast to the weights' `shape`) allows
    no key at all."""
    return ~torch.broadcast_to(mask, shape).any(-1, keepdim=True)


def masked_attention(q, k, v, mask=None, mistake=None):
    """(out, weights) of masked attention on float64 tensors, or what `mistake` gives.

    q (..., T_q, d), k (..., T_k, d), v (..., T_k, d_v), mask bool broadcastable to (..., T_q, T_k).
    mask-after-softmax: the softmax over every key, blocked weights then set to 0 (rows no longer sum to 1);
    mask-fill-zero: blocked scores set to 0 instead of -inf (exp(0) = 1: blocked keys keep weight);
    mask-true-blocked: the mask read the other way round (True = blocked);
    masked-row-nan: a query with no allowed key left as the softmax of a row of -inf, NaN;
    mask-fill-finite: blocked scores set to a large negative number (-1e9): right wherever a key is
        allowed, but a query with none gets uniform weights 1/T_k;
    mask-ignored: no mask at all (e.g. `scores.masked_fill(...)` whose result is never assigned).
    """
    if mistake is None or mask is None:
        return ref.masked_attention(q, k, v, mask)
    if mistake == "mask-true-blocked":
        return ref.masked_attention(q, k, v, ~mask)
    if mistake == "mask-ignored":
        return ref.masked_attention(q, k, v)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    blocked = ~mask
    if mistake == "mask-after-softmax":
        weights = torch.softmax(scores, dim=-1).masked_fill(blocked, 0.0)
    elif mistake == "mask-fill-zero":
        weights = torch.softmax(scores.masked_fill(blocked, 0.0), dim=-1)
    elif mistake == "mask-fill-finite":
        weights = torch.softmax(scores.masked_fill(blocked, FINITE_FILL), dim=-1)
    elif mistake == "masked-row-nan":
        weights = torch.softmax(scores.masked_fill(blocked, float("-inf")), dim=-1)
    else:
        raise KeyError(mistake)
    return weights @ v, weights


def attention_mistakes(q, k, v, mask, mistakes=ATTENTION_MISTAKES):
    """{id: (out, weights)} for every mistake of masked_attention on these inputs (float64 tensors).

    A mistake that gives the reference's own answer here (the fills, where every query has an
    allowed key) is left out: it cannot be told from correct code on these inputs."""
    right = ref.masked_attention(q, k, v, mask)
    found = {}
    for mid in mistakes:
        out, w = masked_attention(q, k, v, mask, mid)
        if not (_same(out, right[0]) and _same(w, right[1])):
            found[mid] = (out, w)
    return found


def _same(a, b):
    return a.shape == b.shape and bool(torch.equal(torch.nan_to_num(a, nan=7.0), torch.nan_to_num(b, nan=7.0)))


# ------------------------------------------------------------------ the audit's probes (reference/equivalence.py)
def probes(rng, dtype, scale):
    """[(function name, args, kwargs)]: calls on which a mutant of the reference must answer as the
    reference does to count as equivalent. Tensors that require grad are differentiated (float64);
    every dim distinct; masks end-aligned with T_q < T_k and T_q > T_k, padding with an empty
    sequence (queries with no allowed key), a mask on the key axis only, and a 2-D (T_q, T_k) mask."""
    grad = dtype == "float64"

    def t(*shape):
        return torch.tensor((rng.standard_normal(shape) * scale).astype(dtype), requires_grad=grad)

    B, h, T_q, T_k, d, d_v = 2, 3, 4, 6, 5, 7
    q, k, v = t(B, h, T_q, d), t(B, h, T_k, d), t(B, h, T_k, d_v)
    causal = ref.causal_mask(T_q, T_k)
    padded = ref.padding_mask(torch.tensor([6, 0]), T_k)[:, None, None, :]
    q6 = t(B, h, 6, d)
    return [("causal_mask", [4, 6], {}), ("causal_mask", [6, 4], {}), ("causal_mask", [5], {}),
            ("causal_mask", [3], {"T_k": 3, "device": "cpu"}), ("causal_mask", [1, 1], {}),
            ("padding_mask", [torch.tensor([3, 0, 5]), 5], {}),
            ("padding_mask", [torch.tensor([2, 4], dtype=torch.int32), 4], {}),
            ("masked_attention", [q, k, v], {}), ("masked_attention", [q, k, v, causal], {}),
            ("masked_attention", [q, k, v, padded & causal], {}),
            ("masked_attention", [q6, t(B, h, 4, d), t(B, h, 4, d_v), ref.causal_mask(6, 4)], {}),
            ("masked_attention", [q[0, 0], k[0, 0], v[0, 0], causal], {}),
            ("masked_attention", [q, k, v, torch.tensor([True, False, True, True, False, True])], {})]
