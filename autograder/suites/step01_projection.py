"""Hidden suite, step 1: project_qkv(X, W_Q, W_K, W_V) -> (Q, K, V). 10 points."""
import numpy as np

from autograder.checks import complexity
from autograder.checks.expect import (CheckFailed, check, expect_array, expect_close, expect_dtype,
                                      expect_seq, expect_shape)
from autograder.i18n import _
from autograder.checks.inputs import randn, rounded
from autograder.checks.memo import Remembering
from solutions import step01_projection

ref = Remembering(step01_projection)     # the references' answers, remembered for the next submission

STEP = "01_projection"
D_MODEL, D_K, D_V = 12, 6, 4     # d_k != d_v so V cannot pass for Q or K
NAMES = ("Q", "K", "V")


def _inputs(key, lead=(2, 3), T=5):
    X = randn((STEP, key, "X"), lead + (T, D_MODEL))
    Ws = [randn((STEP, key, n), (D_MODEL, d), scale=D_MODEL ** -0.5) for n, d in zip(NAMES, (D_K, D_K, D_V))]
    return X, Ws


def _project(student, X, Ws, request=None, dtype="float64"):
    """Call the student's project_qkv and check types, shapes (and dtype); returns the 3 arrays."""
    what = "project_qkv(X, W_Q, W_K, W_V)"
    items = expect_seq(student.call("project_qkv", X, *Ws), 3, what, NAMES)
    got = []
    # every product X @ W_a, so a result computed with the wrong matrix can be recognised
    products = {n: X.astype(np.float64) @ W.astype(np.float64) for n, W in zip(NAMES, Ws)}
    for name, value, W in zip(NAMES, items, Ws):
        arr = expect_array(value, _("{name} from {what}", name=name, what=what), "numpy")
        expect_shape(arr, X.shape[:-1] + (W.shape[1],), f"{name}",
                     variants={"projection-swapped": _other_product(name, arr.shape, products)})
        if request is not None:
            expect_dtype(request, arr, dtype, name, "numpy")
        got.append(arr)
    return got, products


def _other_product(name, shape, products):
    """X @ W for a matrix other than W_name, of the given shape: what a swapped projection gives."""
    return next((p for n, p in products.items() if n != name and p.shape == tuple(shape)), None)


def _expect_values(got, products, dtype):
    for name, arr in zip(NAMES, got):
        expect_close(arr, products[name], f"{name} = X @ W_{name}", dtype,
                     variants={"projection-swapped": _other_product(name, arr.shape, products)})


@check("1.1", points=1, kind="shape")
def test_shapes(student):
    """Returns (Q, K, V) with shapes (..., T, d_k), (..., T, d_k), (..., T, d_v)"""
    X, Ws = _inputs("1.1")
    _project(student, X, Ws)


@check("1.2", points=3, kind="numbers")
def test_numbers_float64(student):
    """Q = X @ W_Q, K = X @ W_K, V = X @ W_V, float64, two leading batch dimensions"""
    X, Ws = _inputs("1.2")
    got, _ = _project(student, X, Ws)
    _expect_values(got, {n: W for n, W in zip(NAMES, ref.project_qkv(X, *Ws))}, "float64")


@check("1.3", points=2, kind="numbers")
def test_numbers_float32(student, request):
    """The same in float32 (dtype kept)"""
    X, Ws = _inputs("1.3")
    X32, X64 = rounded(X, "float32")
    pairs = [rounded(W, "float32") for W in Ws]
    got, _ = _project(student, X32, [p[0] for p in pairs], request, "float32")
    expected = ref.project_qkv(X64, *[p[1] for p in pairs])
    _expect_values(got, dict(zip(NAMES, expected)), "float32")


@check("1.4", points=1, kind="numbers")
def test_no_batch(student):
    """A single sequence X of shape (T, d_model)"""
    X, Ws = _inputs("1.4", lead=())
    got, _ = _project(student, X, Ws)
    _expect_values(got, dict(zip(NAMES, ref.project_qkv(X, *Ws))), "float64")


@check("1.5", points=1, kind="numbers")
def test_single_token(student):
    """A sequence of one token (T = 1)"""
    X, Ws = _inputs("1.5", lead=(2,), T=1)
    got, _ = _project(student, X, Ws)
    _expect_values(got, dict(zip(NAMES, ref.project_qkv(X, *Ws))), "float64")


@check("1.6", points=1, kind="property")
def test_tokens_independent(student):
    """Each token is projected on its own: reordering the tokens reorders Q, K and V"""
    X, Ws = _inputs("1.6")
    order = np.array([3, 0, 4, 1, 2])
    got, _products = _project(student, X, Ws)
    again, _products = _project(student, X[..., order, :], Ws)
    for name, a, b in zip(NAMES, got, again):
        if not np.allclose(a.array[..., order, :], b.array, rtol=1e-10, atol=1e-12):
            raise CheckFailed(_("{name}: reordering the tokens of X should only reorder the rows of {name}. "
                                "Each row of X is projected by the same matrix, independently of the others.",
                                name=name))


# ------------------------------------------------------------------ complexity (counted, never timed)
def _complexity_inputs(B, T):
    """X ([B,] T, 64) and W_Q, W_K (64, 32), W_V (64, 24): wide enough that an (..., T, d_model, d_k)
    intermediate from broadcasting X against W is far over the memory allowance."""
    X = randn((STEP, "1.7", B, T, "X"), ((B,) if B else ()) + (T, 64))
    return [X] + [randn((STEP, "1.7", n), (64, d), scale=0.125) for n, d in zip(NAMES, (32, 32, 24))]


@check("1.7", points=1, kind="complexity")
def test_vectorised(student, request):
    """Vectorised: no Python loop over tokens or batch entries, memory within a constant factor of the results"""
    complexity.expect_numpy_step(request, student, "project_qkv", _complexity_inputs, ref.project_qkv,
                                 "project_qkv(X, W_Q, W_K, W_V)")
