"""Hidden suite, decoder step 1: RMSNorm (torch). 10 points.

The grader builds the student's RMSNorm(dim, eps) in its child process, copies its own weight in by
name ("weight", shape (dim,)) and runs forward on x (B=2, T=5, dim=16). Inputs of mean square near
eps (x ~ N(0, 0.002^2) at eps 1e-06, N(0, 1) at eps 0.5) make eps inside or outside the root differ;
float16 inputs above 256 make a norm computed in float16 overflow. Expected values from the reference
(reference/decoder/rmsnorm.py writes its arithmetic out once more, with each mistake).
"""
import numpy as np
import torch

from autograder.checks import complexity, gradients
from autograder.checks.expect import (CheckFailed, check, expect_array, expect_close, expect_dtype, expect_full_precision,
                                      expect_shape, fail, gpu_usable, named_on_evidence)
from autograder.checks.inputs import randn, rounded
from autograder.checks.memo import Remembering
from autograder.i18n import _
from autograder.reference.decoder import rmsnorm as _known
from solutions.decoder import step01_rmsnorm as ref

known = Remembering(_known)     # the references' answers, remembered for the next submission

STEP = "01_rmsnorm"
B, T, D = 2, 5, 16
MODULE = "RMSNorm"
PROBE = "grader-probe.not-a-parameter"     # a name no module has: the child then skips forward()


def _weight(key, dtype="float32"):
    return rounded(1 + 0.5 * randn((STEP, key, "weight"), (D,)), dtype)[1]


def _what(eps, dtype="float64"):
    text = f"{MODULE}({D}, eps={eps:g}).forward(x)"
    return text if dtype == "float64" else _("{what} in {dtype}", what=text, dtype=dtype)


def _init(eps):
    return {"dim": D, "eps": float(eps)}


def _structure(student):
    _unused, shapes = student.module(MODULE, {"dim": D}, {PROBE: np.zeros(1)}, np.zeros((1, D)))
    have = {str(k): tuple(v) for k, v in shapes.items() if k != PROBE}
    if have != {"weight": (D,)}:
        listing = ", ".join(f"{k} {tuple(s)}" for k, s in list(have.items())[:12]) or _("no parameters")
        fail(_("{module} should have exactly one parameter, weight of shape {shape}; yours has: {listing}. Make "
               "self.weight = nn.Parameter(torch.ones(dim)): the grader loads its scale by this name, and an "
               "optimiser trains only parameters.", module=f"{MODULE}({D})", shape=(D,), listing=listing))


def _run(student, request, key, eps, scale, dtype="float64", student_=None, weight=True, shape=(B, T, D)):
    """The student's output against the reference's, named when a mistake explains it."""
    x_low, x64 = rounded(randn((STEP, key, "x"), shape, scale), dtype)
    w = _weight(key, "float32" if dtype == "float64" else dtype)
    params = {"weight": w} if weight else {}
    init = _init(eps) if eps != 1e-06 else {"dim": D}
    what = _what(eps, dtype)
    value, _shapes = (student_ or student).module(MODULE, init, params, x_low, dtype=dtype)
    if value is None:
        _structure(student)
        fail(_("{what}: the grader could not load its parameters into your module.", what=what))
    out = expect_array(value, what, "torch", device=getattr(student_, "device", None))
    expect_shape(out, x64.shape, what)
    expect_dtype(request, out, dtype, what, "torch")
    w64 = w if weight else np.ones(D)
    if dtype in ("float16", "bfloat16"):
        x_t = torch.from_numpy(x64).to(getattr(torch, dtype))
        expected = known.norm(x_t, torch.from_numpy(w64).to(getattr(torch, dtype)), eps)
        wrong = known.norm(x_t, torch.from_numpy(w64).to(getattr(torch, dtype)), eps, "rmsnorm-half-precision")
        try:
            expect_close(out, expected, what, dtype)
        except CheckFailed as failure:
            found = named_on_evidence((out.array,), {"rmsnorm-half-precision": (wrong,)}, (1e-2, 1e-2)) \
                if not np.allclose(wrong, expected, rtol=1e-2, atol=1e-2) else []
            fail(failure.message + "\n" + _("float16 and bfloat16 inputs are normalised in float32 (x.float()) and "
                                             "the result cast back to x's dtype."), found)
        return out
    expect_close(out, known.norm(x64, w64, eps), what, dtype, variants=known.mistakes(x64, w64, eps))
    return out


# ------------------------------------------------------------------ graded checks
@check("1.1", points=1, kind="structure")
def test_structure(student, request):
    """RMSNorm(dim) has exactly one parameter, weight (dim,), starting at ones; eps defaults to 1e-06"""
    _structure(student)
    _run(student, request, "1.1", 1e-06, 1.0, weight=False)


@check("1.2", points=3, kind="numbers")
def test_float64(student, request):
    """forward(x) in float64: x / sqrt(mean(x**2) + eps) * weight, at the default eps on small inputs and at eps=0.5, x (B, T, dim) and x (dim,)"""
    x = randn((STEP, "1.2 fp", "x"), (B, T, D))
    expect_full_precision(student, student.module_request(MODULE, {"dim": D}, {"weight": _weight("1.2 fp")}, x),
                          _what(1e-06))
    _run(student, request, "1.2 small", 1e-06, 0.002)
    _run(student, request, "1.2", 0.5, 1.0)
    _run(student, request, "1.2 ordinary", 1e-06, 1.0)
    _run(student, request, "1.2 vector", 1e-06, 1.0, shape=(D,))         # no leading dimension


@check("1.3", points=1, kind="numbers")
def test_float32(student, request):
    """forward(x) in float32: dtype kept, values right"""
    _run(student, request, "1.3", 0.5, 1.0, dtype="float32")
    _run(student, request, "1.3 small", 1e-06, 0.002, dtype="float32")


@check("1.4", points=2, kind="numbers")
def test_half_precision(student, request):
    """float16 (values up to about 1000, whose squares overflow float16) and bfloat16: computed in float32, the result cast back to the input's dtype"""
    for dtype in ("float16", "bfloat16"):
        _run(student, request, "1.4 " + dtype, 1e-06, 400.0, dtype=dtype, student_=student.on("cpu", cast=dtype))


def _reference_forward(eps):
    """forward(x, weight) -> (out,) of the reference module, for gradients.reference_gradients."""
    mod = ref.RMSNorm(D, eps).double()

    def forward(x, weight):
        return (torch.func.functional_call(mod, {"weight": weight}, (x,)),)
    return forward


@check("1.5", points=2, kind="gradients")
def test_gradients(student):
    """Gradients w.r.t. x and weight match the reference's (float64), and gradcheck passes"""
    x = randn((STEP, "1.5", "x"), (B, T, D))
    w = randn((STEP, "1.5", "weight"), (D,), 0.5) + 1
    d_out = randn((STEP, "1.5", "d_out"), (B, T, D))
    s_x, s_w = randn((STEP, "1.5 small", "x"), (1, 2, 4)), randn((STEP, "1.5 small", "w"), (4,), 0.5) + 1
    what = _what(0.5)
    got = gradients.run_backward(student, gradients.module_target(MODULE, _init(0.5), {"weight": w}, x), [d_out],
                                 gradients.module_target(MODULE, {"dim": 4, "eps": 0.5}, {"weight": s_w}, s_x), what)
    if got.value is None:
        _structure(student)
        fail(_("{what}: the grader could not load its parameters into your module.", what=what))
    refs, expected = gradients.reference_gradients(_reference_forward(0.5), {"x": x, "weight": w}, [d_out])
    out = expect_array(got.value, what, "torch")
    expect_shape(out, refs[0].shape, what)
    gradients.expect_gradients(got, [("out", out, refs[0])], expected, what, gradients.small_case(1, 2, 4))


@check("1.6", points=1, kind="complexity")
def test_complexity(student, request):
    """Vectorised: no Python loop over tokens or batch entries"""
    what = _what(1e-06)

    def measure(B, T):
        x = randn((STEP, "1.6", B, T), (B, T, D))
        return student.measure(student.module_request(MODULE, {"dim": D}, {"weight": _weight("1.6")}, x), what)
    complexity.expect_vectorised(request, measure, what, {"B": 2, "T": 8}, {"T": (8, 16, 32), "B": (2, 3, 4)})


# ------------------------------------------------------------------ GPU (no points; skipped without CUDA)
@check("1.7", points=0, kind="device")
def test_cuda(student, cuda, request):
    """On CUDA, float32, float16 and bfloat16: the output stays on the GPU in the input's dtype and matches the reference"""
    with gpu_usable():
        for dtype in ("float32", "float16", "bfloat16"):
            _run(student, request, "1.7 " + dtype, 1e-06, 1.0, dtype=dtype,
                 student_=student.on(cuda, cast=None if dtype == "float32" else dtype))
