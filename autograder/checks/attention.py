"""The attention layer of the hidden suites: what every attention step checks, written once.

An attention call returns `out` and its `weights`; a step's suite calls the student, then hands
what came back to these expectations, with the reference's answer on the same inputs:

    out, w = attention.expect_outputs(value, what, (B, T, D), (B, h, T, T), "torch", heads=True)
    attention.expect_attention(out, w, expected, what, dtype, mistakes)       # values, mistakes named
    attention.expect_rows_sum_to_one(w, what, wrong_axis=...)                 # a property
    attention.expect_stable(request, (out, w), what, dtype, scores, values, numbers_check="6.4")

Shapes: weights are (..., T_q, T_k), one row per query, one column per key (T_q may differ from
T_k); out is (..., T_q, d_v). With heads, weights are (B, h, T_q, T_k). `mask` (where given) is
a boolean array broadcastable to the weights', True where a query may attend a key: masked weights
are exactly 0, and a query with no key to attend gets a row of zeros (never NaN).

Every failure goes through `expect.fail`, with the misconceptions it recognised. The scores and
variants come from `solutions/` and `reference/variants.py`: no attention math is written here.
"""
import functools
from dataclasses import dataclass

import numpy as np

from autograder.checks.expect import (CheckFailed, compare, evidence, expect_array, expect_close, expect_finite,
                                      expect_pair, expect_shape, expect_unchanged, fail, named_on_evidence, note,
                                      show_example, _framework)
from autograder.checks.student import Student
from autograder.checks.tolerances import large_scores_tolerance, tolerance
from autograder.sandbox import protocol
from autograder.sandbox.protocol import Returned, Seq
from autograder.i18n import _
from autograder.reference import variants
from autograder.sandbox.problems import NotDefined
from solutions import step05_weighted_sum as _scores_reference

# the feedback page's example, one per step (a `test_example` in each suite): T queries and keys,
# d_model, d_k, d_v and heads; the examples' texts quote these sizes
EXAMPLE_T, EXAMPLE_D_MODEL, EXAMPLE_D_K, EXAMPLE_D_V, EXAMPLE_HEADS = 5, 12, 6, 4, 3

# exp() overflows above these: the largest score a softmax without its max subtraction survives
EXP_LIMIT = {"float64": 709, "float32": 88, "bfloat16": 88, "float16": 11}


# ------------------------------------------------------------------ the reference's scores
def scaled_scores(q, k):
    """q (..., T_q, d), k (..., T_k, d) -> q k^T / sqrt(d), (..., T_q, T_k), float64 numpy: the
    scores as the references compute them (step 5's attention_scores and scale_scores)."""
    return _scores_reference.scale_scores(_scores_reference.attention_scores(q, k), q.shape[-1])


# ------------------------------------------------------------------ the pair (out, weights)
def expect_outputs(value, what, out_shape, weights_shape, framework, names=("out", "weights"), device=None,
                   heads=False, detect_swap=True, labels=None, shape_labels=None):
    """(out, weights), checked, from `value`, what an attention call returned.

    A pair of arrays of `framework` ("numpy" or "torch", on `device`), out of `out_shape` and
    weights of `weights_shape`. The mistakes a shape shows are named in words: the pair returned in
    the wrong order (detect_swap), and, with `heads` (weights (B, h, T_q, T_k)), weights averaged
    over the heads. names: the two outputs' names in messages; labels: the texts that stand for
    them in type errors, shape_labels in shape errors (default both "{what}: {name}").
    """
    labels = labels or [what + ": " + name for name in names]
    shape_labels = shape_labels or labels
    out, weights = expect_pair(value, what, names)
    out = expect_array(out, labels[0], framework, device=device)
    weights = expect_array(weights, labels[1], framework, device=device)
    out_shape, weights_shape = tuple(out_shape), tuple(weights_shape)
    if detect_swap and out.shape == weights_shape and weights.shape == out_shape:
        fail(_("{what} returned ({second}, {first}): return them in the order ({first}, {second}).",
               what=what, first=names[0], second=names[1]))
    expect_shape(out, out_shape, shape_labels[0])
    if heads and weights.shape == weights_shape[:1] + weights_shape[2:]:
        fail(_("{what}: {name} has shape {got}; expected {shape}. Return every head's "
               "weights, (B, num_heads, T, T), not their average over the heads.",
               what=what, name=names[1], got=weights.shape, shape=weights_shape))
    expect_shape(weights, weights_shape, shape_labels[1])
    return out, weights


def expect_attention(out, weights, expected, what, dtype, mistakes=None, names=("out", "weights"), extra=None,
                     level="composed"):
    """Both outputs of an attention call match the reference (expected = (out, weights)).

    mistakes: {id: (out, weights)} from variants, or a function returning it (called only when the
    values are wrong); a mistake is named only when it explains both outputs.
    level: as in expect_close (an explicit (rtol, atol) for large scores, see tolerances.py).
    extra: a sentence added to the message (e.g. a note on the module's parameters).
    """
    expect_unchanged(out, what, _framework())      # told once, not for each output
    problems = []
    for got, exp, name in ((weights, expected[1], names[1]), (out, expected[0], names[0])):
        try:
            expect_close(got, exp, what + ": " + name, dtype, level=level)
        except CheckFailed as failure:
            problems.append(failure.message)
    rtol, atol = level if isinstance(level, tuple) else tolerance(dtype, level)
    band = (10 * rtol, 10 * atol)
    if not problems:       # right: evidence against each mistake already computed (a function is not called)
        if mistakes and not callable(mistakes):
            evidence().record((out.array, weights.array), {m: tuple(v) for m, v in mistakes.items()}, band)
        return
    mistakes = (mistakes() if callable(mistakes) else mistakes) or {}
    evidence().record((out.array, weights.array), {m: tuple(v) for m, v in mistakes.items()}, band)
    found = [mid for mid, (v_out, v_w) in mistakes.items()
             if compare(out.array, v_out, *band).ok and compare(weights.array, v_w, *band).ok]
    fail(_lines(problems + ([extra] if extra else [])), evidence().consistent(found))


def _lines(parts):
    """The parts one per line, composed with + (a message stays a message until a report writes it)."""
    text = parts[0]
    for part in parts[1:]:
        text = text + "\n" + part
    return text


# ------------------------------------------------------------------ properties: answers that must agree
def differs(got, expected, dtype="float64", level="composed"):
    """None when the array `got` matches `expected` within the dtype's tolerance (compare), else a
    short message saying how many values differ and the worst: for a property, where two answers
    of the student's code must agree (a causal output before and after later tokens change)."""
    rtol, atol = level if isinstance(level, tuple) else tolerance(dtype, level)
    cmp = compare(got, expected, rtol, atol)
    if cmp.ok:
        return None
    if cmp.worst_index is None:
        return _("shape {got} against {shape}", got=np.shape(got), shape=np.shape(expected))
    return _("{bad} of {n} values differ, the worst at index {index}: {got} against {expected}",
             bad=cmp.n - cmp.n_close, n=cmp.n, index=cmp.worst_index, got=f"{cmp.worst_got:.6g}",
             expected=f"{cmp.worst_expected:.6g}")


def matching(out, weights, mistakes, dtype):
    """The ids of `mistakes` ({id: (out, weights)}, or a function returning it) whose both outputs
    the student's `out` and `weights` (Returned) match, in the band expect_attention names them in."""
    mistakes = mistakes() if callable(mistakes) else mistakes
    rtol, atol = tolerance(dtype, "composed")
    # this input recorded too: a match here alone, against the step's other inputs, names nothing
    return named_on_evidence((out.array, weights.array), {m: tuple(v) for m, v in (mistakes or {}).items()},
                             (10 * rtol, 10 * atol))


# ------------------------------------------------------------------ rows summing to one
def worst_row(p, target=1.0):
    """(index, sum) of the row (last axis) of `p` whose sum is furthest from `target`."""
    sums = np.sum(p, axis=-1)
    worst = np.unravel_index(np.argmax(np.abs(sums - target)), sums.shape)
    return tuple(int(i) for i in worst), sums[worst]


def named_if_matches(mid, got, variant, dtype="float64", level="composed"):
    """[mid] when the student's arrays `got` (a tuple) match `variant` (the mistake's arrays on the same
    input, or a list of such tuples) within the band a mistake is named in, here and on most of the
    step's inputs compared with it (Evidence); else []."""
    rtol, atol = level if isinstance(level, tuple) else tolerance(dtype, level)
    return named_on_evidence(tuple(got), {mid: variant}, (10 * rtol, 10 * atol))


def wrong_axis_found(p, wrong_axis, dtype):
    """["softmax-wrong-axis"] when `p` matches `wrong_axis`, the weights of the softmax over the
    wrong axis applied to the reference (an array, a list of them: each other axis, or a function
    returning either), here and on most of the step's inputs compared with it (Evidence), else []."""
    wrong_axis = wrong_axis() if callable(wrong_axis) else wrong_axis
    if wrong_axis is None:
        return []
    rtol, atol = tolerance("float64" if dtype == "float64" else "float32", "composed")
    ways = [(w,) for w in wrong_axis] if isinstance(wrong_axis, list) else (wrong_axis,)
    return named_on_evidence((p,), {"softmax-wrong-axis": ways}, (10 * rtol, 10 * atol))


def expect_rows_sum_to_one(weights, what, wrong_axis=None, mask=None, index_words="index"):
    """Attention weights lie in [0, 1] and each query's row (the last axis) sums to 1, within the
    rounding of the dtype they came in.

    wrong_axis: the weights of the softmax over the wrong axis on the same inputs (or a function
    returning them, called only when a row is wrong): named when the student's match them.
    mask: True where a query may attend a key (broadcastable to the weights): masked weights must
    be exactly 0 (so a row with no key to attend is a row of zeros, not NaN); the other rows sum to 1.
    index_words: how the message names a row's index: "index", or "batch, head, query" for
    (B, h, T_q, T_k) weights.
    """
    tol = {"float64": 1e-9, "float32": 1e-5}.get(weights.dtype, 1e-2)
    p = weights.array.astype(np.float64)
    if mask is not None:        # masked rows are where NaN comes from (0 / 0): told before the bounds
        expect_finite(weights, what, _("A query with no key to attend gets weights 0 (and output 0), never NaN."))
    if p.min() < -tol or p.max() > 1 + tol:
        fail(_("{what}: attention weights must lie in [0, 1]; found {low} .. {high}.",
               what=what, low=f"{p.min():.4g}", high=f"{p.max():.4g}"))
    target = 1.0
    if mask is not None:
        mask = np.broadcast_to(np.asarray(mask, dtype=bool), p.shape)
        if np.any(p[~mask] != 0):
            fail(_("{what}: masked entries must get weight exactly 0: fill the masked scores with -inf "
                   "before the softmax.", what=what))
        # a row with no key to attend is all masked, so all 0 by now: the others sum to 1
        target = mask.any(axis=-1).astype(np.float64)
    sums = p.sum(axis=-1)
    worst = np.unravel_index(np.argmax(np.abs(sums - target)), sums.shape)
    if abs(sums[worst] - np.broadcast_to(target, sums.shape)[worst]) <= tol:
        return
    index, total = tuple(int(i) for i in worst), f"{sums[worst]:.10g}"
    found = wrong_axis_found(p, wrong_axis, weights.dtype) if wrong_axis is not None else []
    if index_words == "batch, head, query":
        fail(_("{what}: each query's weights over the keys (the last axis) should sum to 1; "
               "the row at (batch, head, query) = {index} sums to {total}.", what=what, index=index, total=total),
             found)
    fail(_("{what}: each query's weights over the keys (the last axis) should sum to 1; "
           "the row at index {index} sums to {total}.", what=what, index=index, total=total), found)


# ------------------------------------------------------------------ stability at large scores
def expect_stable(request, got, what, dtype, scores, values, numbers_check, names=("out", "weights"),
                  level=None, name_unstable=True, global_max_hint=True, nonfinite=None):
    """The result of a call on inputs whose scores are large is finite, and right.

    One expectation for every step, numpy or torch, a function or a module, on the CPU or a device:
    the suite makes the call (in `dtype`, on its device) and hands over what came back.

    got: a softmax's weights (a Returned), or the pair (out, weights) of an attention call
    what: the call, as messages name it; dtype: the dtype the call computed in
    scores: the scaled scores (float64, (..., T_q, T_k)) the reference computes on these inputs: their
        size sets the tolerance, and the places of the NaNs in the weights, against the unstable
        softmaxes of the scores in `dtype`, name the mistake (variants.unstable_softmax_mistake)
    values(level): the step's numbers check at tolerance `level`, raising CheckFailed with the
        mistakes it names. A mistake it names costs the check `numbers_check` ("6.4"), not this one:
        stable is all this check asks, so a named mistake is a note here
    level: the tolerance; default one that grows with the scores (tolerances.large_scores_tolerance)
    nonfinite(mistake): how the step tells NaN or inf (it raises); default: the first output with
        NaN or inf (weights first), where they are and why, naming the mistake when exp() of these
        scores overflows in `dtype` and `name_unstable` (step 7 names it on the CPU only); with
        `global_max_hint`, a softmax shifted by the whole array's maximum gets a hint of its own
    """
    pair = not isinstance(got, Returned)
    weights = got[1] if pair else got
    finite = np.isfinite(scores)       # masked scores are -inf: the largest of the others counts
    largest = float(np.abs(scores[finite]).max()) if finite.any() else 0.0
    arrays = [(weights, names[1]), (got[0], names[0])] if pair else [(got, None)]
    if not all(np.isfinite(a.array).all() for a, _name in arrays):
        # on large scores only a softmax without the max subtraction (exp() overflows: inf / inf) or one
        # shifted by the whole array's maximum (exp() underflows: 0 / 0) gives NaN or inf: the NaNs'
        # places say which
        mistake = variants.unstable_softmax_mistake(
            weights.array, scores.astype(dtype if dtype in ("float64", "float32") else "float32"))
        if nonfinite is not None:
            nonfinite(mistake)
        else:
            _tell_nonfinite(arrays, what, dtype, largest, mistake, name_unstable, global_max_hint)
    try:
        values(level or large_scores_tolerance(dtype, largest))
    except CheckFailed as failure:
        if not failure.misconceptions:
            raise
        note(request, _("Stable, but the values show the mistake named in {check} ({ids}); "
                        "that costs the numbers points, not these.",
                        check=numbers_check, ids=", ".join(failure.misconceptions)))


def _tell_nonfinite(arrays, what, dtype, largest, mistake, name_unstable, global_max_hint):
    overflows = largest > EXP_LIMIT[dtype] and not np.isfinite(arrays[0][0].array).all()
    found = [mistake] if overflows and name_unstable else []
    if global_max_hint and overflows and mistake == "softmax-global-max":
        hint = _("The scores here reach about {largest}; rows whose scores all lie far below the largest one "
                 "get exp() = 0 everywhere once that one maximum is subtracted, and 0 / 0 is nan. torch.softmax, "
                 "or subtracting each row's own maximum (amax(dim=-1, keepdim=True)), avoids that.",
                 largest=f"{largest:.0f}")
    else:
        hint = _("The largest scores here are about {largest}; exp() of more than {limit} overflows "
                 "{dtype}. torch.softmax, or subtracting each row's maximum before exp(), avoids that.",
                 largest=f"{largest:.0f}", limit=EXP_LIMIT[dtype], dtype=dtype)
    for got, name in arrays:
        try:
            expect_finite(got, what if name is None else what + ": " + name, hint)
        except CheckFailed as failure:
            fail(failure.message, found)


# ------------------------------------------------------------------ masks: arguments placed on their own
@dataclass(frozen=True)
class Placed:
    """An argument sent as a tensor on its own `device`, never cast: a bool mask on the CPU beside
    inputs on CUDA (the contract says the code moves it), or kept bool beside float16 inputs."""
    value: np.ndarray
    device: str = "cpu"


class _Placing(Student):
    """A Student whose arguments may be `Placed` or a str (a device name, `device="cuda"`)."""

    def _encode(self, x):
        if isinstance(x, Placed):
            return protocol.encode_value(x.value, True, x.device, None)
        if type(x) is str:
            return {"t": "scalar", "value": x}      # the child hands scalars over as they are
        return super()._encode(x)


def placing(student):
    """The same student (device, cast), able to take `Placed` arguments and device names."""
    return _Placing(student.session, student.device, student.cast)


def grad_target(name, inputs, extra=()):
    """A grad target (gradients.function_target) whose further arguments may be arrays too: a mask,
    sent as a tensor and not differentiated."""
    target = protocol.function_target(name, inputs)
    target["extra"] = [protocol.encode_value(v, as_tensor=True) for v in extra]
    return target


# ------------------------------------------------------------------ the feedback page's example
def second_of_pair(value):
    """The weights of an (out, weights) pair, for the example (fails when it is not a pair)."""
    if isinstance(value, Seq) and len(value.items) == 2:
        return value.items[1]
    fail(_("it did not return a pair (out, weights)"))


def head_0(value):
    """The first example's (and first head's) weights: (1, h, T, T) or (1, T, T) -> (T, T)."""
    if isinstance(value, Returned) and value.array.ndim in (3, 4):
        first = value.array[0, 0] if value.array.ndim == 4 else value.array[0]
        return Returned(first, value.kind, value.type, value.dtype)
    return value


def show_first_defined(request, cases):
    """`show_example` for the first of `cases`, [(what, expected, ask)], whose class or function the
    student's file defines (step 7: the multi-head module, else the single-head one), the last in any
    case: a submission with only one of them still gets its picture."""
    for what, expected, ask in cases[:-1]:
        try:
            value = ask()
        except NotDefined:
            continue
        except Exception as exc:        # told by show_example, as if raised there
            show_example(request, what, expected, functools.partial(_raise, exc))
            return
        show_example(request, what, expected, lambda: value)
        return
    show_example(request, *cases[-1])


def _raise(exc):
    raise exc
