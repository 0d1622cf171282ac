"""Complexity and forbidden shortcuts, judged here in the grader from the child's counts.

The student's code runs in its child with the meters of child/meters.py on (`Student.measure`);
what comes back is plain counts, checked by `sandbox.protocol.decode_measurement`. The rules, all by
counts and never by the clock, so the same submission always gets the same result:

- Vectorised: the lines of the student's own code that ran, the function calls made (numpy's
  Python code included) and the tensor operations must not grow with the sequence length T or
  the batch size B. Each is measured at three sizes of one axis, the others fixed; a count that
  rises at every step is a loop over that axis (`not-vectorized`). The number of heads is grown
  on its own: in step 6 a loop over heads (the lesson's demo has one) is told in a note and costs
  nothing; in step 7 it costs the complexity check.
- Memory: the peak bytes the call allocated stay within FACTOR times the bytes of the reference's
  results on the same inputs, plus SLACK for Python's own objects. The reference needs about
  2 to 4 times its results at the sizes used; a (..., T, T, d) intermediate, what broadcasting
  the weights against V and summing builds, is T times the result of the weighted sum and fails.
- Cost (torch steps): the multiply-adds of the matrix products (torch's flop counter) stay within
  FLOP_FACTOR times the reference's. That counter misses elementwise products and cannot tell a
  loop from one batched product, so it only catches work done more than once; the counts above
  catch the loops.
- Forbidden shortcuts: per step, the APIs in forbidden_apis.toml must not be called while the
  code runs (`forbidden-api`, naming the call).

Why the reference is not measured in a child like the student: its source must never enter the
student's process (the code there could print it into the feedback). The memory allowance is
therefore stated in terms of the reference's results, computed here, and its FLOPs are counted
here with the very same counter (child/meters.py, a torch dispatch mode: per thread, so nothing
else the grader does can leak into the count).

The meters run in the student's process, and every call of the student's code runs under them,
measured or not (`Student._watched`): the code cannot tell a measured call by looking at the hooks,
and a forbidden API called in any earlier call of the step counts in the api check. A submission
can switch them off or break them: a tracer or profiler removed, tracemalloc stopped, the torch
modes popped, the meters' code or torch's flop registry edited is reported, and so is a meter that
fails; then the check fails as "could not be measured", never as the grader's internal error. One
that edits the meters' counts in memory and puts everything back can hide a loop; that wins the
complexity or api points only, never a numbers point (docs/security-grader.md).
"""
import functools
import re
import sys
from pathlib import Path

from autograder.checks.expect import CheckFailed, fail, note
from autograder.i18n import _
from autograder.checks.memo import remembered
from autograder.sandbox.problems import StudentRaised

if sys.version_info >= (3, 11):
    import tomllib
else:                                    # pragma: no cover - Python 3.10
    import tomli as tomllib

FACTOR = 8                  # memory allowance: this many times the bytes of the reference's results ...
SLACK = 256 << 10           # ... plus this much for Python's own objects (tracemalloc sees those too)
FLOP_FACTOR = 2             # multiply-adds allowed, in multiples of the reference's
METRICS = ("lines", "calls", "ops")

FORBIDDEN_FILE = Path(__file__).with_name("forbidden_apis.toml")
# the steps whose suite has an api check: only these may list forbidden APIs
API_STEPS = ("04_softmax", "06_multi_head", "07_full_module", "03_grouped_query", "01_masks", "02_cross_attention",
             "05_kv_cache", "06_flash_attention")
DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+")


# ------------------------------------------------------------------ forbidden APIs
@functools.lru_cache(maxsize=None)
def _load_forbidden(path):
    """{step stem: (dotted names)} from the instructor's file, checked."""
    with open(path, "rb") as f:
        data = tomllib.load(f)
    out = {}
    for stem, table in data.items():
        if stem not in API_STEPS:
            raise ValueError(f"{path}: [{stem}] is not a step with an api check; only "
                             f"{', '.join(API_STEPS)} have one, so names listed for {stem} would never be "
                             "looked for. Remove the section (or add an api check to that step's suite "
                             "and to complexity.API_STEPS).")
        if not isinstance(table, dict) or set(table) != {"forbidden"} or not isinstance(table["forbidden"], list):
            raise ValueError(f"{path}: [{stem}] must hold exactly one key, forbidden = [\"dotted.name\", ...]")
        for name in table["forbidden"]:
            if not isinstance(name, str) or not DOTTED.fullmatch(name):
                raise ValueError(f"{path}: [{stem}] forbidden: {name!r} is not a dotted name such as "
                                 "\"torch.nn.functional.softmax\"")
        out[stem] = tuple(table["forbidden"])
    return out


def forbidden_apis(stem, path=FORBIDDEN_FILE):
    """The dotted names step `stem` may not call (forbidden_apis.toml); () when none are listed."""
    if stem not in API_STEPS:
        raise ValueError(f"{stem} has no api check (only {', '.join(API_STEPS)} have one)")
    return _load_forbidden(str(path)).get(stem, ())


def expect_no_forbidden(measurements, what, names):
    """None of `names` was called in any of the measured calls."""
    _expect_measured(measurements, what)
    called = []
    for m in measurements:
        called += [n for n in m.forbidden if n not in called]
    if called:
        fail(_("{what} called {calls}, which this step asks you to write yourself "
               "(off-limits here: {listed}).", what=what, calls=", ".join(called), listed=", ".join(names)),
             ["forbidden-api"])


# ------------------------------------------------------------------ measured at all?
def _expect_measured(measurements, what):
    for m in measurements:
        if m.errors:
            # The meters run in the student's process, where its code can reach and break them (edit
            # torch's flop registry, replace a module they read): honest code never makes them fail
            # (tests/child/test_meters.py), so a failure there is charged to this check, with what it means.
            raise CheckFailed(_("{what}: the grader's counters failed {n} times while your code ran, so it could "
                                "not be measured. Does your code change torch, numpy or the interpreter's "
                                "state (monkeypatching, editing registries)?", what=what, n=m.errors))
        if not m.ran:
            raise CheckFailed(_("{what} could not be measured: the grader could not load its parameters "
                                "into your module (the structure checks say why).", what=what))
        if m.tampered:
            raise CheckFailed(_("{what}: the grader's counters were switched off while your code ran ({how}), "
                                "so it could not be measured. A submission must not call "
                                "sys.settrace, sys.setprofile or tracemalloc, nor change torch's mode stacks.",
                                what=what, how=", ".join(m.tampered)))


# ------------------------------------------------------------------ vectorised
def growing(values):
    """True when every value is larger than the one before: a count that follows the size."""
    return all(b > a for a, b in zip(values, values[1:]))


def _counts_text(metric, values):
    counts = ", ".join(str(v) for v in values)
    if metric == "lines":
        return _("ran {counts} lines of its own code", counts=counts)
    if metric == "calls":
        return _("made {counts} function calls", counts=counts)
    return _("ran {counts} tensor operations", counts=counts)


def _growth_message(axis, what, sizes, did, heads):
    sizes = ", ".join(str(s) for s in sizes)
    if axis == "T":
        return _("{what}: at sequence lengths {sizes} your code {did}. The count grows with the length, so "
                 "some Python code runs once per position: is there a loop (for, a comprehension, "
                 "np.apply_along_axis) over the tokens? Whole-array operations (@, broadcasting, "
                 "sum(axis=..., keepdims=True)) handle every position at once.", what=what, sizes=sizes, did=did)
    if axis == "B":
        return _("{what}: at batch sizes {sizes} your code {did}. The count grows with the batch, so some "
                 "Python code runs once per batch entry: is there a loop over the batch? @ and broadcasting "
                 "work on leading batch axes unchanged.", what=what, sizes=sizes, did=did)
    if heads == "note":
        return _("Note: with {sizes} heads your code {did}: it loops over the heads, as the lesson's demo "
                 "does. That costs nothing in this step; in step 7, the module a real model would use, all "
                 "heads must run at once (split the heads, one batched @, merge them).", sizes=sizes, did=did)
    return _("{what}: with {sizes} heads your code {did}. The count grows with the number of heads, so it "
             "loops over them. The module a real model uses runs all heads at once: view the projections "
             "as (B, T, h, head_dim), transpose to (B, h, T, head_dim) and use one batched @ for every "
             "head.", what=what, sizes=sizes, did=did)


def expect_vectorised(request, measure, what, base, grow, heads="costs", optional=()):
    """The student's counts do not grow along any axis of `grow`.

    measure(**sizes) -> Measurement for inputs of those sizes (e.g. B=2, T=16).
    base: the sizes every run starts from; grow: {axis ("T", "B" or "h"): three sizes}.
    heads: "costs" (a loop over heads fails the check) or "note" (it passes, with a note).
    optional: axes not judged, with a note, when the code raises on their inputs (numpy code
    that cannot take batch axes: the checks with batch axes already charge for that).
    Returns {sizes tuple: Measurement} for reuse (the memory check takes the largest).
    """
    runs = {}
    for axis, sizes in grow.items():
        series = []
        try:
            for n in sizes:
                key = tuple(sorted(dict(base, **{axis: n}).items()))
                if key not in runs:
                    runs[key] = measure(**dict(key))
                    _expect_measured([runs[key]], what)
                series.append(runs[key])
        except StudentRaised as raised:
            if axis not in optional or raised.is_stub:
                raise
            note(request, _("Note: {what} raised {error} on inputs with batch axes, so its work was not "
                            "measured along the batch (the checks with batch axes say more).",
                            what=what, error=raised.error.get("type", "an error")))
            continue
        metric = next((k for k in METRICS if growing([getattr(m, k) for m in series])), None)
        if metric is None:
            continue
        did = _counts_text(metric, [getattr(m, metric) for m in series])
        if axis == "h" and heads == "note":
            note(request, _growth_message(axis, what, sizes, did, heads))
            continue
        fail(_growth_message(axis, what, sizes, did, heads), ["not-vectorized"])
    return runs


# ------------------------------------------------------------------ memory and cost
def nbytes(*arrays):
    """Bytes of the arrays or tensors given (the reference's results)."""
    return sum(int(a.nbytes) for a in arrays)


def _size_text(n):
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{round(n / 1024)} KiB"     # units, not words


def expect_memory(m, result_bytes, what, shapes, misconception=None):
    """The call's peak memory stays within FACTOR x the bytes of the reference's results (+ SLACK).

    misconception: a misconception id to name when it does not (the one mistake that explains it there).
    """
    _expect_measured([m], what)
    if m.peak_bytes <= FACTOR * result_bytes + SLACK:
        return
    found = [misconception] if misconception else []
    # the ratio, not the bytes: a few KiB of Python objects vary from run to run, the ratio does not
    text = _("{what} on inputs of shapes {shapes} held about {ratio} times the memory its results take "
             "({result}) at its peak; up to {factor} times is allowed. Is an intermediate much larger than "
             "the inputs and results built by broadcasting, such as (..., T, T, d)? A matrix product (@) "
             "never builds one.", what=what, shapes=shapes, ratio=round(m.peak_bytes / result_bytes),
             result=_size_text(result_bytes), factor=FACTOR)
    fail(text, found)


def expect_flops(m, reference_flops, what):
    """The matrix products' multiply-adds stay within FLOP_FACTOR x the reference's on the same inputs."""
    _expect_measured([m], what)
    if not reference_flops or m.flops <= FLOP_FACTOR * reference_flops:
        return
    raise CheckFailed(_("{what} did {ratio} times the multiply-adds of the reference on the same inputs "
                        "({flops} against {reference}). Is something computed more than once, such as the "
                        "full projections inside a loop over the heads?", what=what,
                        ratio=f"{m.flops / reference_flops:.1f}", flops=f"{m.flops:,}",
                        reference=f"{reference_flops:,}"))


@remembered
def reference_flops(fn, *args, **kwargs):
    """The multiply-adds of trusted code (a reference) on these inputs, counted as in the child."""
    import inspect
    from autograder.child import meters
    # a remembering wrapper (memo.py) may answer from memory, doing no multiply-adds: count the reference
    return meters.flops_of(inspect.unwrap(fn), *args, **kwargs)


def shapes_text(*arrays):
    """"(2, 64, 64), (2, 64, 32)": the shapes of the inputs a measurement used."""
    return ", ".join(str(tuple(a.shape)) for a in arrays)



# ------------------------------------------------------------------ the numpy steps' plan
# B = 0: a single sequence, no batch axis (what every numpy step takes); memory is judged at the largest T
NUMPY_BASE = {"B": 0, "T": 32}
NUMPY_GROW = {"T": (32, 64, 128), "B": (2, 3, 4)}


def expect_numpy_step(request, student, name, make_inputs, reference, what, misconception=None):
    """The complexity check of a numpy step for the student's function `name`.

    make_inputs(B, T) -> the arguments (seeded arrays: sequence length T, a leading batch axis of
    B when B > 0, none when B == 0);
    reference(*args) -> the reference's result(s), whose bytes set the memory allowance.
    """
    def measure(B, T):
        return student.measure(student.call_request(name, *make_inputs(B, T)), what)
    runs = expect_vectorised(request, measure, what, NUMPY_BASE, NUMPY_GROW, optional=("B",))
    sizes = dict(NUMPY_BASE, T=NUMPY_GROW["T"][-1])
    args = make_inputs(**sizes)
    results = reference(*args)
    results = results if isinstance(results, tuple) else (results,)
    expect_memory(runs[tuple(sorted(sizes.items()))], nbytes(*results), what,
                  shapes_text(*[a for a in args if hasattr(a, "shape")]), misconception)
