"""How close is close enough, per dtype and per kind of computation.

A result is compared with a float64 reference computed from the very same (already rounded)
inputs, so only the student's arithmetic error counts. An element passes when

    |got - expected| <= atol * scale + rtol * |expected|,   scale = max(1, rms(expected))

`scale` makes atol relative to the array's magnitude: a matmul's rounding error follows the size
of the terms summed, not of the (possibly cancelled) result.

Levels:
- "op": one operation (a matmul, a division, a softmax): a few ulps of the dtype, grown by the
  length of the sums involved (our inputs have d <= 16).
- "composed": several operations chained (self-attention, multi-head, a module): errors of each
  step propagate through softmax and a second matmul, and implementations may order sums
  differently (einsum vs matmul vs F.linear), so allow about ten times more.
"""

# dtype -> level -> (rtol, atol)
TOLERANCES = {
    # float64: eps 2.2e-16, but a correct solution may hold one constant in float32, e.g. the
    # common `torch.sqrt(torch.tensor(d_k))` or `np.float32(np.sqrt(d))` (up to 6e-8 relative,
    # grown a little by the softmax). That must not cost points; every catalogued mistake
    # changes values by more than 1e-2, far outside these bands.
    "float64": {"op": (1e-7, 1e-9), "composed": (1e-6, 1e-8)},
    # float32: eps 1.2e-7; sums of <= 16 terms and exp() stay within ~1e-6 relative
    "float32": {"op": (1e-5, 1e-6), "composed": (1e-4, 1e-5)},
    # float16: eps 9.8e-4, and reductions may accumulate in half precision on some kernels
    "float16": {"op": (1e-2, 2e-3), "composed": (3e-2, 1e-2)},
    # bfloat16: eps 7.8e-3 (8 bits of mantissa)
    "bfloat16": {"op": (4e-2, 1e-2), "composed": (8e-2, 4e-2)},
}


def tolerance(dtype, level="op"):
    """(rtol, atol) for a result computed in `dtype` (the dtype of the inputs given)."""
    return TOLERANCES[str(dtype).replace("torch.", "")][level]


# The relative rounding a correct solution's scores may carry, per dtype: float64 keeps the
# allowance for one float32 constant (see above), so it is float32's unit roundoff too.
SCORE_ROUNDOFF = {"float64": 2.0 ** -24, "float32": 2.0 ** -24, "float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}


def large_scores_tolerance(dtype, max_score):
    """(rtol, atol) for attention (or a softmax) whose scores reach `max_score` in magnitude.

    Rounding a score s costs about u * |s| in absolute terms, whatever the code, and the softmax
    turns that into as much relative error in the weights: at scores in the thousands float32
    weights near 0.5 are off by ~1e-4, beyond the "composed" band. So atol grows with the scores:
    4 * u * max_score (0.001 for float32 at 4000), still far inside every catalogued mistake.
    """
    rtol, atol = tolerance(dtype, "composed")
    return rtol, atol + 4 * SCORE_ROUNDOFF[str(dtype).replace("torch.", "")] * float(max_score)
