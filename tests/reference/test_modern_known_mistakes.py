"""The known mistakes of modern_attention steps 3 and 4 (autograder/reference/modern/), against code
written here another way: what the suites name a student's values by must be what that mistake gives.

The catalogue test grades each mistake once, in one style, through the grader; this one checks the
variants themselves at the suites' own sizes (a group size different from the number of key/value
heads), and the one mistake recognised by a bound rather than by a value: angles computed in
float32, however they were computed, and nothing else.
"""
import math

import numpy as np
import pytest
import torch

from autograder.reference.modern import grouped_query, rope

B, T, D, H = 2, 5, 24, 6                                  # suites/step03_grouped_query.py's sizes
POSITIONS, HD = np.array([0, 1, 2, 7, 1000, 4097, 50001]), 12        # and step04_rope.py's


def _per_head(x, W_Q, W_K, W_V, W_O, h_kv, kv_of, columns):
    """Causal grouped-query attention one head at a time: query head i reads key/value head kv_of(i),
    whose columns of W_K and W_V are columns(j)."""
    hd = D // H
    blocked = ~torch.ones(T, T, dtype=torch.bool).tril()
    outs, weights = [], []
    for i in range(H):
        cols = columns(kv_of(i))
        s = (x @ W_Q[:, i * hd:(i + 1) * hd]) @ (x @ W_K[:, cols]).transpose(-1, -2) / math.sqrt(hd)
        w = torch.softmax(s.masked_fill(blocked, float("-inf")), dim=-1)
        outs.append(w @ (x @ W_V[:, cols]))
        weights.append(w)
    return torch.cat(outs, -1) @ W_O, torch.stack(weights, 1)


@pytest.mark.parametrize("h_kv", [2, 3])
def test_grouping_mistakes_are_the_models_they_name(h_kv):
    g = torch.Generator().manual_seed(h_kv)
    x = torch.randn(B, T, D, dtype=torch.float64, generator=g)
    W_Q, W_O = (torch.randn(D, D, dtype=torch.float64, generator=g) / D ** 0.5 for _ in range(2))
    W_K, W_V = (torch.randn(D, h_kv * D // H, dtype=torch.float64, generator=g) / D ** 0.5 for _ in range(2))
    hd, group = D // H, H // h_kv
    block = lambda j: torch.arange(j * hd, (j + 1) * hd)                 # noqa: E731  the contract's columns
    cases = {None: (lambda i: i // group, block),
             "gqa-heads-tiled": (lambda i: i % h_kv, block),                # repeat: 0, 1, 0, 1, ...
             "gqa-kv-layout": (lambda i: i // group, lambda j: torch.arange(j, h_kv * hd, h_kv))}
    for mistake, (kv_of, columns) in cases.items():
        got = grouped_query.grouped_query(x, W_Q, W_K, W_V, W_O, H, h_kv, mistake=mistake)
        expected = _per_head(x, W_Q, W_K, W_V, W_O, h_kv, kv_of, columns)
        assert all(torch.allclose(a, b, rtol=1e-12, atol=1e-12) for a, b in zip(got, expected)), mistake
    # every mistake the suite can name differs from the right answer here
    right = [a.numpy() for a in grouped_query.grouped_query(x, W_Q, W_K, W_V, W_O, H, h_kv)]
    for mid, (out, w) in grouped_query.mistakes(x, W_Q, W_K, W_V, W_O, H, h_kv).items():
        assert not np.allclose(out, right[0], rtol=1e-3, atol=1e-3), mid


def _float32_angles(how, positions, d):
    p, i = torch.as_tensor(positions).float(), torch.arange(0, d, 2).float()
    freqs = {"1 / base ** (2i/d)": 1.0 / 10000.0 ** (i / d), "base ** (-2i/d)": 10000.0 ** (-i / d),
             "exp(-log(base) 2i/d)": torch.exp(-math.log(10000.0) * i / d)}[how]
    return p[:, None] * freqs[None, :]


def _turn(x, theta):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * theta.cos() - x2 * theta.sin(), x2 * theta.cos() + x1 * theta.sin()], dim=-1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_float32_angles_are_recognised_and_nothing_else(dtype):
    positions, x = POSITIONS, torch.randn(2, 3, len(POSITIONS), HD, generator=torch.Generator().manual_seed(0))
    x = x.to(dtype)
    x64 = x.double().numpy()
    for how in ("1 / base ** (2i/d)", "exp(-log(base) 2i/d)", "base ** (-2i/d)"):
        got = _turn(x, _float32_angles(how, positions, HD).to(dtype)).double().numpy()
        assert not np.allclose(got, rope.rope(x64, positions), rtol=1e-5, atol=1e-6), how     # the values show it
        assert rope.float32_angles_explain(got, x64, positions), how
    for mid, got in rope.rope_mistakes(x64, positions).items():
        assert not rope.float32_angles_explain(got, x64, positions), mid


def _interleaved_turn(x, theta):
    """Real-world RoPE (GPT-J, Meta's LLaMA): pair i is (x[2i], x[2i + 1])."""
    a, b = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = a * theta.cos() - b * theta.sin()
    out[..., 1::2] = b * theta.cos() + a * theta.sin()
    return out


def test_two_mistakes_at_once_are_named_as_both_and_each_fix_leaves_the_other():
    """Interleaved pairs AND float32 angles: named as both. Each hint's fix applied alone leaves the other
    mistake, named alone; both fixes give the reference."""
    x = torch.randn(2, 3, len(POSITIONS), HD, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    x64 = x.numpy()
    angles32 = _float32_angles("base ** (-2i/d)", POSITIONS, HD).double()
    angles64 = torch.from_numpy(rope.angles(POSITIONS, HD))
    both = _interleaved_turn(x, angles32).numpy()
    assert rope.float32_angles_with(both, x64, POSITIONS) == ["rope-interleaved", "rope-angles-float32"]
    # neither single mistake explains the pair (the suite's variants and the float32 bound alone)
    assert not np.allclose(both, rope.rope(x64, POSITIONS, mistake="rope-interleaved"), rtol=1e-5, atol=1e-6)
    assert not rope.float32_angles_explain(both, x64, POSITIONS)
    # the float32 hint's fix (float64 angles): the interleaved variant exactly, which the suite names by value
    fixed_angles = _interleaved_turn(x, angles64).numpy()
    assert np.allclose(fixed_angles, rope.rope(x64, POSITIONS, mistake="rope-interleaved"), rtol=1e-12, atol=1e-12)
    assert rope.float32_angles_with(fixed_angles, x64, POSITIONS) == []
    # the interleaving hint's fix (rotate-half pairs): float32 angles alone
    fixed_pairs = _turn(x, angles32).numpy()
    assert rope.float32_angles_with(fixed_pairs, x64, POSITIONS) == ["rope-angles-float32"]
    # both fixes: the reference
    assert np.allclose(_turn(x, angles64).numpy(), rope.rope(x64, POSITIONS), rtol=1e-12, atol=1e-12)
