"""What the hidden suites are written with: the `check` marker, the `Student` adapter, and
`expect_*` helpers that fail with a message a student can act on.

A suite never sees the student's objects: it sends numpy inputs through `Student`, gets back
plain decoded values (`Returned` arrays, `Seq`, `Opaque`), and compares them here, in the
trusted parent, with references computed on the same inputs.
"""
import contextlib
import contextvars
from dataclasses import dataclass

import numpy as np
import pytest

from autograder import i18n
from autograder.i18n import _, join
from autograder.sandbox.problems import StudentProblem, StudentRaised
from autograder.sandbox.protocol import Opaque, Returned, Seq
from autograder.checks.tolerances import tolerance


def check(number, points, kind, name=None):
    """Mark a test as a graded check: `@check("4.2", points=2, kind="numbers")`."""
    return pytest.mark.check(number=number, points=points, kind=kind, name=name)


class CheckFailed(Exception):
    """A check failed; `message` is for the student (a message, see autograder/i18n.py, without
    any diagnosis), `misconceptions` the ids of the mistakes it recognised: a report writes each
    one's diagnosis below the message, in its language and the step's library."""

    def __init__(self, message, misconceptions=()):
        super().__init__(message)
        self.message = message
        self.misconceptions = list(misconceptions)


def fail(message, misconception_ids=()):
    """Fail the check with `message` and the misconceptions it recognised. Every suite and
    expectation fails through here, so how a diagnosis reaches the student is decided in one place."""
    raise CheckFailed(message, list(misconception_ids))


def skip(message):
    """Skip the check (no points, not a failure) with `message` as the reason: pytest.skip takes
    only a str, so the message rides on its exception, rendered when a report writes it."""
    exc = pytest.skip.Exception(i18n.render(message, "en"))
    exc.message = message
    raise exc


def note(request, text):
    """Attach a note to a passing check (e.g. an accepted NumPy promotion)."""
    request.node.stash.setdefault(NOTES, []).append(text)


NOTES = pytest.StashKey[list]()


# ------------------------------------------------------------------ the feedback page's example
def example(fn):
    """Mark a suite function (named `test_example...`) as the step's example for the feedback
    page: not a check, never scored, run only when the page is asked for (`grade --html`), in
    the same child right after the step's checks. It calls `show_example` once."""
    return pytest.mark.example(fn)


@dataclass
class Example:
    """One attention example for the feedback page: `what` the call (a message), `expected` the
    reference's 2-D weights (T_q, T_k), `got` the student's (same shape, float64) or None, and then
    `problem`, why they could not be drawn (a message). `mask`: True where a key may be attended
    (None: everywhere), so a masked map can show the masked region."""
    what: object
    expected: np.ndarray
    got: np.ndarray = None
    problem: object = None
    mask: np.ndarray = None

    def to_data(self):
        """JSON-safe: the arrays as nested lists (NaN and inf as Python's json writes them)."""
        def array(a):
            return None if a is None else np.asarray(a).tolist()
        return {"what": i18n.to_data(self.what), "expected": array(self.expected), "got": array(self.got),
                "problem": None if self.problem is None else i18n.to_data(self.problem), "mask": array(self.mask)}

    @classmethod
    def from_data(cls, d):
        def array(a, dtype):
            if a is None:
                return None
            out = np.asarray(a, dtype=dtype)
            if out.ndim != 2:
                raise ValueError("an example's weights are 2-D")
            return out
        return cls(i18n.from_data(d["what"]), array(d["expected"], np.float64), array(d["got"], np.float64),
                   None if d["problem"] is None else i18n.from_data(d["problem"]), array(d["mask"], bool))


EXAMPLE = pytest.StashKey[Example]()


def show_example(request, what, expected, ask, mask=None):
    """Record the step's example. `ask()` calls the student and returns their decoded weights cut
    to 2-D (a `Returned` of `expected`'s shape); whatever keeps them from being drawn (the
    student's code raised or timed out, a wrong shape, a check's message) becomes the example's
    problem, so the page still shows the expected weights and says why."""
    expected = np.asarray(expected, dtype=np.float64)
    got, problem = None, None
    try:
        value = ask()
        if isinstance(value, Returned) and value.shape == expected.shape:
            got = value.array.astype(np.float64)
        else:
            shape = value.shape if isinstance(value, Returned) else type(value).__name__
            problem = _("its weights have shape {shape}, expected {expected}", shape=shape, expected=expected.shape)
    except StudentProblem as exc:
        problem = exc.student_message()
    except CheckFailed as exc:
        problem = exc.message
    request.node.stash[EXAMPLE] = Example(what, expected, got, problem, mask)


@contextlib.contextmanager
def gpu_usable():
    """Skip (not fail) a device check when CUDA itself cannot start in the student's process:
    the grader saw a GPU, but the sandbox kept it from the child. That is no fault of the code."""
    try:
        yield
    except StudentRaised as exc:
        message = str(exc.error.get("message", ""))
        if any(sign in message for sign in ("cudaGetDeviceCount", "CUDA driver initialization failed",
                                            "No CUDA GPUs are available")):
            skip(_("a GPU is present, but CUDA could not start in the isolated process that runs "
                          "the submission ({error})", error=message.splitlines()[0][:200]))
        raise


# ------------------------------------------------------------------ decoded values (sandbox/protocol.py)
def describe_value(v):
    """A short phrase for what came back, used in type errors."""
    if isinstance(v, Opaque) and v.repr.startswith(("array of dtype", "tensor of dtype")):
        # the child's repr is "array of dtype <name>" (English, made in the child): only the name is kept
        return _("a {type} of dtype {dtype} (only numeric dtypes can be graded)", type=v.type,
                 dtype=v.repr.split("of dtype", 1)[1].strip())
    if isinstance(v, Returned):
        return _("a {type} of shape {shape} and dtype {dtype}", type=v.type, shape=v.shape, dtype=v.dtype)
    if isinstance(v, Seq):
        return _("a {type} of {n} items", type=v.type, n=v.length)
    if isinstance(v, Opaque):
        return _("an object of type {type}", type=v.type)
    return f"{type(v).__name__} {v!r}"


def inputs_changed(what, names, framework):
    """The one message for code that changed the caller's arrays, tensors or parameters in place."""
    if framework == "torch":
        return _("{what}: your code changed {names} in place (an in-place operation such as `x /= ...`, "
                 "`x.sub_(...)`, `x[...] = ...` or a write through .data). The caller, and autograd, may still "
                 "need the original values: compute new tensors instead (x = x / ..., not x /= ...).",
                 what=what, names=join(", ", names))
    return _("{what}: your code changed {names} in place (an in-place operation such as `x /= ...`, `x -= ...`, "
             "`x[...] = ...` or `out=x`). The caller may still need the original values: compute a new array "
             "instead (x = x - ..., not x -= ...).", what=what, names=join(", ", names))


def expect_unchanged(value, what, framework):
    """The call that returned `value` left the caller's inputs as they were (child-reported `mutated`).

    Numpy steps: every value check says so. Torch steps: their gradient check owns it (6.13, 7.14:
    autograd needs the original values, and the message says so), so one mistake costs one verdict
    there, not a scatter of value checks some of which compare before the change shows."""
    if framework == "torch":
        return
    if isinstance(value, Returned) and value.mutated:
        raise CheckFailed(inputs_changed(what, value.mutated, framework))


def precision_lost(what, downcasts):
    """The message for float32 (or lower) arithmetic inside a float64 computation, in the step's
    library; None when there was none."""
    if not downcasts:
        return None
    lower = downcasts[0].rsplit("-> ", 1)[-1]
    if _framework() == "numpy":
        return _("{what}: part of the computation holds {lower} arrays although everything came in as float64 "
                 "({ops}). Precision is lost to {lower} inside the computation: the results carry only {lower}'s "
                 "digits (about 7 for float32), where the float64 checks compare at about 15. Keep every array "
                 "in the input's dtype: no .astype(np.float32) or dtype=np.float32; use x.dtype.",
                 what=what, lower=lower, ops="; ".join(downcasts[:3]))
    return _("{what}: part of the computation runs in {lower} although everything came in as float64 ({ops}). "
             "Precision is lost to {lower} inside the computation: the results carry only {lower}'s digits "
             "(about 7 for float32), where the float64 checks compare at about 15, and finite differences "
             "(the gradient check) need them. Keep every tensor in the input's dtype: no .float(), "
             ".to(torch.float32) or dtype=torch.float32 (in torch.softmax too); use x.dtype.",
             what=what, lower=lower, ops="; ".join(downcasts[:3]))


def expect_full_precision(student, request, what):
    """A float64 run of the student's code stays float64 throughout: in torch steps the child's
    dispatch mode sees every op, in numpy steps its tracer sees every array the student's functions
    hold when they return (child/meters.py); so each float64 check gets the same verdict, whatever
    its values' luck (the float64 tolerance admits one float32 constant, not float32 arrays).
    `request`: a call_request / module_request in float64."""
    # measured once per step's child and name (the first float64 check), then the same verdict for
    # every check: a property of the code, not of one check's inputs, and a measurement costs a run
    memo = student.session.__dict__.setdefault("_downcasts", {})
    key = (request.get("op"), request.get("name"), request.get("dtype"))
    if key not in memo:
        memo[key] = student.measure(request, what, count=False, precision=True).downcasts
    text = precision_lost(what, memo[key])
    if text:
        raise CheckFailed(text)


def _framework():
    from autograder.reference.misconceptions import FRAMEWORK
    return FRAMEWORK.get() or "numpy"


# ------------------------------------------------------------------ expectations
def expect_pair(value, what, names=("out", "weights")):
    """The student returned two things (a tuple or list of 2)."""
    if isinstance(value, Seq) and len(value.items) == 2:
        return value.items
    raise CheckFailed(_("{what} should return a pair ({names}); it returned {got}.",
                        what=what, names=", ".join(names), got=describe_value(value)))


def expect_seq(value, n, what, names):
    if isinstance(value, Seq) and len(value.items) == n:
        return value.items
    raise CheckFailed(_("{what} should return {n} values ({names}); it returned {got}.",
                        what=what, n=n, names=", ".join(names), got=describe_value(value)))


def expect_array(value, what, framework, device=None):
    """The value is a plain numpy array (numpy steps) or a torch tensor (torch steps)."""
    if framework == "numpy":
        if isinstance(value, Returned) and value.kind == "ndarray" and value.type == "numpy.ndarray":
            return value
        if isinstance(value, Returned) and value.kind == "ndarray":
            raise CheckFailed(_("{what} returned a {type}, a subclass of numpy.ndarray; "
                                "return a plain numpy.ndarray (np.asarray(result)).", what=what, type=value.type))
        if isinstance(value, Returned) and value.kind == "numpy-scalar":
            raise CheckFailed(_("{what} returned a single number ({type}), not an array: "
                                "did a sum or max drop the axes you needed (keepdims=True)?",
                                what=what, type=value.type))
        if isinstance(value, Returned) and value.kind == "tensor":
            raise CheckFailed(_("{what} returned a torch tensor; this step works with numpy arrays.", what=what))
        raise CheckFailed(_("{what} should return a numpy array; it returned {got}.",
                            what=what, got=describe_value(value)))
    if isinstance(value, Returned) and value.kind == "tensor":
        if device is not None and value.device is not None and value.device.split(":")[0] != device.split(":")[0]:
            raise CheckFailed(_("{what} returned a tensor on {got}, but its input was on {device}: "
                                "create new tensors with device=x.device (or use *_like functions).",
                                what=what, got=value.device, device=device))
        return value
    raise CheckFailed(_("{what} should return a torch tensor; it returned {got}.",
                        what=what, got=describe_value(value)))


def expect_shape(got, shape, what, variants=None):
    shape = tuple(shape)
    if got.shape == shape:
        return
    msg = _("{what} has shape {got}; expected {shape}.", what=what, got=got.shape, shape=shape)
    found = _diagnose(got, variants or {}, None, key=evidence_key(what))     # a shape that fits a mistake: on evidence too
    if not found and len(shape) >= 2 and got.shape == shape[:-2] + (shape[-1], shape[-2]):
        msg += _(" The last two axes look swapped.")
    elif not found and shape == ():
        msg += _(" One number is expected here: a 0-dimensional result, reduced over every axis.")
    fail(msg, found)


def expect_dtype(request, got, input_dtype, what, framework, numpy_scalar_ok=False):
    """Floating results keep the input's dtype.

    numpy_scalar_ok: the step whose code divides by a NumPy scalar (step 3: `scores / np.sqrt(d_k)`),
    where NumPy 2 promoting float32 to float64 is the reason for a float64 result. Accepted there,
    with a note, only when the values show that reason: promotion does the arithmetic in float64, so
    its results are not float32 numbers; values that all are float32 numbers were computed in
    float32 and widened afterwards (an `.astype(float)` at the end), which no step accepts.
    Everywhere else a float64 result for float32 input fails."""
    if got.dtype == str(input_dtype):
        return
    if numpy_scalar_ok and framework == "numpy" and str(input_dtype) == "float32" and got.dtype == "float64":
        if not _all_float32_numbers(got.array):
            note(request, _("{what}: float32 input gave a float64 result, computed in float64. Accepted in this "
                            "step: dividing (or multiplying) by a NumPy float64 scalar such as np.sqrt(d_k) makes "
                            "NumPy 2 promote the float32 array to float64 (so does converting the scores before "
                            "the division). `scores / math.sqrt(d_k)` keeps float32.", what=what))
            return
        raise CheckFailed(_("{what} has dtype float64, but every value is a float32 number: the arithmetic was done "
                            "in float32 and the result converted to float64 afterwards (an .astype(float), "
                            "np.float64(...) or np.asarray(..., dtype=float) at the end). Return the float32 "
                            "result as it is.", what=what))
    if str(input_dtype) == "float32" and got.dtype == "float64":
        if framework == "torch":
            cause = _("a .double(), dtype=torch.float64, or a float64 tensor created without dtype=x.dtype")
        else:
            cause = _("an .astype(float) or np.float64(...), dtype=float in a new array, or a NumPy float64 scalar "
                      "such as np.sqrt(d) in the arithmetic (NumPy 2 promotes float32 with it; math.sqrt keeps "
                      "float32)")
        raise CheckFailed(_("{what} has dtype float64; expected float32, the dtype of the input: the dtype was not "
                            "kept. float32 is chosen to halve the memory and speed up the arithmetic (and GPUs are "
                            "fastest in it); code that widens it to float64 silently doubles both, and the rest of a "
                            "float32 model would then have to convert back. Look for {cause}.",
                            what=what, cause=cause))
    raise CheckFailed(_("{what} has dtype {got}; expected {dtype}, the dtype of the input. "
                        "Avoid hard-coding a dtype (e.g. float32 or .double()) in new arrays.",
                        what=what, got=got.dtype, dtype=input_dtype))


def _all_float32_numbers(values):
    """Is every finite value exactly a float32 number (float32 results widened to float64)?"""
    import numpy as np
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    return v.size > 0 and bool(np.all(v.astype(np.float32).astype(np.float64) == v))


@dataclass
class Comparison:
    ok: bool
    n: int
    n_close: int
    worst_index: tuple = None
    worst_got: float = None
    worst_expected: float = None
    max_abs_err: float = 0.0
    bad_nonfinite: int = 0

    @property
    def share_close(self):
        return self.n_close / self.n if self.n else 1.0


def compare(got, expected, rtol, atol):
    """Element-wise closeness in float64. NaN or inf where the reference is finite never passes."""
    g = np.asarray(got, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    if g.shape != e.shape:
        return Comparison(False, e.size, 0)
    if e.size == 0:
        return Comparison(True, 0, 0)
    finite_e = np.isfinite(e)
    scale = max(1.0, float(np.sqrt(np.mean(np.square(e[finite_e]))))) if finite_e.any() else 1.0
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(g - e)
        close = err <= atol * scale + rtol * np.abs(e)
    # exact agreement covers matching infinities (e.g. -inf scores kept as -inf) and NaN == NaN
    # (only variants are ever NaN; a reference never is)
    close |= (g == e) | (np.isnan(g) & np.isnan(e))
    bad_nonfinite = int(np.sum(~np.isfinite(g) & finite_e))
    err = np.where(close, 0.0, np.where(np.isfinite(err), err, np.inf))
    worst = np.unravel_index(int(np.argmax(err)), e.shape)
    return Comparison(bool(close.all()), e.size, int(close.sum()), tuple(int(i) for i in worst),
                      float(g[worst]), float(e[worst]), float(err[worst]), bad_nonfinite)


def _band(got, tol):
    """The band a variant is matched in: looser than the pass band, so that a mistake still shows
    through float32 rounding."""
    rtol, atol = tol if tol else tolerance("float64" if got.dtype == "float64" else "float32", "composed")
    return rtol * 10, atol * 10


def _diagnose(got, variants, tol, key=None):
    """Ids of the variants (mistakes applied to the reference) that the student's output matches,
    on this input and on most inputs of the step where the student's values were
    compared with the same variant (Evidence): one coincidence names nothing."""
    band = _band(got, tol)
    found, values = [], {}
    for mid, expected in variants.items():
        expected = expected() if callable(expected) else expected
        if expected is None or tuple(np.shape(expected)) != got.shape:
            continue
        values[mid] = (expected,)
        if compare(got.array, expected, *band).ok:
            found.append(mid)
    evidence().record((got.array,), values, band, key)
    return evidence().consistent(found, key)


def named_on_evidence(got, candidates, band):
    """The ids of `candidates` ({id: a tuple of arrays, or a list of such tuples: one mistake made
    several ways}) that the student's arrays `got` (a tuple) match here, within `band` (rtol, atol),
    and on a majority of the step's inputs where they were compared (Evidence). The one door for a
    suite that names a mistake from values outside expect_close and expect_attention: this input is
    recorded, and one coincidence names nothing."""
    got = tuple(np.asarray(g) for g in got)
    chosen, found = {}, []
    for mid, ways in candidates.items():
        ways = [w for w in (ways if isinstance(ways, list) else [ways]) if w is not None]
        fits = [w for w in ways if len(w) == len(got)
                and all(np.shape(v) == np.shape(g) and compare(g, v, *band).ok for g, v in zip(got, w))]
        if fits:
            found.append(mid)
        if fits or ways:
            chosen[mid] = tuple(fits[0] if fits else ways[0])
    evidence().record(got, chosen, band)
    return evidence().consistent(found)


def computed(variants):
    """{id: (arrays,)} of the variants already computed: a function is not called for evidence (it is
    called when the values are wrong, with the check's own inputs at hand; later, the names it
    reads may hold the check's next case)."""
    return {mid: (v,) for mid, v in variants.items() if v is not None and not callable(v)}


# ------------------------------------------------------------------ evidence: most inputs, not one
class Evidence:
    """What a step's checks compared so far, for one submission: the student's values on each input
    and the variants (known mistakes applied to the reference) computed on the same input.

    A misconception is named only when its variant matches the student's values on a strict majority
    of the inputs of the step where both were compared, the ones the student got right included
    (where the variant, to be named, must agree with the reference): a match on one input among
    others that contradict it is a coincidence (an integer square root equals "no scale" where
    sqrt(d_k) < 2, and is right where d_k is a square), not a diagnosis. A variant is one
    representative of its mistake on each input (one wrong axis among several), so a miss alone does
    not clear it either. Inputs where the variant does not apply (absent, another shape) are no
    evidence."""

    def __init__(self):
        self.entries = []          # (the student's arrays, {id: the variant's arrays}, band, key)

    def record(self, got, variants, band, key=None):
        """`key`: what was compared (the student's function, see evidence_key): a mistake may live in
        one function of a step and not in another (self_attention transposing its weights while
        weighted_sum is right), so one function's right answers are no evidence about another's."""
        if variants:
            self.entries.append((tuple(got), dict(variants), band, key))

    @staticmethod
    def _matches(entry, mid):
        """True or False: the variant matched the student's values on this entry's input; None: no evidence."""
        got, variants, band, _key = entry
        value = variants.get(mid)
        if value is None or len(value) != len(got) or any(np.shape(v) != np.shape(g) for v, g in zip(value, got)):
            return None
        return all(compare(g, v, *band).ok for g, v in zip(got, value))

    def consistent(self, ids, key=None):
        """The ids among `ids` (matched on the input at hand, itself recorded) whose variant matched on
        a strict majority of the recorded inputs of the same `key` where it applied."""
        named = []
        entries = [e for e in self.entries if e[3] == key]
        for mid in ids:
            verdicts = [v for v in (self._matches(entry, mid) for entry in entries) if v is not None]
            if not verdicts or 2 * sum(verdicts) > len(verdicts):
                named.append(mid)
        return named


EVIDENCE = contextvars.ContextVar("evidence", default=None)   # set per check by suites/conftest.py


def evidence_key(what):
    """What a comparison is of, for Evidence: the checked label up to its arguments ("scale_scores"
    for "scale_scores(scores, d_k=16)", "out from self_attention(X, W_Q, W_K, W_V)" kept whole up to
    its call): the inputs vary, the function compared does not."""
    text = what if isinstance(what, str) else str(i18n.render(what, "en"))
    return text.split("(", 1)[0].strip()


def evidence():
    """The step's Evidence for the submission being graded (a throwaway one outside a suite)."""
    return EVIDENCE.get() or Evidence()


PRECISION = {"float16": 1, "bfloat16": 1, "float32": 2, "float64": 3}


def expect_close(got, expected, what, dtype, level="op", variants=None):
    """The student's values match the float64 reference within the dtype's tolerance.

    level: "op" or "composed" (see tolerances.py), or an explicit (rtol, atol).

    Values from a call that changed the caller's inputs in place fail, whatever they are.
    On failure the message says how many values match, where the worst one is, and names the
    mistake when a variant (a known mistake applied to the reference) matches instead.
    """
    expect_unchanged(got, what, _framework())
    if PRECISION.get(got.dtype, 0) < PRECISION.get(str(dtype), 0):
        raise CheckFailed(_("{what} has dtype {got}; expected {dtype}, the dtype of the input. "
                            "Lower precision loses digits the check needs: don't cast the result down.",
                            what=what, got=got.dtype, dtype=dtype))
    rtol, atol = level if isinstance(level, tuple) else tolerance(dtype, level)
    cmp = compare(got.array, expected, rtol, atol)
    key = evidence_key(what)
    if cmp.ok:         # right: evidence against each mistake computed here that differs from the reference
        evidence().record((got.array,), computed(variants or {}), _band(got, (rtol, atol)), key)
        return
    found = _diagnose(got, variants or {}, (rtol, atol), key=key)
    if cmp.bad_nonfinite:
        msg = _("{what}: {bad} of {n} values are NaN or infinite where the expected "
                "values are finite (first at index {index}).",
                what=what, bad=cmp.bad_nonfinite, n=cmp.n, index=cmp.worst_index)
    else:
        # enough digits to show where the two numbers part
        digits = 6 if abs(cmp.worst_got - cmp.worst_expected) > 1e-5 * abs(cmp.worst_expected) else 12
        msg = _("{what}: {bad} of {n} values differ from the expected ones "
                "({share} match, tolerance rtol={rtol}, atol={atol} for {dtype}). "
                "Worst at index {index}: expected {expected}, got {got}.",
                what=what, bad=cmp.n - cmp.n_close, n=cmp.n, share=f"{cmp.share_close:.0%}",
                rtol=f"{rtol:g}", atol=f"{atol:g}", dtype=dtype, index=cmp.worst_index,
                expected=f"{cmp.worst_expected:.{digits}g}", got=f"{cmp.worst_got:.{digits}g}")
    fail(msg, found)


def expect_finite(got, what, hint):
    bad = ~np.isfinite(np.asarray(got.array, dtype=np.float64))
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        raise CheckFailed(_("{what}: {bad} of {n} values are NaN or infinite (first at index {index}). {hint}",
                            what=what, bad=int(bad.sum()), n=bad.size, index=first, hint=hint))

