"""Known mistakes of step 2 (02_cross_attention), applied to its reference in torch float64.

`cross_attention(..., mistake=...)` is the reference with one catalogued mistake: the mask
mistakes of step 1 (reference/modern/masks.py) inside its attention, or its own: keys and values
taken from x, and the context mask read with nn.MultiheadAttention's convention (True = padding).
"""
import torch

from autograder.reference.modern import masks
from solutions.modern_attention import step02_cross_attention as ref

# masks.masked_attention's mistakes that cross-attention can make too (its mask marks keys only)
ATTENTION_MISTAKES = ("mask-after-softmax", "mask-fill-zero", "masked-row-nan", "mask-fill-finite", "mask-ignored")
MISTAKES = ATTENTION_MISTAKES + ("key-padding-mask-convention", "kv-from-x")


def _heads(t, h):
    """(B, T, D) -> (B, h, T, D / h), head i holding columns i * D / h .. (i + 1) * D / h - 1."""
    B, T, D = t.shape
    return t.view(B, T, h, D // h).transpose(1, 2)


def cross_attention(x, context, W_Q, W_K, W_V, W_O, h, context_mask=None, mistake=None):
    """(out (B, T_q, D), weights (B, h, T_q, T_k)) on float64 tensors, or what `mistake` gives.

    key-padding-mask-convention: context_mask read as key_padding_mask, True = padding;
    kv-from-x: keys and values from x (self-attention over x; only where x fits W_K, D_c = D, and, with
        a mask, T_q = T_k; None elsewhere: such code raises there);
    the others: masks.masked_attention's, in every head, with the mask (B, 1, 1, T_k).
    """
    if mistake is None:
        return ref.cross_attention(x, context, W_Q, W_K, W_V, W_O, h, context_mask)
    if mistake == "key-padding-mask-convention":
        return None if context_mask is None else ref.cross_attention(x, context, W_Q, W_K, W_V, W_O, h, ~context_mask)
    if mistake == "kv-from-x":
        fits = x.shape[-1] == W_K.shape[0] and (context_mask is None or x.shape[1] == context.shape[1])
        return ref.cross_attention(x, x, W_Q, W_K, W_V, W_O, h, context_mask) if fits else None
    if context_mask is None:
        return None
    B, T_q, D = x.shape
    q, k, v = _heads(x @ W_Q, h), _heads(context @ W_K, h), _heads(context @ W_V, h)
    heads, weights = masks.masked_attention(q, k, v, context_mask[:, None, None, :], mistake)
    return heads.transpose(1, 2).reshape(B, T_q, D) @ W_O, weights


def mistakes(x, context, W_Q, W_K, W_V, W_O, h, context_mask=None):
    """{id: (out, weights)} for every mistake that changes the answer on these inputs (float64 tensors)."""
    right = ref.cross_attention(x, context, W_Q, W_K, W_V, W_O, h, context_mask)
    found = {}
    for mid in MISTAKES:
        got = cross_attention(x, context, W_Q, W_K, W_V, W_O, h, context_mask, mid)
        if got is not None and not (masks._same(got[0], right[0]) and masks._same(got[1], right[1])):
            found[mid] = got
    return found


# ------------------------------------------------------------------ the audit's probes (reference/equivalence.py)
def probes(rng, dtype, scale):
    """[(function name, args, kwargs)] for the audit's equivalence check: T_q != T_k, D_c != D and
    the square case (T_q = T_k, D_c = D, where keys from x would fit), h = 3 and 4, no mask, padding,
    and a batch entry whose context has no real token. Tensors that require grad are differentiated."""
    grad = dtype == "float64"

    def t(*shape, s=1.0):
        return torch.tensor((rng.standard_normal(shape) * scale * s).astype(dtype), requires_grad=grad)

    B, T_q, T_k, D, D_c = 2, 5, 7, 12, 10
    x, c, cs = t(B, T_q, D), t(B, T_k, D_c), t(B, T_q, D)
    Ws = [t(D, D, s=D ** -0.5), t(D_c, D, s=D_c ** -0.5), t(D_c, D, s=D_c ** -0.5), t(D, D, s=D ** -0.5)]
    square = [Ws[0], t(D, D, s=D ** -0.5), t(D, D, s=D ** -0.5), Ws[3]]
    real = torch.arange(T_k)[None, :] < torch.tensor([7, 4])[:, None]
    empty = torch.tensor([[True] * T_k, [False] * T_k])
    return [("cross_attention", [x, c] + Ws + [3], {}), ("cross_attention", [x, c] + Ws + [4, real], {}),
            ("cross_attention", [x, c] + Ws + [3], {"context_mask": empty}),
            ("cross_attention", [x, cs] + square + [3, real[:, :T_q]], {})]
