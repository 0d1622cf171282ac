"""Hidden suite, decoder step 2: the SwiGLU feed-forward network (torch). 10 points.

The grader builds the student's SwiGLU(16, 40) in its child process, copies its own weights in by name
(gate_proj.weight (40, 16), up_proj.weight (40, 16), down_proj.weight (16, 40)) and runs forward on x
(B=2, T=5, 16). Gate and up weights are drawn apart, so swapping them shows; x ~ N(0, 1) puts the gate
on both sides of 0, so ReLU, GELU or the sigmoid alone show against SiLU. Expected values from the
reference (reference/decoder/swiglu.py writes its arithmetic out once more, with each mistake).
"""
import numpy as np
import torch

from autograder.checks import complexity, gradients
from autograder.checks.expect import (CheckFailed, check, expect_array, expect_close, expect_dtype,
                                      expect_full_precision, expect_shape, fail, gpu_usable, named_on_evidence)
from autograder.checks.inputs import randn, rounded
from autograder.checks.memo import Remembering
from autograder.i18n import _
from autograder.reference.decoder import swiglu as _known
from solutions.decoder import step02_swiglu as ref

known = Remembering(_known)     # the references' answers, remembered for the next submission

STEP = "02_swiglu"
B, T, D, HID = 2, 5, 16, 40
MODULE = "SwiGLU"
PROBE = "grader-probe.not-a-parameter"
INIT = {"dim": D, "hidden_dim": HID}
SHAPES = {"gate_proj.weight": (HID, D), "up_proj.weight": (HID, D), "down_proj.weight": (D, HID)}


def _params(key, dtype="float32", d=D, hid=HID):
    shapes = {"gate_proj.weight": (hid, d), "up_proj.weight": (hid, d), "down_proj.weight": (d, hid)}
    return {n: rounded(randn((STEP, key, n), s, s[1] ** -0.5), dtype)[1] for n, s in shapes.items()}


def _structure(student):
    _unused, shapes = student.module(MODULE, INIT, {PROBE: np.zeros(1)}, np.zeros((1, D)))
    have = {str(k): tuple(v) for k, v in shapes.items() if k != PROBE}
    if have != SHAPES:
        listing = ", ".join(f"{k} {tuple(s)}" for k, s in list(have.items())[:12]) or _("no parameters")
        fail(_("{module} should have exactly the parameters {expected}; yours has: {listing}. Define "
               "self.gate_proj, self.up_proj = nn.Linear(dim, hidden_dim, bias=False) and self.down_proj = "
               "nn.Linear(hidden_dim, dim, bias=False): the grader loads its weights by these names.",
               module=f"{MODULE}({D}, {HID})", expected=", ".join(f"{k} {s}" for k, s in SHAPES.items()),
               listing=listing))


def _run(student, request, key, dtype="float64", device=None, student_=None, shape=(B, T, D)):
    x_low, x64 = rounded(randn((STEP, key, "x"), shape), dtype)
    params = _params(key, "float32" if dtype == "float64" else dtype)
    what = f"{MODULE}({D}, {HID}).forward(x)"
    if dtype != "float64":
        what = _("{what} in {dtype}", what=what, dtype=dtype)
    value, _shapes = (student_ or student).module(MODULE, INIT, params, x_low, dtype=dtype)
    if value is None:
        _structure(student)
        fail(_("{what}: the grader could not load its parameters into your module.", what=what))
    out = expect_array(value, what, "torch", device=device)
    expect_shape(out, x64.shape, what)
    expect_dtype(request, out, dtype, what, "torch")
    expected = known.ffn(params, x64).numpy()
    try:
        expect_close(out, expected, what, dtype, "composed")
    except CheckFailed as failure:
        found = named_on_evidence((out.array,), known.mistakes(params, x64), (1e-3, 1e-4)) if device is None else []
        fail(failure.message, found)


@check("2.1", points=1, kind="structure")
def test_structure(student):
    """SwiGLU(dim, hidden_dim) has gate_proj, up_proj (hidden_dim, dim) and down_proj (dim, hidden_dim), without bias"""
    _structure(student)


@check("2.2", points=4, kind="numbers")
def test_float64(student, request):
    """forward(x) in float64: down_proj(silu(gate_proj(x)) * up_proj(x)), x (B, T, dim) and x (dim,)"""
    x = randn((STEP, "2.2 fp", "x"), (B, T, D))
    expect_full_precision(student, student.module_request(MODULE, INIT, _params("2.2 fp"), x),
                          f"{MODULE}({D}, {HID}).forward(x)")
    for key in ("2.2", "2.2 again"):
        _run(student, request, key)
    _run(student, request, "2.2 vector", shape=(D,))         # no leading dimension


@check("2.3", points=1, kind="numbers")
def test_float32(student, request):
    """forward(x) in float32: dtype kept, values right"""
    _run(student, request, "2.3", "float32")


def _reference_forward():
    mod = ref.SwiGLU(D, HID).double()
    names = list(SHAPES)

    def forward(x, *ws):
        return (torch.func.functional_call(mod, dict(zip(names, ws)), (x,)),)
    return forward


@check("2.4", points=2, kind="gradients")
def test_gradients(student):
    """Gradients w.r.t. x and the three weights match the reference's (float64), and gradcheck passes"""
    params = {n: randn((STEP, "2.4", n), s, s[1] ** -0.5) for n, s in SHAPES.items()}
    x = randn((STEP, "2.4", "x"), (B, T, D))
    d_out = randn((STEP, "2.4", "d_out"), (B, T, D))
    s_params = {n: randn((STEP, "2.4 small", n), s) for n, s in
                {"gate_proj.weight": (3, 4), "up_proj.weight": (3, 4), "down_proj.weight": (4, 3)}.items()}
    s_x = randn((STEP, "2.4 small", "x"), (1, 2, 4))
    what = f"{MODULE}({D}, {HID}).forward(x)"
    got = gradients.run_backward(student, gradients.module_target(MODULE, INIT, params, x), [d_out],
                                 gradients.module_target(MODULE, {"dim": 4, "hidden_dim": 3}, s_params, s_x), what)
    if got.value is None:
        _structure(student)
        fail(_("{what}: the grader could not load its parameters into your module.", what=what))
    refs, expected = gradients.reference_gradients(_reference_forward(), {"x": x, **params}, [d_out])
    out = expect_array(got.value, what, "torch")
    expect_shape(out, refs[0].shape, what)
    gradients.expect_gradients(got, [("out", out, refs[0])], expected, what, gradients.small_case(1, 2, 4))


@check("2.5", points=2, kind="complexity")
def test_complexity(student, request):
    """Vectorised (no Python loop over tokens or batch entries), and three matrix products' multiply-adds, no more"""
    what = f"{MODULE}({D}, {HID}).forward(x)"
    params = _params("2.5")

    def measure(B, T):
        x = randn((STEP, "2.5", B, T), (B, T, D))
        return student.measure(student.module_request(MODULE, INIT, params, x), what)
    runs = complexity.expect_vectorised(request, measure, what, {"B": 2, "T": 8}, {"T": (8, 16, 32), "B": (2, 3, 4)})
    largest = max(runs, key=lambda k: dict(k)["T"] * dict(k)["B"])
    sizes = dict(largest)
    complexity.expect_flops(runs[largest], 3 * sizes["B"] * sizes["T"] * D * HID, what)


@check("2.6", points=0, kind="device")
def test_cuda(student, cuda, request):
    """On CUDA, float32 and bfloat16: the output stays on the GPU in the input's dtype and matches the reference"""
    with gpu_usable():
        for dtype in ("float32", "bfloat16"):
            _run(student, request, "2.6 " + dtype, dtype, device=cuda,
                 student_=student.on(cuda, cast=None if dtype == "float32" else dtype))
