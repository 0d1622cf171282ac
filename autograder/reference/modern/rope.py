"""Known mistakes of step 4 (rope_angles, apply_rope), applied to the reference in torch float64.

Each mistake is what a student who made that one mistake would get on the same inputs. Most are
the reference on changed arguments: angles with -i/d are the reference's with base ** 0.5
(base ** (-i/d) = (base ** 0.5) ** (-2i/d)); positions counted from 1 are positions + 1; a
rotation the wrong way is the reference at -positions; the interleaved layout is the reference on
x's elements reordered (pair i = elements 2i, 2i+1 brought to i, i + d/2) and put back. Swapped
cos and sin turn by pi/2 - angle, which no argument gives: written out with the reference's angles.

Angles computed in float32 cannot be reproduced digit for digit (every way of computing them
rounds differently), so they are recognised by what they leave: every pair of the result is the
reference's pair turned a little further, by no more than float32's rounding of its angle
(`float32_angles_explain`).

Shapes: positions (T,) integers; angles (T, d/2) float64; x (..., T, d), d even.
"""
import math

import numpy as np
import torch

from solutions.modern_attention import step04_rope as reference

ANGLE_MISTAKES = ("rope-exponent-i", "rope-positions-from-1", "rope-positions-ignored", "rope-freqs-reversed",
                  "rope-base-ignored")
# the mistakes of apply_rope itself, besides the angles' (which it shows through rope_angles)
ROTATION_MISTAKES = ("rope-interleaved", "rope-sign-flipped", "rope-sin-cos-swapped")
DEFAULT_BASE = 10000.0


def _t(a):
    return torch.as_tensor(np.asarray(a))


def angles(positions, head_dim, base=DEFAULT_BASE, mistake=None):
    """rope_angles with the one angle `mistake` applied (float64 numpy, (T, head_dim / 2))."""
    positions = _t(positions)
    if mistake == "rope-exponent-i":
        return reference.rope_angles(positions, head_dim, base ** 0.5).numpy()
    if mistake == "rope-positions-from-1":
        return reference.rope_angles(positions + 1, head_dim, base).numpy()
    if mistake == "rope-positions-ignored":            # arange(T) whatever the positions given
        return reference.rope_angles(torch.arange(len(positions)), head_dim, base).numpy()
    if mistake == "rope-freqs-reversed":               # pair 0 slowest, the last pair fastest
        return reference.rope_angles(positions, head_dim, base).flip(-1).numpy()
    if mistake == "rope-base-ignored":
        return reference.rope_angles(positions, head_dim, DEFAULT_BASE).numpy()
    if mistake is None:
        return reference.rope_angles(positions, head_dim, base).numpy()
    raise ValueError(f"unknown mistake {mistake!r}")


def interleaved_order(d):
    """The permutation that brings elements 2i, 2i + 1 to places i, i + d/2."""
    return torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)])


def _turn(x, theta):
    """x's rotate-half pairs turned by theta (T, d/2), float64."""
    half = x.shape[-1] // 2
    cos, sin = theta.cos(), theta.sin()
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def rope(x, positions, base=DEFAULT_BASE, mistake=None):
    """apply_rope (float64 numpy, x's shape) with the one `mistake` applied: any id of
    ROTATION_MISTAKES or ANGLE_MISTAKES (an apply_rope built on a rope_angles that has it)."""
    x, positions = _t(x).to(torch.float64), _t(positions)
    if mistake == "rope-interleaved":
        order = interleaved_order(x.shape[-1])
        back = torch.argsort(order)
        return reference.apply_rope(x[..., order], positions, base)[..., back].numpy()
    if mistake == "rope-sign-flipped":
        return reference.apply_rope(x, -positions, base).numpy()
    if mistake == "rope-sin-cos-swapped":              # a*sin - b*cos, a*cos + b*sin: a turn by pi/2 - angle
        theta = reference.rope_angles(positions, x.shape[-1], base)
        return _turn(x, math.pi / 2 - theta).numpy()
    if mistake in ANGLE_MISTAKES:
        return _turn(x, torch.from_numpy(angles(positions, x.shape[-1], base, mistake))).numpy()
    if mistake is None:
        return reference.apply_rope(x, positions, base).numpy()
    raise ValueError(f"unknown mistake {mistake!r}")


def rope_mistakes(x, positions, base=DEFAULT_BASE):
    """{id: apply_rope's result with that mistake}, for every mistake that changes something here."""
    right = rope(x, positions, base)
    found = {}
    for mid in ROTATION_MISTAKES + ANGLE_MISTAKES:
        if mid == "rope-base-ignored" and base == DEFAULT_BASE:
            continue
        got = rope(x, positions, base, mid)
        if not np.allclose(got, right, rtol=1e-9, atol=1e-12):
            found[mid] = got
    return found


def angle_mistakes(positions, head_dim, base=DEFAULT_BASE):
    """{id: rope_angles's result with that mistake}, for every mistake that changes something here."""
    right = angles(positions, head_dim, base)
    found = {}
    for mid in ANGLE_MISTAKES:
        if mid == "rope-base-ignored" and base == DEFAULT_BASE:
            continue
        got = angles(positions, head_dim, base, mid)
        if not np.array_equal(got, right):
            found[mid] = got
    return found


# ------------------------------------------------------------------ angles computed in float32
# float32's unit roundoff; a float32 angle is off by a few of its units (the frequency's own
# rounding, through base ** or exp(log(base) ...), times the position, then the product's)
EPS32 = 2.0 ** -24
ANGLE_ULPS = 64          # the largest slip allowed, in units of |angle| * EPS32: exp(-log(base) * 2i/d) in
#                          float32 can be off by |log(base)| units of its result, and the product adds its own
NOISE_ULPS = 16          # and float32's rounding of cos, sin and the products, in units of EPS32 (radians)


def turned_by(got, x, positions, base=DEFAULT_BASE):
    """(slip, theta, lengths): how far each rotate-half pair of `got` stands from the reference's pair
    of x, as an angle (radians, (..., T, d/2)); the reference's angles (T, d/2); the pairs' lengths."""
    x = np.asarray(x, dtype=np.float64)
    right = rope(x, positions, base)
    half = x.shape[-1] // 2
    g = np.asarray(got, dtype=np.float64)
    a1, a2, b1, b2 = right[..., :half], right[..., half:], g[..., :half], g[..., half:]
    slip = np.arctan2(a1 * b2 - a2 * b1, a1 * b1 + a2 * b2)        # the angle from the right pair to got's
    return slip, angles(positions, x.shape[-1], base), np.hypot(x[..., :half], x[..., half:])


def float32_angles_explain(got, x, positions, base=DEFAULT_BASE):
    """Does float32's rounding of the angles explain why `got` (which failed its values check)
    differs from the reference?

    Yes when every pair keeps its length (within float32's rounding) and is turned from the
    reference's by no more than float32 can slip on its angle: ANGLE_ULPS units of |angle|, plus
    the rounding of cos, sin and the products (NOISE_ULPS units of x's size, over the pair's length)."""
    g, x = np.asarray(got, dtype=np.float64), np.asarray(x, dtype=np.float64)
    if g.shape != x.shape or not np.isfinite(g).all():
        return False
    half = x.shape[-1] // 2
    slip, theta, lengths = turned_by(g, x, positions, base)
    size = float(np.sqrt(np.mean(np.square(x)))) or 1.0
    if not np.allclose(np.hypot(g[..., :half], g[..., half:]), lengths, rtol=1e-4, atol=1e-5 * size):
        return False
    allowed = ANGLE_ULPS * EPS32 * np.abs(theta) + NOISE_ULPS * EPS32 * size / np.maximum(lengths, 1e-300)
    return bool(np.all(np.abs(slip) <= allowed) and np.any(slip != 0))


def float32_angles_with(got, x, positions, base=DEFAULT_BASE):
    """The mistakes that explain `got` together with float32 angles: ["rope-angles-float32"] alone,
    or a rotation mistake as well (real code that pairs x[2i] with x[2i + 1], the GPT-J / Meta layout,
    often computes its angles in float32 too), [] when neither explains it. A pair of mistakes whose
    combination matches is named as the pair, not as one of them (nor as none)."""
    if float32_angles_explain(got, x, positions, base):
        return ["rope-angles-float32"]
    g, x = np.asarray(got, dtype=np.float64), np.asarray(x, dtype=np.float64)
    if g.shape != x.shape:
        return []
    order = interleaved_order(x.shape[-1]).numpy()        # undo the interleaving, then test the angles
    if float32_angles_explain(g[..., order], x[..., order], positions, base):
        return ["rope-interleaved", "rope-angles-float32"]
    if float32_angles_explain(g, x, -np.asarray(positions), base):
        return ["rope-sign-flipped", "rope-angles-float32"]
    return []


# ------------------------------------------------------------------ the audit's equivalence probes
def probes(rng, dtype, scale):
    """[(function name, args, kwargs)] for the mutation audit's equivalence check (reference/equivalence.py):
    rope_angles on int64 and int32 positions (0, past 1,000, not consecutive), with the default base and
    another; apply_rope on x of `dtype` (float64 requires grad) scaled by `scale`, 4-D and 2-D, at those
    positions and at position 0."""
    positions = torch.tensor([0, 1, 2, 7, 1000, 4097, 50001])

    def t(shape):
        return torch.tensor((rng.standard_normal(shape) * scale).astype(dtype), requires_grad=dtype == "float64")
    return [("rope_angles", [positions, 12], {}), ("rope_angles", [positions.to(torch.int32), 8, 500.0], {}),
            ("apply_rope", [t((2, 3, 7, 12)), positions], {}), ("apply_rope", [t((7, 8)), positions, 500.0], {}),
            ("apply_rope", [t((2, 7, 12)), torch.zeros(7, dtype=torch.int64)], {})]
