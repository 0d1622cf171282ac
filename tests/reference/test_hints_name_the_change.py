"""Each catalogue hint is checked against the variant it describes (issue 28, "some hints point at the wrong
cause": a wrong log-sum-exp told to cover every key exactly once, a permutation told to mask later keys).

A variant (reference/variants.py, reference/modern/) is the reference with one mistake applied: what it
changes is what the hint must tell the student to put back. `CHANGED` says, per misconception, what its
variant changes (in words a reader can check against the variant's code) and the words the hint must
therefore contain, in every library the mistake's steps use (numpy, torch). The Chinese hint keeps the
code in those words (identifiers, expressions), so a translation cannot drop the fix.

The variants' own inputs: every id of the table is produced, as different from the reference, by its
module's `mistakes` functions on seeded inputs here (those functions keep only what changes something),
so each hint is checked against a variant that is wrong where the reference, the hint's fix, is right.
"""
import math
import re

import numpy as np
import pytest
import torch
from babel.messages.pofile import read_po

from autograder import contract
from autograder.reference import misconceptions, variants
from autograder.reference.modern import cross_attention, flash_attention, grouped_query, kv_cache, masks, rope
from conftest import ROOT

# id: (what the variant changes, words its hint must contain; {framework: words} where the libraries differ)
CHANGED = {
    "scale-multiplied": ("the scores times sqrt(d_k)", ("divide", "sqrt(d_k)")),
    "scale-missing": ("no factor on the scores", ("divide", "sqrt(d_k)")),
    "scale-by-d": ("the scores over d_k", ("sqrt(d_k)",)),
    "scale-by-d-model": ("the scores over sqrt(d_model)", ("sqrt(d_k)", "d_model // num_heads")),
    "softmax-wrong-axis": ("the softmax over axis -2", {"numpy": ("axis", "-1"), "torch": ("dim=-1",)}),
    "softmax-unstable": ("exp() of the raw scores", {"numpy": ("max", "before", "exp"), "torch": ("amax", "exp")}),
    "softmax-global-max": ("the whole array's max subtracted", {"numpy": ("max", "axis=axis"),
                                                                "torch": ("amax(dim=-1",)}),
    "scores-transposed": ("K Q^T", ("Q @ K^T",)),
    "weights-transposed": ("weights^T V", ("weights @ V",)),
    "heads-reshape-no-transpose": ("(B, T, D) reshaped to (B, h, T, hd)", ("(B, T, h, hd)", "transpose(1, 2)")),
    "heads-merge-no-transpose": ("(B, h, T, hd) reshaped to (B, T, D)", ("transpose(1, 2)", "reshape(B, T, D)")),
    "missing-output-projection": ("no W_O", ("W_O",)),
    "projection-swapped": ("Q and V trade matrices", ("weight", "projection")),
    "mask-after-softmax": ("the mask applied to the weights", ("before torch.softmax", "-inf")),
    "mask-fill-zero": ("blocked scores 0", ("-inf", "not masked_fill(~mask, 0)")),
    "mask-fill-finite": ("blocked scores -1e9", ("-inf", "weights.masked_fill(~mask, 0.0)")),
    "masked-row-nan": ("a row with no allowed key left 0 / 0", ("weights.masked_fill(~mask, 0.0)", "l > 0",
                                                                "lse -inf")),
    "mask-ignored": ("no mask", ("scores = scores.masked_fill", "mask argument")),
    "mask-true-blocked": ("True read as blocked", ("~mask", "True")),
    "causal-upper-triangle": ("triu for tril", ("tril",)),
    "causal-aligned-at-start": ("queries at positions 0..T_q-1", ("T_k - T_q",)),
    "causal-excludes-diagonal": ("j < i", ("<=",)),
    "padding-off-by-one": ("<= lengths", ("< lengths",)),
    "key-padding-mask-convention": ("~context_mask", ("~context_mask",)),
    "kv-from-x": ("keys and values from x", ("context", "W_K", "W_V")),
    "gqa-heads-tiled": ("head i reads key/value head i % h_kv", ("repeat_interleave",)),
    "gqa-kv-layout": ("the key/value columns strided", ("(B, T, num_kv_heads, head_dim)",)),
    "causal-mask-missing": ("no causal mask, with or without a cache", ("-inf", "tril", "T_k - T_q")),
    "causal-flag-ignored": ("the mask with causal=False", ("if causal",)),
    "gqa-scale-by-kv-width": ("the scores over sqrt(h_kv * hd)", ("sqrt(head_dim)",)),
    "rope-interleaved": ("pairs (2i, 2i + 1)", ("head_dim // 2",)),
    "rope-sign-flipped": ("a turn by -angle", ("x1 * cos - x2 * sin",)),
    "rope-sin-cos-swapped": ("cos and sin exchanged", ("cos = angles.cos()", "sin = angles.sin()")),
    "rope-exponent-i": ("base ** (-i / d)", ("-2 * i / head_dim",)),
    "rope-positions-from-1": ("positions + 1", ("+ 1",)),
    "rope-positions-ignored": ("arange(T) for the positions", ("positions",)),
    "rope-freqs-reversed": ("the frequencies reversed", ("increasing",)),
    "rope-base-ignored": ("base 10000 always", ("base",)),
    "kv-cache-no-causal-new": ("no mask with a cache", ("T_k - T_new",)),
    "kv-cache-wrong-axis": ("cat along another dim", ("dim=-2",)),
    "online-no-rescale": ("l and acc not rescaled by exp(m - m_new)", ("correction", "torch.exp(m - m_new)")),
    "online-no-final-division": ("out = acc", ("acc / l",)),
    "online-max-not-kept": ("m never assigned", ("m = m_new",)),
    "lse-without-max": ("lse = log(l)", ("m + torch.log(l)",)),
    "last-block-dropped": ("range over whole blocks", ("range(0, T_k, block_size)",)),
    # the decoder, steps 4-6 (reference/decoder/)
    "decoder-positions-restart": ("arange(T) at every call", ("len(cache[0]) + torch.arange(T)",)),
    "decoder-padding-unmasked": ("no key_mask given to the blocks", ("attention_mask", "key_mask")),
    "decoder-final-norm-missing": ("the head on the last block's output", ("self.lm_head(self.norm(x))",)),
    "sampling-no-temperature": ("softmax(logits)", ("logits / temperature",)),
    "top-p-wrong-side": ("drop where cumsum < top_p", ("probs.cumsum(-1) - probs >= top_p",)),
    "top-p-crossing-dropped": ("drop where cumsum > top_p", ("cumsum - probs >= top_p",)),
    "generate-padding-ignored": ("model(..., cache) without the mask", ("model(step_input, cache, mask)",)),
    "generate-eos-not-kept": ("finished rows go on", ("torch.where(done, eos_id, next)",)),
    "loss-not-shifted": ("logits against tokens", ("logits[:, :-1]", "tokens[:, 1:]")),
    "loss-shifted-wrong-way": ("logits[:, 1:] against tokens[:, :-1]", ("logits[:, :-1]", "tokens[:, 1:]")),
    "loss-padding-counted": ("the mask ignored", ("ignore_index=-100",)),
    "train-step-grad-not-zeroed": ("no zero_grad", ("optimizer.zero_grad()",)),
    "train-step-loss-after": ("the loss after the step", ("return loss.item()",)),
}
# the catalogue's ids named from counts or traces, not from a variant's values
NO_VARIANT = {"broadcast-weighted-sum", "detached-graph", "forbidden-api", "kv-cache-reprojects", "not-vectorized",
              "rope-angles-float32", "tiled-full-scores",
              "decoder-head-not-tied", "generate-without-cache"}       # the decoder's: parameter names, counts
# the third assignment, decoder (issue 31), steps 1-3: reference/decoder/
CHANGED.update({
    "rmsnorm-eps-outside-root": ("eps added after the root", ("rsqrt", "+ self.eps")),
    "rmsnorm-half-precision": ("a float16 input normalised in float16", ("x.float()", ".to(dtype)")),
    "swiglu-gate-swapped": ("silu on up_proj(x)", ("F.silu(self.gate_proj(x))",)),
    "swiglu-wrong-activation": ("ReLU, GELU or the sigmoid for SiLU", ("F.silu",)),
    "block-residual-around-norm": ("norm(x) + attention(norm(x))", ("h = x + ",)),
    "block-post-norm": ("norm(x + attention(x))", ("self.attn_norm(x)", "self.ffn_norm(h)")),
    "rope-on-values": ("v turned too", ("rope(k, positions)", "leave v")),
    "rope-position-ignores-cache": ("arange(T) at every call", ("len(cache)", "past + torch.arange(T")),
    "block-causal-aligned-at-start": ("new query i at position i", ("T_k - T",)),
    "rope-keys-rotated-twice": ("k_all turned again", ("cache.append(k, v)", "as it is")),
    "cache-all-query-heads": ("keys repeated before the cache", ("num_kv_heads", "repeat_interleave")),
    "cache-keys-before-rope": ("keys stored before RoPE", ("rope(k, positions) first",)),
})


def _frameworks(mid):
    return sorted({contract.step_for_stem(stem).framework for stem in misconceptions.CATALOGUE[mid].stems})


def _words(mid, framework):
    words = CHANGED[mid][1]
    return words[framework] if isinstance(words, dict) else words


def test_every_catalogued_mistake_is_in_the_table_or_named_without_a_variant():
    assert set(CHANGED) | NO_VARIANT == set(misconceptions.CATALOGUE)
    assert not set(CHANGED) & NO_VARIANT


@pytest.mark.parametrize("mid", sorted(CHANGED))
def test_the_hint_names_what_the_variant_changes(mid):
    for framework in _frameworks(mid):
        hint = misconceptions.CATALOGUE[mid].hint_for(framework)
        missing = [w for w in _words(mid, framework) if w.lower() not in hint.lower()]
        assert not missing, (f"{mid} ({framework}): its variant changes {CHANGED[mid][0]}, and its hint does not "
                             f"say {missing}: {hint!r}")


def _chinese():
    with open(ROOT / "autograder/locale/zh/LC_MESSAGES/grader.po", "rb") as f:
        return {m.id: m.string for m in read_po(f) if m.id}


CODE = re.compile(r"[()=_.<>/*~@\[\]\d^-]")       # a token that is code, not English: kept as is in Chinese


@pytest.mark.parametrize("mid", sorted(CHANGED))
def test_the_chinese_hint_keeps_the_fix(mid):
    zh = _chinese()
    for framework in _frameworks(mid):
        hint = misconceptions.CATALOGUE[mid].hint_for(framework)
        translated = zh.get(hint, "")
        assert translated, f"{mid}: no Chinese for its {framework} hint"
        code = [token for w in _words(mid, framework) for token in w.split() if CODE.search(token)]
        missing = [token for token in code if token not in translated]
        assert not missing, f"{mid} ({framework}): the Chinese hint lost {missing}: {translated!r}"


# ------------------------------------------------------------------ each variant wrong where the reference is right
def _t(rng, *shape):
    return torch.tensor(rng.standard_normal(shape), dtype=torch.float64)


def _produced():
    """{id} of every variant that differs from the reference on these seeded inputs, from the variant
    modules' own functions (each keeps a mistake only where it changes the answer)."""
    rng = np.random.default_rng(28)
    found = set()
    Q, K, V = rng.standard_normal((3, 2, 4, 3))
    found |= {m for m, (out, w) in variants.attention_mistakes(Q, K, V, 3, d_model=6).items()
              if not np.allclose(out, variants.attend(Q, K, V, 1 / math.sqrt(3))[0])}
    x = rng.standard_normal((2, 4, 6))
    Ws = rng.standard_normal((4, 6, 6))
    right = variants.multi_head(x, *Ws, 2)[0]
    found |= {m for m in variants.MULTI_HEAD_MISTAKES if not np.allclose(variants.multi_head(x, *Ws, 2, mistake=m)[0], right)}
    big = rng.standard_normal((3, 5)) * 1000.0
    big[1] -= 5000.0
    with np.errstate(all="ignore"):
        for mid, fn in (("softmax-unstable", variants.naive_softmax), ("softmax-global-max", variants.global_max_softmax)):
            if not np.allclose(fn(big), variants.softmax(big), equal_nan=False):
                found.add(mid)
    # 01_masks: a short query side (alignment), a row with no allowed key
    for mid in masks.CAUSAL_MISTAKES:
        if not torch.equal(masks.causal_mask(3, 5, mistake=mid), masks.causal_mask(3, 5)):
            found.add(mid)
    lengths = torch.tensor([2, 4])
    for mid in masks.PADDING_MISTAKES:
        if not torch.equal(masks.padding_mask(lengths, 5, mistake=mid), masks.padding_mask(lengths, 5)):
            found.add(mid)
    q, k, v = _t(rng, 2, 3, 4), _t(rng, 2, 5, 4), _t(rng, 2, 5, 4)
    mask = masks.causal_mask(3, 5).clone()
    mask[1] = False                                          # query 1 has no allowed key
    found |= set(masks.attention_mistakes(q, k, v, mask))
    # 02_cross_attention: a context with no real token in the second sequence
    xq, ctx = _t(rng, 2, 4, 6), _t(rng, 2, 4, 6)         # T_q = T_k: keys from x fit the mask too
    W = [_t(rng, 6, 6) for _ in range(4)]
    cmask = torch.tensor([[True, True, False, True], [False, False, False, False]])
    found |= set(cross_attention.mistakes(xq, ctx, *W, 2, cmask))
    # 03_grouped_query: groups of 3 (h = 6, h_kv = 2), causal and not
    xg = _t(rng, 2, 4, 12)
    Wg = [_t(rng, 12, 12), _t(rng, 12, 4), _t(rng, 12, 4), _t(rng, 12, 12)]
    for causal in (True, False):
        found |= set(grouped_query.mistakes(xg, *Wg, 6, 2, causal))
    # 04_rope: positions that do not start at 0, a base of its own
    xr, positions = rng.standard_normal((2, 3, 8)), np.array([5, 9, 10])
    found |= set(rope.rope_mistakes(xr, positions, base=500.0)) | set(rope.angle_mistakes(positions, 8, base=500.0))
    # 05_kv_cache: a prefill of 3 tokens, then 2 at once
    xk = rng.standard_normal((2, 5, 8))
    params = {f"{n}.weight": rng.standard_normal((8, 8)) for n in ("q_proj", "k_proj", "v_proj", "out_proj")}
    found |= set(kv_cache.decode_mistakes(params, xk, 2, [3, 2]))
    pairs = [(rng.standard_normal((2, 2, n, 4)), rng.standard_normal((2, 2, n, 4))) for n in (2, 2)]     # the same length: a wrong axis fits
    found |= {m.split(":")[0] for m in kv_cache.append_mistakes(pairs)}
    # 06_flash_attention: blocks of 3 over 7 keys, causal with T_q < T_k, and more queries than keys (no key)
    qf, kf, vf = _t(rng, 2, 4, 4), _t(rng, 2, 7, 4), _t(rng, 2, 7, 4)
    found |= set(flash_attention.named(flash_attention.mistakes(qf, kf, vf, 3, True)))
    found |= set(flash_attention.named(flash_attention.mistakes(_t(rng, 1, 6, 4), kf[:1, :4], vf[:1, :4], 3, True)))
    # decoder 01-03: a norm where eps matters, float16 above 256, a block with a prefill of 3 then 2 and 1
    from autograder.reference.decoder import decoder_block, rmsnorm as dec_rmsnorm, swiglu as dec_swiglu
    found |= set(dec_rmsnorm.mistakes(_t(rng, 2, 8) * 1e-3, torch.ones(8, dtype=torch.float64)))
    xh, ones = (_t(rng, 2, 8) * 400).half(), torch.ones(8).half()
    if not np.array_equal(dec_rmsnorm.norm(xh, ones), dec_rmsnorm.norm(xh, ones, mistake="rmsnorm-half-precision")):
        found.add("rmsnorm-half-precision")
    ffn = {"gate_proj.weight": _t(rng, 10, 6), "up_proj.weight": _t(rng, 10, 6), "down_proj.weight": _t(rng, 6, 10)}
    xf = _t(rng, 2, 3, 6)
    found |= {m for m, ways in dec_swiglu.mistakes(ffn, xf).items()
              if all(not np.allclose(w[0], dec_swiglu.ffn(ffn, xf).numpy()) for w in ways)}
    shapes = {"attn_norm.weight": (8,), "q_proj.weight": (8, 8), "k_proj.weight": (4, 8), "v_proj.weight": (4, 8),
              "o_proj.weight": (8, 8), "ffn_norm.weight": (8,), "ffn.gate_proj.weight": (12, 8),
              "ffn.up_proj.weight": (12, 8), "ffn.down_proj.weight": (8, 12)}
    block = {n: _t(rng, *shape) for n, shape in shapes.items()}
    xb = _t(rng, 2, 6, 8)
    found |= set(decoder_block.block_mistakes(block, xb, 4, 2, [3, 2, 1]))
    right = decoder_block.stored_keys(block, xb, 4, 2, [3, 2, 1])
    found |= {m for m in decoder_block.STORED
              if any(a.shape != b.shape or not np.allclose(a, b)
                     for a, b in zip(decoder_block.stored_keys(block, xb, 4, 2, [3, 2, 1], m), right))}
    # the decoder, steps 4-6: a small model, a prefill of 3 then 2 tokens, a left-padded row
    from autograder.reference.decoder import generation, model, training
    config = dict(vocab_size=11, dim=8, num_layers=1, num_heads=2, num_kv_heads=1, hidden_dim=12)
    shapes = {n: tuple(p.shape) for n, p in model.ref.DecoderLM(**config).named_parameters()}
    weights = {n: rng.standard_normal(s) * (0.1 if len(s) == 1 else 0.5) + (len(s) == 1) for n, s in shapes.items()}
    tokens = rng.integers(0, 11, (2, 5))
    padded = np.ones((2, 5), dtype=bool)
    padded[1, :2] = False
    found |= set(model.mistakes(weights, config, tokens, [3, 2])) | set(model.mistakes(weights, config, tokens,
                                                                                         mask=padded))
    logits = rng.standard_normal((64, 10)) * 2
    found |= set(generation.sampling_mistakes(logits, 0.8, top_p=0.6, seed=1))
    # generate on weights of its own, large enough that the two rows generate different tokens (on the
    # weights above both rows generate the same ones: an eos_id then ends both at once, as the fix does)
    g_rng = np.random.default_rng(31)
    g_weights = {n: g_rng.standard_normal(s) * (0.1 if len(s) == 1 else 1.0) + (len(s) == 1) for n, s in shapes.items()}
    free = generation.generate(g_weights, config, tokens, max_new_tokens=6)
    assert not np.array_equal(free[0, 5:], free[1, 5:])
    for mid, w, options in [("generate-padding-ignored", weights, dict(mask=padded, max_new_tokens=4))] + [
            ("generate-eos-not-kept", g_weights, dict(max_new_tokens=6, eos_id=int(e)))
            for e in sorted(set(free[:, 5:].ravel()))]:
        got = generation.generate(w, config, tokens, mistake=mid, **options)
        right = generation.generate(w, config, tokens, **options)
        if got.shape != right.shape or not np.array_equal(got, right):
            found.add(mid)
    lg, mask = rng.standard_normal((2, 5, 11)), padded
    found |= {m for m in training.LOSS_MISTAKES if training.loss(lg, tokens, mask, m) != training.loss(lg, tokens, mask)}
    batches = [rng.integers(0, 11, (2, 5)) for _ in range(2)]
    right = training.train(weights, config, batches, 0.1)
    for m in training.STEP_MISTAKES:                       # the losses returned, or the parameters after
        losses, after = training.train(weights, config, batches, 0.1, m)
        if not np.allclose(losses, right[0]) or any(not np.allclose(after[n], right[1][n]) for n in after):
            found.add(m)
    return found


def test_every_variant_in_the_table_differs_from_its_fix_on_seeded_inputs():
    """Each hint's fix (the reference) gives another answer than the variant it describes, on inputs built
    for it: the table's words are checked against mistakes that show."""
    produced = _produced()
    assert set(CHANGED) - produced == set(), sorted(set(CHANGED) - produced)
