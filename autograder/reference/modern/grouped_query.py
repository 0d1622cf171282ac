"""Known mistakes of step 3 (grouped_query_attention), applied to the reference in torch float64.

Each mistake is what a student who made that one mistake would get on the same inputs. Most are
the reference itself on changed arguments (a mistake in the grouping is the same model with its
heads or columns reordered; a mistake in the scale is the same model with W_Q scaled; no mask
is causal=False), so what is compared is the reference's own arithmetic; those that change the
attention itself (the softmax's axis, the mask's triangle or fill) are written out below.

Shapes: x (B, T, D); W_Q, W_O (D, D); W_K, W_V (D, h_kv * hd) with hd = D // h; out (B, T, D),
weights (B, h, T, T). `grouped_query` takes and returns float64 tensors, `mistakes` numpy arrays.
"""
import math

import torch

from solutions.modern_attention import step03_grouped_query as reference

# the ids this module computes (misconceptions.CATALOGUE); "causal-flag-ignored" only shows with causal=False
MISTAKES = ("gqa-heads-tiled", "gqa-kv-layout", "causal-mask-missing", "causal-flag-ignored", "scale-by-d-model",
            "gqa-scale-by-kv-width", "missing-output-projection", "softmax-wrong-axis", "causal-upper-triangle",
            "mask-fill-zero")
MASK_MISTAKES = ("causal-mask-missing", "causal-upper-triangle", "mask-fill-zero")      # with causal=True only


def _heads_tiled(x, W_Q, W_K, W_V, W_O, h, h_kv, causal):
    """Query head i reads key/value head i % h_kv (keys tiled with `repeat`), not i // group.

    The same model as the reference's with the query heads reordered: query head i (its W_Q
    columns, its W_O rows) is put where the reference gives it key/value head i % h_kv,
    at place (i % h_kv) * group + i // h_kv; its weights are read back from there."""
    D = x.shape[-1]
    hd, group = D // h, h // h_kv
    place = [(i % h_kv) * group + i // h_kv for i in range(h)]          # a permutation of the heads
    order = [0] * h
    for i, p in enumerate(place):
        order[p] = i                                                    # the head standing at place p
    cols = torch.cat([torch.arange(i * hd, (i + 1) * hd) for i in order])
    out, w = reference.grouped_query_attention(x, W_Q[:, cols], W_K, W_V, W_O[cols, :], h, h_kv, causal)
    return out, w[:, place]


def _kv_strided(W, h_kv, hd):
    """W's columns reordered so that the reference's key/value head j reads columns j, j + h_kv,
    j + 2 h_kv, ... (a view as (B, T, hd, h_kv)): the strided layout instead of the block j*hd .. (j+1)*hd."""
    cols = torch.arange(h_kv * hd).view(hd, h_kv).T.reshape(-1)
    return W[:, cols]


def _attention_changed(x, W_Q, W_K, W_V, W_O, h, h_kv, causal, axis=-1, allowed="tril", fill=float("-inf")):
    """The attention written out (repeat_interleave grouping), with the softmax normalised along `axis`;
    when causal, the scores outside the `allowed` triangle ("tril", or "triu": the future) set to `fill`."""
    B, T, D = x.shape
    hd, group = D // h, h // h_kv
    q = (x @ W_Q).view(B, T, h, hd).transpose(1, 2)
    k, v = ((x @ W).view(B, T, h_kv, hd).transpose(1, 2).repeat_interleave(group, dim=1) for W in (W_K, W_V))
    scores = q @ k.transpose(-2, -1) / math.sqrt(hd)
    if causal:
        ones = torch.ones(T, T, dtype=torch.bool)
        scores = scores.masked_fill(~(ones.tril() if allowed == "tril" else ones.triu()), fill)
    weights = torch.softmax(scores, dim=axis)
    return (weights @ v).transpose(1, 2).reshape(B, T, D) @ W_O, weights


def grouped_query(x, W_Q, W_K, W_V, W_O, h, h_kv, causal=True, mistake=None):
    """(out, weights) of grouped-query attention with the one `mistake` (an id of MISTAKES) applied."""
    D = x.shape[-1]
    hd = D // h
    scaled = {"scale-by-d-model": math.sqrt(hd / D),                   # scores / sqrt(D)
              "gqa-scale-by-kv-width": math.sqrt(1 / h_kv)}            # scores / sqrt(h_kv * hd)
    with torch.no_grad():
        if mistake == "gqa-heads-tiled":
            return _heads_tiled(x, W_Q, W_K, W_V, W_O, h, h_kv, causal)
        if mistake == "gqa-kv-layout":
            return reference.grouped_query_attention(x, W_Q, _kv_strided(W_K, h_kv, hd), _kv_strided(W_V, h_kv, hd),
                                                     W_O, h, h_kv, causal)
        if mistake in ("causal-mask-missing", "causal-flag-ignored"):
            # no mask although causal=True; a mask although causal=False
            return reference.grouped_query_attention(x, W_Q, W_K, W_V, W_O, h, h_kv, mistake == "causal-flag-ignored")
        if mistake in scaled:                                          # q enters only the scores
            return reference.grouped_query_attention(x, W_Q * scaled[mistake], W_K, W_V, W_O, h, h_kv, causal)
        if mistake == "missing-output-projection":
            return reference.grouped_query_attention(x, W_Q, W_K, W_V, torch.eye(D, dtype=x.dtype), h, h_kv, causal)
        if mistake == "softmax-wrong-axis":
            return _attention_changed(x, W_Q, W_K, W_V, W_O, h, h_kv, causal, axis=-2)
        if mistake == "causal-upper-triangle":
            return _attention_changed(x, W_Q, W_K, W_V, W_O, h, h_kv, causal, allowed="triu")
        if mistake == "mask-fill-zero":
            return _attention_changed(x, W_Q, W_K, W_V, W_O, h, h_kv, causal, fill=0.0)
        if mistake is None:
            return reference.grouped_query_attention(x, W_Q, W_K, W_V, W_O, h, h_kv, causal)
    raise ValueError(f"unknown mistake {mistake!r}")


def mistakes(x, W_Q, W_K, W_V, W_O, h, h_kv, causal=True):
    """{id: (out, weights)} as float64 numpy arrays: every mistake that changes something on these
    inputs (tiled heads and the keys' width need 1 < h_kv < h, the strided layout h_kv > 1; a
    missing mask shows only with causal=True, a mask applied anyway only with causal=False)."""
    found = {}
    for mid in MISTAKES:
        if mid in ("gqa-heads-tiled", "gqa-scale-by-kv-width") and not 1 < h_kv < h:
            continue                          # the same as the reference at either extreme
        if mid == "gqa-kv-layout" and h_kv == 1:
            continue
        if (mid in MASK_MISTAKES and not causal) or (mid == "causal-flag-ignored" and causal):
            continue
        out, w = grouped_query(x, W_Q, W_K, W_V, W_O, h, h_kv, causal, mistake=mid)
        found[mid] = (out.numpy(), w.numpy())
    return found


# ------------------------------------------------------------------ the audit's equivalence probes
def probes(rng, dtype, scale):
    """[(function name, args, kwargs)] for the mutation audit's equivalence check (reference/equivalence.py):
    grouped_query_attention on torch tensors of `dtype` (float64 ones require grad), x scaled by `scale`,
    6 query heads sharing 1, 2, 3 and 6 key/value heads, causal by default, by keyword and not at all."""
    B, T, D, h = 2, 5, 24, 6

    def t(shape, s):
        return torch.tensor((rng.standard_normal(shape) * s).astype(dtype), requires_grad=dtype == "float64")
    calls = []
    for h_kv, kwargs in ((2, {}), (3, {"causal": False}), (1, {}), (6, {"causal": True}), (2, {"causal": False})):
        cols = h_kv * (D // h)
        args = [t((B, T, D), scale), t((D, D), D ** -0.5), t((D, cols), D ** -0.5), t((D, cols), D ** -0.5),
                t((D, D), D ** -0.5), h, h_kv]
        calls.append(("grouped_query_attention", args, kwargs))
    return calls
