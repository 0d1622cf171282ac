"""Hidden suite, modern_attention step 1: causal_mask, padding_mask and masked_attention (torch). 10 points.

Each function is checked on its own, with masks and inputs the grader builds (so a convention
flipped in all three functions alike, which composes to the right answer, is still caught), and
then through the others (the properties: what a causal and a padding mask are for). Shapes keep
every dim distinct: B=2, h=3, T_q=4, T_k=6, d=5, d_v=7, so a scale by sqrt(d_v) or a transposed
mask cannot hide; the causal mask is checked with T_q < T_k and T_q > T_k (the queries are the
last T_q positions) and rows with no allowed key (zero weights, zero output, never NaN).
"""
import numpy as np
import torch

from autograder.checks import attention, complexity, gradients
from autograder.checks.attention import Placed, expect_attention
from autograder.checks.expect import (check, compare, example, expect_array, expect_dtype, expect_full_precision,
                                      expect_shape, fail, gpu_usable, precision_lost, show_example)
from autograder.checks.inputs import randn, rounded
from autograder.checks.memo import remembered
from autograder.checks.tolerances import tolerance
from autograder.i18n import _
from autograder.reference.modern import masks
from solutions.modern_attention import step01_masks as ref

STEP = "01_masks"
B, H, T_Q, T_K, D, D_V = 2, 3, 4, 6, 5, 7


# ------------------------------------------------------------------ references (torch float64, as numpy)
def _tt(a):
    return torch.from_numpy(np.ascontiguousarray(a))


def causal(T_q, T_k=None):
    """The reference's causal mask, (T_q, T_k) numpy bool."""
    return ref.causal_mask(T_q, T_k).numpy()


def padding(lengths, T):
    """The reference's padding mask, (B, T) numpy bool."""
    return ref.padding_mask(torch.tensor(lengths), T).numpy()


@remembered
def _ref_attention(q, k, v, mask=None):
    with torch.no_grad():
        out, w = ref.masked_attention(_tt(q), _tt(k), _tt(v), None if mask is None else _tt(mask))
    return out.numpy(), w.numpy()


@remembered
def _mistakes(q, k, v, mask):
    """{id: (out, weights)}: masked_attention's known mistakes on these inputs (float64)."""
    if mask is None:
        return {}
    with torch.no_grad():
        found = masks.attention_mistakes(_tt(q), _tt(k), _tt(v), _tt(mask))
    return {mid: (o.numpy(), w.numpy()) for mid, (o, w) in found.items()}


def _qkv(key, b=(B, H), t_q=T_Q, t_k=T_K, d=D, d_v=D_V, scale=1.0):
    """q (*b, t_q, d), k (*b, t_k, d), v (*b, t_k, d_v), seeded: scaled scores of order `scale`."""
    return (randn((STEP, key, "q"), b + (t_q, d), scale), randn((STEP, key, "k"), b + (t_k, d), scale),
            randn((STEP, key, "v"), b + (t_k, d_v)))


# ------------------------------------------------------------------ masks
def _rows(mask):
    """A small bool mask as text, one row per line (1 = True), for the message."""
    rows = np.asarray(mask).reshape(-1, np.shape(mask)[-1])
    return "\n".join("  " + "".join("1" if x else "0" for x in row) for row in rows[:12])


def _expect_mask(value, expected, what, mistakes, device=None):
    """The student's mask is a bool tensor equal to `expected`; when not, the mistakes whose mask it
    is ({id: mask}) are named."""
    got = expect_array(value, what, "torch", device=device or "cpu")
    if got.dtype != "bool":
        fail(_("{what} has dtype {dtype}; a mask is a bool tensor (True = may attend). A comparison such as "
               "j <= i is bool already; torch.ones(..., dtype=torch.bool) makes one.", what=what, dtype=got.dtype))
    expected = np.asarray(expected)
    if expected.ndim == 2 and expected.shape[0] != expected.shape[1] and got.shape == expected.shape[::-1]:
        fail(_("{what} has shape {got}; expected {shape}: one row per query (or sequence), one column per key.",
               what=what, got=got.shape, shape=expected.shape))
    expect_shape(got, expected.shape, what)
    wrong = got.array != expected
    if not wrong.any():
        return
    found = [mid for mid, m in mistakes.items() if np.array_equal(got.array, m)]
    fail(_("{what}: {bad} of {n} entries differ from the expected mask, the first at index {index}. "
           "Expected (1 = True, may attend; one row per line):\n{expected}\nyours:\n{got}",
           what=what, bad=int(wrong.sum()), n=wrong.size, index=tuple(int(i) for i in np.argwhere(wrong)[0]),
           expected=_rows(expected), got=_rows(got.array)), found)


CAUSAL_CASES = ((5, None), (4, 6), (1, 6), (3, 8), (6, 4), (1, 1))     # (T_q, T_k): T_k None = the default


def _causal_what(T_q, T_k, device=None):
    args = f"{T_q}" + ("" if T_k is None else f", {T_k}") + ("" if device is None else f", device={device!r}")
    return f"causal_mask({args})"


def _causal_mistakes(T_q, T_k):
    right = causal(T_q, T_k)
    found = {mid: masks.causal_mask(T_q, T_k, mid).numpy() for mid in masks.CAUSAL_MISTAKES}
    return {mid: m for mid, m in found.items() if not np.array_equal(m, right)}


def _check_causal(student, T_q, T_k, device=None):
    what = _causal_what(T_q, T_k, device)
    args = (T_q,) if T_k is None else (T_q, T_k)
    value = attention.placing(student).call("causal_mask", *args, **({} if device is None else {"device": device}))
    _expect_mask(value, causal(T_q, T_k), what, _causal_mistakes(T_q, T_k), device)


PADDING_CASES = (((5, 0, 7, 2), 7, "int64"), ((3, 1), 3, "int32"), ((0,), 1, "int64"))


def _padding_what(lengths, T, dtype):
    return f"padding_mask(torch.tensor({list(lengths)}, dtype=torch.{dtype}), {T})"


def _check_padding(student, lengths, T, dtype, device=None):
    what = _padding_what(lengths, T, dtype)
    value = student.call("padding_mask", np.array(lengths, dtype=dtype), T)
    mistakes = {mid: masks.padding_mask(torch.tensor(lengths), T, mid).numpy() for mid in masks.PADDING_MISTAKES}
    _expect_mask(value, padding(lengths, T), what, mistakes, device)


# ------------------------------------------------------------------ masked_attention
def _attention(student, q, k, v, mask=None, what=None, device=None, keyword=False):
    """Call masked_attention (the mask as `mask=` with `keyword`); check it returns two tensors of
    the right shapes, on `device`."""
    what = what or ("masked_attention(q, k, v)" if mask is None else "masked_attention(q, k, v, mask)")
    args, kwargs = [q, k, v], {}
    if mask is not None and keyword:
        kwargs["mask"] = mask
    elif mask is not None:
        args.append(mask)
    value = attention.placing(student).call("masked_attention", *args, **kwargs)
    mask_shape = () if mask is None else np.shape(mask.value if isinstance(mask, Placed) else mask)
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], mask_shape[:-2])
    out, w = attention.expect_outputs(value, what, batch + (q.shape[-2], v.shape[-1]),
                                      batch + (q.shape[-2], k.shape[-2]), "torch", device=device)
    return out, w, what


def _cases(key):
    """[(what, q, k, v, mask)]: every kind of mask the contract allows, on inputs seeded by `key`."""
    q, k, v = _qkv(key)
    q6, k4, v4 = _qkv((key, "T_q > T_k"), t_q=6, t_k=4)
    cm, pm = causal(T_Q, T_K), padding((6, 3), T_K)[:, None, None, :]
    return [
        (_("masked_attention(q, k, v) without a mask"), q, k, v, None),
        (_("masked_attention(q, k, v, mask) with the causal mask (T_q = 4 queries, the last of T_k = 6 positions)"),
         q, k, v, cm),
        (_("masked_attention(q, k, v, mask) with a padding mask (B, 1, 1, T_k) of lengths 6 and 3"), q, k, v, pm),
        (_("masked_attention(q, k, v, mask) with causal & padding masks"), q, k, v, cm & pm),
        (_("masked_attention(q, k, v, mask) with a mask on the keys only, shape (T_k,)"), q, k, v,
         np.array([True, False, True, True, False, True])),
        (_("masked_attention(q, k, v, mask) with the causal mask of T_q = 6 > T_k = 4 (queries 0 and 1 see no key)"),
         q6, k4, v4, causal(6, 4)),
        (_("masked_attention(q, k, v, mask) with an empty sequence (padding lengths 0 and 4)"), q, k, v,
         padding((0, 4), T_K)[:, None, None, :]),
        (_("masked_attention(q, k, v, mask) on unbatched inputs (T_q, d) with the causal mask"), q[0, 0], k[0, 0],
         v[0, 0], cm),
    ]


def _expect_case(student, request, what, q, k, v, mask, dtype, exact=None, keyword=False):
    """masked_attention on q, k, v (in `dtype`), its values against the reference's on `exact`."""
    out, w, _what = _attention(student, q, k, v, mask, what, keyword=keyword)
    expect_dtype(request, out, dtype, what + ": out", "torch")
    expect_dtype(request, w, dtype, what + ": weights", "torch")
    q64, k64, v64 = exact or (q, k, v)
    expect_attention(out, w, _ref_attention(q64, k64, v64, mask), what, dtype,
                     lambda: _mistakes(q64, k64, v64, mask))
    return out, w


# ------------------------------------------------------------------ graded checks
@check("1.1", points=1, kind="numbers")
def test_causal_mask(student):
    """causal_mask(T_q, T_k) is the bool (T_q, T_k) mask, True where key j <= T_k - T_q + i, for T_q = T_k (T_k left out), T_q < T_k and T_q > T_k"""
    for T_q, T_k in CAUSAL_CASES:
        _check_causal(student, T_q, T_k)


@check("1.2", points=1, kind="numbers")
def test_padding_mask(student):
    """padding_mask(lengths, T) is the bool (B, T) mask, True for the first lengths[b] positions (lengths 0 and T included, int64 and int32)"""
    for lengths, T, dtype in PADDING_CASES:
        _check_padding(student, lengths, T, dtype)


@check("1.3", points=0.5, kind="shape")
def test_shapes(student):
    """masked_attention returns (out, weights) of shapes (..., T_q, d_v) and (..., T_q, T_k), batched or not, with or without a mask"""
    q, k, v = _qkv("1.3")
    _attention(student, q, k, v)
    _attention(student, q, k, v, causal(T_Q, T_K))
    _attention(student, q[0, 0], k[0, 0], v[0, 0], causal(T_Q, T_K))


@check("1.4", points=2, kind="numbers")
def test_numbers_float64(student, request):
    """masked_attention values, out and weights, float64: no mask, causal (T_q < T_k and T_q > T_k), padding, both, keys only, an empty sequence, unbatched"""
    cases = _cases("1.4")
    what, q, k, v, mask = cases[3]
    expect_full_precision(student, student.call_request("masked_attention", q, k, v, mask), what)
    for i, (what, q, k, v, mask) in enumerate(cases):
        _expect_case(student, request, what, q, k, v, mask, "float64", keyword=i == 3)


@check("1.5", points=0.5, kind="numbers")
def test_numbers_float32(student, request):
    """masked_attention values, float32 (dtype kept), with causal & padding masks (a query with no allowed key among them) and without a mask"""
    q, k, v = _qkv("1.5")
    pairs = [rounded(a, "float32") for a in (q, k, v)]
    for mask, what in ((causal(T_Q, T_K) & padding((6, 0), T_K)[:, None, None, :],
                        _("masked_attention(q, k, v, mask) in float32")),
                       (None, _("masked_attention(q, k, v) in float32"))):
        _expect_case(student, request, what, *[p[0] for p in pairs], mask, "float32", exact=[p[1] for p in pairs])


@check("1.6", points=0.5, kind="property")
def test_masked_weights(student):
    """Blocked weights are exactly 0, each query with an allowed key has weights summing to 1, and a query with none gets zero weights and a zero output, never NaN"""
    q, k, v = _qkv("1.6", t_q=6, t_k=T_K)
    mask = causal(6, T_K) & padding((6, 2), T_K)[:, None, None, :]      # (B, 1, 6, T_k): entry 1 sees keys 0, 1
    mask[1, 0, 2] = False                                                # and its query 2 no key at all
    out, w, what = _attention(student, q, k, v, mask)
    attention.expect_rows_sum_to_one(w, what + ": weights", mask=np.broadcast_to(mask, w.shape),
                                     index_words="batch, head, query")
    no_key = ~np.broadcast_to(mask, w.shape).any(-1)
    if np.any(out.array[no_key] != 0):
        fail(_("{what}: a query with no allowed key must get a zero output (its weights are all 0, so weights @ v "
               "is 0); yours is not.", what=what))


def _unchanged(got, before, what, text):
    """The student's own outputs before and after a change of inputs agree (float64, composed)."""
    rtol, atol = tolerance("float64", "composed")
    cmp = compare(got, before, rtol, atol)
    if not cmp.ok:
        fail(text + "\n" + _("{what}: largest difference {change}, at index {index}.", what=what,
                             change=f"{cmp.max_abs_err:.3g}", index=cmp.worst_index))


@check("1.7", points=1, kind="property")
def test_causal_property(student):
    """Through your causal_mask and masked_attention: a query's output does not change when the keys and values after its position change, and does when its own position's change (T_q = T_k, and T_q < T_k as with a cache)"""
    for T_q, T_k in ((8, 8), (3, 8)):      # T = 8: out (..., T, d_v = 7) never looks like the weights
        q, k, v = _qkv(("1.7", T_q), t_q=T_q, t_k=T_k)
        what = _causal_what(T_q, T_k)
        mask = expect_array(student.call("causal_mask", T_q, T_k), what, "torch").array
        out, _w, what = _attention(student, q, k, v, mask, f"masked_attention(q, k, v, {what})")
        offset = T_k - T_q
        for p in range(offset + 1, T_k):                 # change every key and value from position p on
            k2, v2 = k.copy(), v.copy()
            k2[..., p:, :] = randn((STEP, "1.7", T_q, p, "k"), k2[..., p:, :].shape, 10.0)
            v2[..., p:, :] = randn((STEP, "1.7", T_q, p, "v"), v2[..., p:, :].shape, 10.0)
            out2, _w, _what = _attention(student, q, k2, v2, mask, what)
            before = p - offset                           # queries at positions < p
            _unchanged(out2.array[..., :before, :], out.array[..., :before, :], what, _(
                "Changing the keys and values from position {p} on changed the outputs of the queries before it: with "
                "the causal mask, the query at position t sees positions 0..t only (query i stands at position "
                "T_k - T_q + i).", p=p))
        k2, v2 = k.copy(), v.copy()
        k2[..., -1, :], v2[..., -1, :] = 3.0, 3.0          # the last position's own key and value
        out2, _w, _what = _attention(student, q, k2, v2, mask, what)
        if np.allclose(out2.array[..., -1, :], out.array[..., -1, :]):
            fail(_("{what}: the last query's output did not change when the key and value at the last position, "
                   "T_k - 1, did. The last query stands at that position (query i at T_k - T_q + i) and attends it: "
                   "key j <= its position, itself included.", what=what))


@check("1.8", points=0.5, kind="property")
def test_padding_property(student):
    """Through your padding_mask and masked_attention: whatever the padded positions hold, the real tokens' outputs stay the same"""
    T = 8
    lengths = (8, 4)
    q, k, v = _qkv("1.8", t_q=T, t_k=T)
    what = _padding_what(lengths, T, "int64")
    keys = expect_array(student.call("padding_mask", np.array(lengths), T), what, "torch").array
    if keys.shape != (B, T):
        fail(_("{what} has shape {got}; expected {shape}.", what=what, got=keys.shape, shape=(B, T)))
    mask = keys[:, None, None, :]
    out, _w, what = _attention(student, q, k, v, mask, f"masked_attention(q, k, v, {what}[:, None, None, :])")
    k2, v2 = k.copy(), v.copy()
    k2[1, :, 4:] = randn((STEP, "1.8", "k"), k2[1, :, 4:].shape, 1000.0)
    v2[1, :, 4:] = randn((STEP, "1.8", "v"), v2[1, :, 4:].shape, 1000.0)
    out2, _w, _what = _attention(student, q, k2, v2, mask, what)
    _unchanged(out2.array[1, :, :4], out.array[1, :, :4], what, _(
        "Changing what the padded positions hold (positions 4 to 7 of the second sequence, length 4) changed the "
        "outputs of its real tokens: with the padding mask no query may attend a padded position."))


SMALL = {"q": (1, 3, 2), "k": (1, 2, 2), "v": (1, 2, 3)}      # the gradcheck case: query 0 sees no key


def _expect_gradients(student, mask, small_mask):
    """masked_attention's float64 gradients (and gradcheck's verdict) with `mask` (None: without one)."""
    inputs = {"q": randn((STEP, "1.9", "q"), (B, 6, D)), "k": randn((STEP, "1.9", "k"), (B, 4, D)),
              "v": randn((STEP, "1.9", "v"), (B, 4, D_V))}
    cotangents = [randn((STEP, "1.9", "d_out"), (B, 6, D_V)), randn((STEP, "1.9", "d_weights"), (B, 6, 4))]
    small = {n: randn((STEP, "1.9 small", n), s) for n, s in SMALL.items()}
    masked = () if mask is None else (mask,)
    what = "masked_attention(q, k, v)" if mask is None else "masked_attention(q, k, v, mask)"
    got = gradients.run_backward(student, attention.grad_target("masked_attention", inputs, masked), cotangents,
                                 attention.grad_target("masked_attention", small, () if mask is None else (small_mask,)),
                                 what)
    out, w = attention.expect_outputs(got.value, what, (B, 6, D_V), (B, 6, 4), "torch")
    nan = [name for name, g in got.grads.items() if g is not None and not np.isfinite(g).all()]
    if nan and np.isfinite(out.array).all() and np.isfinite(w.array).all():
        fail(_("{what}: the gradients w.r.t. {names} hold NaN, though your forward values are finite. A query with "
               "no allowed key has a softmax over a row of -inf, which is NaN in the backward pass too, even when the "
               "forward replaces it (nan_to_num): the NaN flows back to q and k unless the blocked scores are set with "
               "masked_fill or torch.where, whose backward gives those entries 0, rather than by adding a -inf bias.",
               what=what, names=", ".join(nan)))
    mask_t = None if mask is None else _tt(mask)
    (ref_out, ref_w), expected = gradients.reference_gradients(
        lambda q, k, v: ref.masked_attention(q, k, v, mask_t), inputs, cotangents)
    lost = precision_lost(what, student.measure(student.call_request("masked_attention", *inputs.values(), *masked),
                                                what, count=False).downcasts)
    small_text = (_("q (1, 3, 2), k (1, 2, 2), v (1, 2, 3), without a mask") if mask is None else
                  _("q (1, 3, 2), k (1, 2, 2), v (1, 2, 3), the causal mask of 3 queries and 2 keys"))
    gradients.expect_gradients(got, [("out", out, ref_out), ("weights", w, ref_w)], expected, what, small_text,
                               precision=lost)


@check("1.9", points=1, kind="gradients")
def test_gradients(student):
    """Gradients w.r.t. q, k and v match the reference's (float64), with a mask (queries with no allowed key included) and without one, and gradcheck passes"""
    # (B, 6, 4): three queries see nothing; in the small case, query 0
    _expect_gradients(student, causal(6, 4) & padding((4, 2), 4)[:, None, :], causal(3, 2))
    _expect_gradients(student, None, None)


def _expect_stable(student, request, dtype, key, device=None, cast=None, scale=30.0, masked=True):
    """masked_attention on large scores in `dtype` (on `device`, inputs cast to `cast`, the mask left
    on the CPU; without a mask unless `masked`): out and weights finite, values right (attention.expect_stable)."""
    q, k, v = _qkv(key, scale=scale)
    mask = causal(T_Q, T_K) & padding((6, 3), T_K)[:, None, None, :]      # every query has an allowed key
    if not masked:
        mask = np.ones((T_Q, T_K), dtype=bool)
    pairs = [rounded(a, dtype) for a in (q, k, v)]
    low, exact = [p[0] for p in pairs], [p[1] for p in pairs]
    who = student if device is None else student.on(device, cast=cast)
    given = None if not masked else mask if device is None else Placed(mask)
    out, w, what = _attention(who, *low, given, device=device)
    what = _("{what} on {device} in {dtype}", what=what, device=device or "cpu", dtype=dtype)
    scores = np.where(mask, attention.scaled_scores(exact[0], exact[1]), -np.inf)
    # half precision is too coarse to tell mistakes apart at these scores: the CPU checks name them
    mistakes = (lambda: _mistakes(*exact, mask)) if device is None else None
    attention.expect_stable(request, (out, w), what, dtype, scores,
                            lambda level: expect_attention(out, w, _ref_attention(*exact, mask), what, dtype, mistakes,
                                                           level=level), "1.4", name_unstable=False)


@check("1.10", points=0.5, kind="stability")
def test_large_scores(student, request):
    """No overflow when the scores reach the thousands, float64 and float32, with a mask and without: out and weights finite, values right"""
    for dtype in ("float64", "float32"):
        for masked in (True, False):
            _expect_stable(student, request, dtype, "1.10", masked=masked)


# ------------------------------------------------------------------ complexity and shortcuts
GROW = {"T": (8, 16, 32), "B": (2, 3, 4)}
MEMORY = {"B": 2, "T": 64}                      # h = 2, d = 32: a (..., T_q, T_k, d) intermediate is far over


def _complexity_inputs(B, T, d=32):
    q, k, v = _qkv(("1.11", B, T), b=(B, 2), t_q=T, t_k=T, d=d, d_v=d)
    lengths = tuple(T - i for i in range(B))
    return q, k, v, causal(T, T) & padding(lengths, T)[:, None, None, :]


@check("1.11", points=1, kind="complexity")
def test_vectorised(student, request):
    """Vectorised: no Python loop over tokens or batch entries in any of the three functions; masked_attention's memory and multiply-adds within a constant factor of the reference's"""
    def measure(name, *args):
        return student.measure(student.call_request(name, *args), f"{name}(...)")
    complexity.expect_vectorised(request, lambda T: measure("causal_mask", T, T + 3), "causal_mask(T, T + 3)",
                                 {"T": 8}, {"T": GROW["T"]})
    complexity.expect_vectorised(request, lambda B, T: measure("padding_mask", np.arange(B) % T, T),
                                 "padding_mask(lengths, T)", {"B": 2, "T": 8}, GROW)
    what = "masked_attention(q, k, v, mask)"
    complexity.expect_vectorised(request, lambda B, T: measure("masked_attention", *_complexity_inputs(B, T)), what,
                                 {"B": 2, "T": 8}, GROW)
    q, k, v, mask = _complexity_inputs(**MEMORY)
    measured = measure("masked_attention", q, k, v, mask)
    complexity.expect_memory(measured, complexity.nbytes(*_ref_attention(q, k, v, mask)), what,
                             complexity.shapes_text(q, k, v, mask))
    complexity.expect_flops(measured, complexity.reference_flops(ref.masked_attention, _tt(q), _tt(k), _tt(v),
                                                                 _tt(mask)), what)


@check("1.12", points=0.5, kind="api")
def test_no_library_attention(student):
    """Calls none of the library attention functions (F.scaled_dot_product_attention, nn.MultiheadAttention, ...)"""
    names = complexity.forbidden_apis(STEP)
    q, k, v = _qkv("1.12")
    mask = causal(T_Q, T_K) & padding((6, 3), T_K)[:, None, None, :]
    what = "masked_attention(q, k, v, mask)"
    low = [rounded(a, "float32")[0] for a in (q, k, v)]
    measured = [student.measure(student.call_request("masked_attention", *args), what, forbidden=names, count=False)
                for args in ((q, k, v, mask), (q, k, v), (*low, mask))]
    complexity.expect_no_forbidden(measured, what, names)


# ------------------------------------------------------------------ GPU (no points; skipped without CUDA)
def _on_gpu(student, cuda, request, dtype, key):
    """masked_attention on CUDA in `dtype`, the mask sent on the CPU (the contract: the code moves it)."""
    q, k, v = _qkv(key)
    mask = causal(T_Q, T_K) & padding((6, 0), T_K)[:, None, None, :]       # entry 1 has no key: zeros, not NaN
    pairs = [rounded(a, dtype) for a in (q, k, v)]
    low, exact = [p[0] for p in pairs], [p[1] for p in pairs]
    gpu = student.on(cuda, cast=None if dtype == "float32" else dtype)
    out, w, what = _attention(gpu, *low, Placed(mask), device=cuda)
    what = _("{what} on {device} in {dtype}, the mask on the CPU", what=what, device=cuda, dtype=dtype)
    expect_dtype(request, out, dtype, what + ": out", "torch")
    expect_dtype(request, w, dtype, what + ": weights", "torch")
    mistakes = (lambda: _mistakes(*exact, mask)) if dtype == "float32" else None
    expect_attention(out, w, _ref_attention(*exact, mask), what, dtype, mistakes)


@check("1.13", points=0, kind="device")
def test_cuda_float32(student, cuda, request):
    """On CUDA, float32: causal_mask(..., device) and padding_mask make their masks on the GPU; masked_attention keeps float32 on the GPU, takes a mask on the CPU, and matches the reference"""
    with gpu_usable():
        for T_q, T_k in ((5, None), (4, 6)):
            _check_causal(student, T_q, T_k, device=cuda)
        lengths, T, dtype = PADDING_CASES[0]
        _check_padding(student.on(cuda), lengths, T, dtype, device=cuda)
        _on_gpu(student, cuda, request, "float32", "1.13")


@check("1.14", points=0, kind="device")
def test_cuda_float16(student, cuda, request):
    """On CUDA, float16: masked_attention keeps float16 on the GPU, matches the reference and survives large scores"""
    with gpu_usable():
        _on_gpu(student, cuda, request, "float16", "1.14")
        _expect_stable(student, request, "float16", "1.14 large", device=cuda, cast="float16", scale=4.0)


@check("1.15", points=0, kind="device")
def test_cuda_bfloat16(student, cuda, request):
    """On CUDA, bfloat16: masked_attention keeps bfloat16 on the GPU, matches the reference and survives large scores"""
    with gpu_usable():
        _on_gpu(student, cuda, request, "bfloat16", "1.15")
        _expect_stable(student, request, "bfloat16", "1.15 large", device=cuda, cast="bfloat16", scale=8.0)


# ------------------------------------------------------------------ the feedback page's example (not a check)
@example
def test_example(student, request):
    """masked_attention's weights for q, k (5, 6) and v (5, 4) under the causal mask of 5 tokens, drawn beside the reference's, the blocked region marked"""
    T = attention.EXAMPLE_T
    q, k, v = _qkv(("html", STEP), b=(), t_q=T, t_k=T, d=attention.EXAMPLE_D_K, d_v=attention.EXAMPLE_D_V)
    mask = causal(T)
    show_example(request, _("the weights from masked_attention(q, k, v, causal_mask(5)), q and k of shape (5, 6)"),
                 _ref_attention(q, k, v, mask)[1],
                 lambda: attention.second_of_pair(student.call("masked_attention", q, k, v, mask)), mask=mask)
