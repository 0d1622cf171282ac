"""Hidden suite, modern_attention step 4: rope_angles and apply_rope (torch). 10 points.

Inputs are chosen so that every mistake shows: head_dim 12 (6 pairs) differs from T = 7; the
positions are neither 0..T-1 nor consecutive (a code that ignores them and uses arange(T) shows),
start at 0 (positions counted from 1 show) and run past 1,000 up to 50,001, where float32's
rounding of an angle is about 2e-5 radian (at 1,000) to 1e-3 (at 50,001): angles computed in the
input's dtype show in float32, while float64 angles cast to float32 at the end (the contract)
stay within float32's own rounding. A second base (500) catches a base that is ignored.
"""
import math

import numpy as np
import torch

from autograder.checks import attention, complexity, gradients
from autograder.checks.expect import (CheckFailed, check, example, expect_array, expect_close, expect_dtype,
                                      expect_full_precision, expect_shape, fail, gpu_usable, precision_lost,
                                      show_example)
from autograder.checks.inputs import randn, rounded
from autograder.checks.memo import Remembering
from autograder.i18n import _
from autograder.reference.modern import rope as _known
from autograder.sandbox.protocol import Returned
from solutions.modern_attention import step04_rope

known = Remembering(_known)     # the references' answers, remembered for the next submission

STEP = "04_rope"
HD = 12
POSITIONS = np.array([0, 1, 2, 7, 1000, 4097, 50001], dtype=np.int64)     # T = 7
T = len(POSITIONS)
# positions that do not start at 0 (new tokens after a cache of 37): an apply_rope that numbers its
# tokens 0..T-1 itself, ignoring `positions`, is right on POSITIONS' first three and wrong here
OFFSET_POSITIONS = np.arange(37, 37 + T, dtype=np.int64)
LEADING = (2, 3)                                                          # x: (B, h, T, head_dim)
OTHER_BASE = 500.0
# angles: any float64 way of computing them (base ** (-2i/d), exp(-log(base) 2i/d), 1 / base ** ...)
# agrees to a few units of float64's last digit; float32 anywhere on the way is off by about 1e-7
# relative. Compared this tightly, float32 angles fail, whatever float64 code gets them.
ANGLE_LEVEL = (1e-12, 1e-14)


# ------------------------------------------------------------------ references (float64)
def _angles_ref(positions, head_dim, base=known.DEFAULT_BASE):
    return known.angles(positions, head_dim, base)


def _rope_ref(x, positions, base=known.DEFAULT_BASE):
    return known.rope(x, positions, base)


def _x(key, shape=LEADING + (T, HD), scale=1.0):
    return randn((STEP, key, "x"), shape, scale)


# ------------------------------------------------------------------ calling the student
def _angles_what(positions, head_dim, base=None):
    shown = f"rope_angles(positions={positions.tolist()}, head_dim={head_dim}"
    return shown + ("" if base is None else f", base={base:g}") + ")"


def _rope_what(x, positions, base=None):
    shown = f"apply_rope(x of shape {tuple(x.shape)}, positions={positions.tolist()}"
    return shown + ("" if base is None else f", base={base:g}") + ")"


def _angles(student, positions, head_dim, base=None):
    what = _angles_what(positions, head_dim, base)
    args = (positions, head_dim) + (() if base is None else (base,))
    got = expect_array(student.call("rope_angles", *args), what, "torch")
    t, half = len(positions), head_dim // 2
    if got.shape == (t, head_dim):
        fail(_("{what} has shape {got}, (T, head_dim): return one angle per pair, (T, head_dim // 2) = {shape}. "
               "apply_rope uses each angle for both numbers of its pair.", what=what, got=got.shape, shape=(t, half)))
    expect_shape(got, (t, half), what)
    return got, what


def _rope(student, x, positions, base=None, device=None):
    what = _rope_what(x, positions, base)
    positions = positions if device is None else attention.Placed(positions, device)     # integers: never cast
    args = (x, positions) + (() if base is None else (base,))
    got = expect_array(attention.placing(student).call("apply_rope", *args), what, "torch", device=device)
    expect_shape(got, x.shape, what)
    return got, what


def _expect_rope(got, what, x64, positions, dtype, base=known.DEFAULT_BASE, level="op", name=True):
    """apply_rope's values against the reference; a known mistake that explains them is named."""
    mistakes = known.rope_mistakes(x64, positions, base) if name else {}
    try:
        expect_close(got, _rope_ref(x64, positions, base), what, dtype, level, variants=mistakes)
    except CheckFailed as failure:
        if name and not failure.misconceptions:
            both = known.float32_angles_with(got.array, x64, positions, base)
            if both:              # float32 angles alone, or with a rotation mistake: every mistake is named
                fail(failure.message, both)
        raise


# ------------------------------------------------------------------ rope_angles
@check("4.1", points=1, kind="shape")
def test_angles_shape(student):
    """rope_angles returns float64 (T, head_dim / 2) for int64 and int32 positions"""
    for positions in (POSITIONS, POSITIONS.astype(np.int32)):
        got, what = _angles(student, positions, HD)
        if got.dtype == "float64":
            continue
        exact = _angles_ref(positions, HD)
        float32 = (got.dtype in ("float32", "float16", "bfloat16")
                   and np.allclose(got.array, exact, rtol=known.ANGLE_ULPS * known.EPS32, atol=0))
        fail(_("{what} has dtype {dtype}; the angles must be float64 whatever the positions' dtype: they reach "
               "thousands of radians, where float32's 7 digits lose the fractions that cos and sin depend on. Make "
               "the pair indices with dtype=torch.float64 and convert the positions with .to(torch.float64).",
               what=what, dtype=got.dtype), ["rope-angles-float32"] if float32 else [])


@check("4.2", points=2, kind="numbers")
def test_angles_values(student):
    """rope_angles values: positions[t] * base ** (-2i / head_dim), float64, default base and base=500, head_dim 12 and 8"""
    for head_dim, base in ((HD, None), (8, OTHER_BASE)):
        got, what = _angles(student, POSITIONS, head_dim, base)
        b = known.DEFAULT_BASE if base is None else base
        try:
            expect_close(got, _angles_ref(POSITIONS, head_dim, b), what, "float64", ANGLE_LEVEL,
                         variants=known.angle_mistakes(POSITIONS, head_dim, b))
        except CheckFailed as failure:
            if failure.misconceptions or not np.allclose(got.array, _angles_ref(POSITIONS, head_dim, b),
                                                         rtol=known.ANGLE_ULPS * known.EPS32, atol=0):
                raise
            fail(failure.message + "\n" + _("The angles agree with the expected ones to about float32's 7 digits: "
                                            "part of their computation ran in float32 (torch.arange without "
                                            "dtype=torch.float64, .float(), a float32 tensor of positions)."),
                 ["rope-angles-float32"])


# ------------------------------------------------------------------ apply_rope
@check("4.3", points=2, kind="numbers")
def test_rope_float64(student, request):
    """apply_rope values, float64: x (2, 3, 7, 12) with the default base, x (7, 8) with base=500, and x (2, 7, 12) at positions that do not start at 0 (a chunk after a cache); dtype kept"""
    for x, base, positions in ((_x("4.3"), None, POSITIONS), (_x("4.3 2-D", (T, 8)), OTHER_BASE, POSITIONS),
                               (_x("4.3 offset", (2, T, HD)), None, OFFSET_POSITIONS)):
        got, what = _rope(student, x, positions, base)
        expect_dtype(request, got, "float64", what, "torch")
        _expect_rope(got, what, x, positions, "float64", known.DEFAULT_BASE if base is None else base)
        args = (x, positions) + (() if base is None else (base,))
        expect_full_precision(student, student.call_request("apply_rope", *args), "apply_rope(x, positions)")


@check("4.4", points=1, kind="numbers")
def test_rope_float32(student, request):
    """apply_rope values, float32 (dtype kept): positions up to 50,001, where float32 angles are off by up to about 1e-3 radian"""
    x32, x64 = rounded(_x("4.4"), "float32")
    got, what = _rope(student, x32, POSITIONS)
    what = _("{what} in {dtype}", what=what, dtype="float32")
    expect_dtype(request, got, "float32", what, "torch")
    _expect_rope(got, what, x64, POSITIONS, "float32")


@check("4.5", points=1, kind="property")
def test_rotation(student):
    """A rotation: position 0 leaves x unchanged, and every pair (x[i], x[i + head_dim/2]) keeps its length at every position"""
    x = _x("4.5")
    zeros = np.zeros(T, dtype=np.int64)
    got, what = _rope(student, x, zeros)
    problem = attention.differs(got.array, x, level="op")
    if problem:
        fail(_("{what}: at position 0 the rotation is by angle 0 (cos 0 = 1, sin 0 = 0), so x comes back unchanged; "
               "yours changed it ({problem}).", what=what, problem=problem), _named(got, x, zeros))
    got, what = _rope(student, x, POSITIONS)
    half = HD // 2
    lengths = lambda a: np.hypot(a[..., :half], a[..., half:])      # noqa: E731  pair i = (a[i], a[i + half])
    problem = attention.differs(lengths(got.array), lengths(x), level="op")
    if problem:
        fail(_("{what} changed the length of a pair (x[i], x[i + head_dim / 2]) ({problem}): a rotation keeps it. "
               "The first half is x1 * cos - x2 * sin, the second x2 * cos + x1 * sin, with "
               "x1 = x[..., :head_dim // 2] and x2 = x[..., head_dim // 2:].", what=what, problem=problem),
             _named(got, x, POSITIONS))


def _named(got, x, positions):
    """The known mistakes the student's values match (as _expect_rope names them), for a property's message."""
    try:
        _expect_rope(got, "", x, positions, "float64")
    except CheckFailed as failure:
        return failure.misconceptions
    return []


RELATIVE = np.array([0, 3, 10, 1000, 1003], dtype=np.int64)
SHIFT = 4093


@check("4.6", points=1, kind="property")
def test_relative(student):
    """Relative positions: the scores q_m . k_n of turned queries and keys stay the same when every position moves by 4,093"""
    q, k = _x("4.6 q", (len(RELATIVE), HD)), _x("4.6 k", (len(RELATIVE), HD))
    scores = []
    for positions in (RELATIVE, RELATIVE + SHIFT):
        q_turned = _rope(student, q, positions)[0].array
        k_turned = _rope(student, k, positions)[0].array
        with np.errstate(all="ignore"):        # a wrong result may hold NaN or inf: told, not warned
            scores.append(q_turned @ k_turned.T)
    problem = attention.differs(scores[1], scores[0])
    if problem:
        fail(_("apply_rope: the scores q_m . k_n of queries and keys at positions {positions} changed when every "
               "position moved by {shift} ({problem}). Turning q by m and k by n must leave q_m . k_n depending on "
               "m - n only: turn each pair by the same angle in q and k, the angle of its position.",
               positions=RELATIVE.tolist(), shift=SHIFT, problem=problem))


# ------------------------------------------------------------------ gradients through RoPE'd attention
GRAD_B, GRAD_H = 2, 2
SMALL_POSITIONS = np.array([0, 1, 1000], dtype=np.int64)


def _grad_case(key, b, h, positions, d):
    """x = queries and keys stacked, (2, b, h, T, d), the positions, and v, c_out, c_w for the attention."""
    t = len(positions)
    qk = randn((STEP, key, "qk"), (2, b, h, t, d))
    return qk, randn((STEP, key, "v"), (b, h, t, d)), randn((STEP, key, "c_out"), (b, h, t, d)), \
        randn((STEP, key, "c_w"), (b, h, t, t))


def _attention_cotangent(qk, positions, v, c_out, c_w):
    """d L / d rope(qk) for L = <out, c_out> + <weights, c_w>, where out, weights = softmax(q k^T / sqrt(d)) v
    with q, k = rope(qk): the reference's float64 autograd. Through the student's apply_rope it gives the
    gradient of that attention with respect to the queries and keys before they were turned."""
    turned = torch.from_numpy(_rope_ref(qk, positions)).requires_grad_(True)
    q, k = turned[0], turned[1]
    w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    loss = ((w @ torch.from_numpy(v)) * torch.from_numpy(c_out)).sum() + (w * torch.from_numpy(c_w)).sum()
    return torch.autograd.grad(loss, turned)[0].numpy()


@check("4.7", points=1, kind="gradients")
def test_gradients(student):
    """Gradients through RoPE'd attention: the queries' and keys' gradients through apply_rope match the reference's (float64), at positions from 0 and at positions that do not start at 0, and gradcheck passes"""
    for key, positions in (("4.7", POSITIONS), ("4.7 offset", OFFSET_POSITIONS)):
        _expect_rope_gradients(student, key, positions)


def _expect_rope_gradients(student, key, positions):
    POSITIONS = positions                # noqa: N806  the case's positions, under the name the lines below use
    qk, v, c_out, c_w = _grad_case(key, GRAD_B, GRAD_H, POSITIONS, HD)
    cotangent = _attention_cotangent(qk, POSITIONS, v, c_out, c_w)
    small = randn((STEP, "4.7 small", "qk"), (2, 1, 1, len(SMALL_POSITIONS), 4))
    what = _("apply_rope(queries and keys stacked, of shape {shape}, positions={positions}) inside attention",
             shape=qk.shape, positions=POSITIONS.tolist())
    got = gradients.run_backward(student, attention.grad_target("apply_rope", {"x": qk}, (POSITIONS,)), [cotangent],
                                 attention.grad_target("apply_rope", {"x": small}, (SMALL_POSITIONS,)), what)
    value = expect_array(got.value, what, "torch")
    expect_shape(value, qk.shape, what)
    (ref_out,), expected = gradients.reference_gradients(
        lambda x: (step04_rope.apply_rope(x, torch.from_numpy(POSITIONS)),), {"x": qk}, [cotangent])
    lost = precision_lost(what, student.measure(student.call_request("apply_rope", qk, POSITIONS), what,
                                                count=False).downcasts)
    gradients.expect_gradients(got, [("rotated", value, ref_out)], expected, what,
                               _("x of shape {shape}, positions {positions}", shape=small.shape,
                                 positions=SMALL_POSITIONS.tolist()), precision=lost)


# ------------------------------------------------------------------ GPU (no points; skipped without CUDA)
LOW_PRECISION = {"float16": (1e-2, 1e-2), "bfloat16": (3e-2, 3e-2)}    # a few roundings of 11 or 8 bits


def _on_gpu(student, cuda, request, dtype, key):
    low, exact = rounded(_x(key), dtype)
    gpu = student.on(cuda, cast=None if dtype == "float32" else dtype)
    got, what = _rope(gpu, low, POSITIONS, device=cuda)
    what = _("{what} on {device} in {dtype}", what=what, device=cuda, dtype=dtype)
    expect_dtype(request, got, dtype, what, "torch")
    # half precision: too coarse to tell mistakes apart, the CPU checks name them
    _expect_rope(got, what, exact, POSITIONS, dtype, level=LOW_PRECISION.get(dtype, "op"), name=dtype == "float32")
    angles = attention.placing(student.on(cuda)).call("rope_angles", attention.Placed(POSITIONS, cuda), HD)
    angles = expect_array(angles, _("{what} on {device}", what=_angles_what(POSITIONS, HD), device=cuda), "torch",
                          device=cuda)
    expect_dtype(request, angles, "float64", _angles_what(POSITIONS, HD), "torch")


@check("4.9", points=0, kind="device")
def test_cuda_float32(student, cuda, request):
    """On CUDA, float32: apply_rope stays on the GPU in float32 and matches the reference; rope_angles stays float64 there"""
    with gpu_usable():
        _on_gpu(student, cuda, request, "float32", "4.9")


@check("4.10", points=0, kind="device")
def test_cuda_float16(student, cuda, request):
    """On CUDA, float16: apply_rope keeps float16 on the GPU and matches the reference"""
    with gpu_usable():
        _on_gpu(student, cuda, request, "float16", "4.10")


@check("4.11", points=0, kind="device")
def test_cuda_bfloat16(student, cuda, request):
    """On CUDA, bfloat16: apply_rope keeps bfloat16 on the GPU and matches the reference"""
    with gpu_usable():
        _on_gpu(student, cuda, request, "bfloat16", "4.11")


# ------------------------------------------------------------------ complexity
GROW = {"T": (16, 32, 64), "B": (2, 3, 4)}
MEMORY = {"B": 2, "T": 256}
WIDE = 64                                           # head_dim of the complexity inputs


def _rope_inputs(B, T):
    """x (B, 2, T, 64) and positions 0, 3, 6, ... (seeded by the sizes)."""
    return randn((STEP, "4.8", B, T), (B, 2, T, WIDE)), np.arange(T, dtype=np.int64) * 3


@check("4.8", points=1, kind="complexity")
def test_vectorised(student, request):
    """Vectorised: no Python loop over tokens or batch entries in rope_angles or apply_rope, and apply_rope's memory within a constant factor of its result's"""
    what = "rope_angles(positions, head_dim)"
    complexity.expect_vectorised(request, lambda T: student.measure(student.call_request(
        "rope_angles", np.arange(T, dtype=np.int64) * 3, WIDE), what), what, {"T": 16}, {"T": GROW["T"]})
    what = "apply_rope(x, positions)"

    def measure(B, T):
        return student.measure(student.call_request("apply_rope", *_rope_inputs(B, T)), what)
    complexity.expect_vectorised(request, measure, what, {"B": 2, "T": 16}, GROW)
    x, positions = _rope_inputs(**MEMORY)
    complexity.expect_memory(measure(**MEMORY), complexity.nbytes(_rope_ref(x, positions)), what,
                             complexity.shapes_text(x, positions))


# ------------------------------------------------------------------ the feedback page's example (not a check)
EXAMPLE_POSITIONS, EXAMPLE_HD = np.arange(8, dtype=np.int64), 16


def _relative_weights(turned):
    """softmax(q_m . k_n / sqrt(d)) over n, for the turned copies of one query (turned[0, m]) and one key
    (turned[1, n]): (T, T) weights whose stripes along the diagonals are RoPE's relative positions."""
    scores = turned[0] @ turned[1].T / math.sqrt(turned.shape[-1])
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@example
def test_example(student, request):
    """Attention weights of one query and one key turned to positions 0 to 7 by apply_rope, beside the reference's"""
    key = ("html", STEP)
    # one query and one key (scaled by 2: sharp weights), the same at every position: (2, T, d)
    qk = np.repeat(randn(key + ("qk",), (2, 1, EXAMPLE_HD), 2.0), len(EXAMPLE_POSITIONS), axis=1)

    def ask():
        got = student.call("apply_rope", qk, EXAMPLE_POSITIONS)
        if not (isinstance(got, Returned) and got.shape == qk.shape):
            return got
        return Returned(_relative_weights(got.array.astype(np.float64)), got.kind, got.type, "float64")
    show_example(request, _("softmax(q_m . k_n / sqrt(16)) for one query q and one key k turned by apply_rope to "
                            "positions m, n = 0 to 7: stripes along the diagonals, as the scores depend on m - n only"),
                 _relative_weights(_rope_ref(qk, EXAMPLE_POSITIONS)), ask)
