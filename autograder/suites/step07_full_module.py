"""Hidden suite, step 7: SingleHeadSelfAttention and MultiHeadSelfAttention as nn.Modules. 10 points.

The grader builds the student's module in its child process, copies its own parameters in by
name (W_q.weight, q_proj.bias, ...), and runs forward. B=2, T=5, d_model=12 and 3 or 4 heads, so
head_dim (4 or 3) differs from T and from d_model. Weights are ~ N(0, 1/d_model): scaled scores of
order 1, an unsaturated softmax, so every scaling mistake shows in the numbers.

Parameters are sent as values exactly representable in float32 (or float16 / bfloat16 for those
checks): the child copies them into the module's own (float32) parameters before converting the
module to the check's dtype, so the reference uses exactly the values the module holds.
"""
import functools
import math

import numpy as np
import torch

from autograder.checks import attention, complexity, gradients
from autograder.checks.attention import expect_attention
from autograder.reference import variants
from autograder.checks.expect import (check, example, expect_dtype, expect_full_precision, fail, gpu_usable,
                                      precision_lost)
from autograder.i18n import _, join
from autograder.checks.inputs import randn, rounded
from autograder.checks.memo import remembered
from solutions import step05_weighted_sum
from solutions import step07_full_module as ref

STEP = "07_full_module"
B, T, D, H = 2, 5, 12, 3
SINGLE, MULTI = "SingleHeadSelfAttention", "MultiHeadSelfAttention"
PROBE = "grader-probe.not-a-parameter"     # a name no module has: the child then skips forward()
NAMES = ("out", "attn_weights")            # forward's two results


def _init(cls, num_heads=H, bias=None):
    if cls == SINGLE:
        return {"d_model": D}
    init = {"d_model": D, "num_heads": num_heads}
    if bias is not None:
        init["bias"] = bias
    return init


def _call_text(cls, init):
    return f"{cls}({', '.join(f'{k}={v}' for k, v in init.items())})"


# ------------------------------------------------------------------ the reference (float64, torch)
def _ref_module(cls, init):
    return getattr(ref, cls)(**init).double()


def _expected_params(cls, init):
    """{name: shape} of the reference module: the parameters the contract asks for."""
    return dict(_parameter_shapes(cls, tuple(sorted(init.items()))))


@functools.lru_cache(maxsize=None)
def _parameter_shapes(cls, init_items):
    # building a module to list its parameters costs a few ms; a warm grader asks the same every time
    return tuple((k, tuple(p.shape)) for k, p in _ref_module(cls, dict(init_items)).named_parameters())


def _params(key, cls, init, dtype="float32"):
    """Random parameters for every reference parameter, exactly representable in `dtype`.

    Weights ~ N(0, 1/D) keep the scaled scores of order 1; biases ~ N(0, 0.3^2).
    """
    out = {}
    for name, shape in _expected_params(cls, init).items():
        scale = 1 / math.sqrt(D) if name.endswith("weight") else 0.3
        out[name] = rounded(randn((STEP, key, name), shape, scale), dtype)[1]
    return out


@remembered
def _reference(cls, init, params, x64):
    mod = _ref_module(cls, init)
    own = dict(mod.named_parameters())
    with torch.no_grad():
        for name, value in params.items():
            own[name].copy_(torch.from_numpy(value))
        out, w = mod(torch.from_numpy(np.ascontiguousarray(x64, dtype=np.float64)))
    return out.numpy(), w.numpy()


def _linear(params, prefix):
    """nn.Linear's weight and bias as the (W, b) of `x @ W + b` (the convention of variants.py)."""
    return params[f"{prefix}.weight"].T, params.get(f"{prefix}.bias")


@remembered
def _mistakes(cls, init, params, x64):
    """{id: (out, attn_weights)}: the known mistakes applied to the same inputs and parameters."""
    if cls == SINGLE:
        (Wq, _), (Wk, _), (Wv, _) = (_linear(params, f"W_{n}") for n in "qkv")
        Q, K, V = step05_weighted_sum.project_qkv(x64, Wq, Wk, Wv)
        found = variants.attention_mistakes(Q, K, V, D)
        found["projection-swapped"] = variants.attend(V, K, Q, 1 / math.sqrt(D))
        return found
    (Wq, bq), (Wk, bk), (Wv, bv), (Wo, bo) = (_linear(params, p) for p in ("q_proj", "k_proj", "v_proj", "out_proj"))
    return {m: variants.multi_head(x64, Wq, Wk, Wv, Wo, init["num_heads"], bq, bk, bv, bo, mistake=m)
            for m in variants.MULTI_HEAD_MISTAKES}


# ------------------------------------------------------------------ structure
def _fmt_shape(shape):
    return "(" + ", ".join(str(n) for n in shape) + ")"


def _structure_problems(cls, init, shapes):
    """What differs between the student's parameters and the contract's: [(kind, words)], kind being
    "missing", "wrong" or "unexpected" ([] if nothing)."""
    expected = _expected_params(cls, init)
    have = {str(k): tuple(v) for k, v in shapes.items() if k != PROBE}
    missing = [k for k in expected if k not in have]
    wrong = [_("{name} has shape {got}, expected {shape}", name=k, got=_fmt_shape(have[k]), shape=_fmt_shape(s))
             for k, s in expected.items() if k in have and have[k] != s]
    unexpected = [k for k in have if k not in expected]
    problems = []
    if missing:
        problems.append(("missing", _("missing: {names}", names=", ".join(missing))))
    if wrong:
        problems.append(("wrong", _("wrong shape: {problems}", problems=join("; ", wrong))))
    if unexpected:
        shown = unexpected[:12] + (["..."] if len(unexpected) > 12 else [])
        problems.append(("unexpected", _("not in the contract: {names}", names=", ".join(shown))))
    return problems


def _layers_hint(cls, init):
    if cls == SINGLE:
        return _("self.W_q, self.W_k, self.W_v = nn.Linear(d_model, d_model, bias=False) (three of them)")
    bias = init.get("bias", True)
    if bias:
        return _("self.q_proj, self.k_proj, self.v_proj, self.out_proj = nn.Linear(d_model, d_model, bias={bias}) "
                 "(four of them)", bias=bias)
    return _("self.q_proj, self.k_proj, self.v_proj, self.out_proj = nn.Linear(d_model, d_model, bias={bias}) "
             "(four of them); with bias=False they have no bias parameters", bias=bias)


def _structure_message(cls, init, shapes):
    problems = _structure_problems(cls, init, shapes)
    if not problems:
        return None
    expected = _expected_params(cls, init)
    have = {str(k): tuple(v) for k, v in shapes.items() if k != PROBE}
    listing = ", ".join(f"{k} {_fmt_shape(s)}" for k, s in list(have.items())[:12]) or _("no parameters")
    return _("{module} should have exactly the parameters {expected}; {problems}. Your module has: {listing}. "
             "Define {layers}: the grader loads its weights by these names.",
             module=_call_text(cls, init), expected=", ".join(f"{k} {_fmt_shape(s)}" for k, s in expected.items()),
             problems=join("; ", [text for kind, text in problems]), listing=listing, layers=_layers_hint(cls, init))


def _expect_structure(student, cls, init):
    # the probe cannot fit, so the child builds the module and reports its parameters
    # without running forward(): a bug in forward() does not cost the structure points
    x = np.zeros((1, 1, D))
    _, shapes = student.module(cls, init, {PROBE: np.zeros(1)}, x)
    message = _structure_message(cls, init, shapes)
    if message:
        fail(message)


# ------------------------------------------------------------------ forward
def _forward(student, cls, init, params, x, dtype="float64", device=None, reply=None):
    """Build, load and run the student's module (or take the (value, shapes) `reply` of
    student.grad); check it returns two tensors of the right shapes."""
    what = f"{_call_text(cls, init)}.forward(x)"
    value, shapes = reply or student.module(cls, init, params, x, dtype=dtype)
    if value is None:
        fail(_structure_message(cls, init, shapes)
             or _("{what}: the grader could not load its parameters into your module.", what=what))
    wshape = (B, T, T) if cls == SINGLE else (B, init["num_heads"], T, T)
    out, w = attention.expect_outputs(value, what, (B, T, D), wshape, "torch", NAMES, device=device, heads=cls == MULTI)
    return out, w, what, shapes


def _extra_params_note(cls, init, shapes):
    unexpected = [text for kind, text in _structure_problems(cls, init, shapes) if kind == "unexpected"]
    if not unexpected:
        return None
    return _("Note: {module} has parameters the grader does not set ({names}); "
             "they keep their random initial values, which changes the output.",
             module=_call_text(cls, init), names=unexpected[0])


def _numbers(student, request, cls, init, key, dtype, device=None, cast=None, with_mistakes=True):
    x = randn((STEP, key, "x"), (B, T, D))
    x_low, x64 = rounded(x, dtype) if dtype != "float64" else (x, x)
    params = _params(key, cls, init, "float32" if dtype == "float64" else dtype)
    who = student if device is None else student.on(device, cast=cast)
    out, w, what, shapes = _forward(who, cls, init, params, x_low, dtype=dtype, device=device)
    if device is not None:
        what = _("{what} on {device} in {dtype}", what=what, device=device, dtype=dtype)
    elif dtype != "float64":
        what = _("{what} in {dtype}", what=what, dtype=dtype)
    expect_dtype(request, out, dtype, what + ": out", "torch")          # `what` is a message: composed, not rendered
    expect_dtype(request, w, dtype, what + ": attn_weights", "torch")
    if dtype == "float64":
        expect_full_precision(who, who.module_request(cls, init, params, x_low, dtype=dtype), what)
    mistakes = (lambda: _mistakes(cls, init, params, x64)) if with_mistakes else None
    expect_attention(out, w, _reference(cls, init, params, x64), what, dtype, mistakes,
                     names=NAMES, extra=_extra_params_note(cls, init, shapes))


# ------------------------------------------------------------------ graded checks
@check("7.1", points=0.5, kind="structure")
def test_single_structure(student):
    """SingleHeadSelfAttention(d_model) has W_q, W_k, W_v: nn.Linear(d_model, d_model, bias=False)"""
    _expect_structure(student, SINGLE, _init(SINGLE))


@check("7.2", points=1, kind="numbers")
def test_single_float64(student, request):
    """SingleHeadSelfAttention forward: out and attn_weights, float64"""
    _numbers(student, request, SINGLE, _init(SINGLE), "7.2", "float64")


@check("7.3", points=0.5, kind="numbers")
def test_single_float32(student, request):
    """SingleHeadSelfAttention forward, float32 (dtype kept)"""
    _numbers(student, request, SINGLE, _init(SINGLE), "7.3", "float32")


@check("7.4", points=0.5, kind="structure")
def test_multi_structure(student):
    """MultiHeadSelfAttention has q_proj, k_proj, v_proj, out_proj, with biases by default and none with bias=False"""
    _expect_structure(student, MULTI, _init(MULTI))
    _expect_structure(student, MULTI, _init(MULTI, bias=False))


@check("7.5", points=1, kind="numbers")
def test_multi_float64(student, request):
    """MultiHeadSelfAttention(12, 3, bias=True) forward: out and attn_weights, float64"""
    _numbers(student, request, MULTI, _init(MULTI, bias=True), "7.5", "float64")


@check("7.6", points=1, kind="numbers")
def test_multi_no_bias(student, request):
    """MultiHeadSelfAttention(12, 4, bias=False) forward, float64"""
    _numbers(student, request, MULTI, _init(MULTI, num_heads=4, bias=False), "7.6", "float64")


@check("7.7", points=0.5, kind="numbers")
def test_multi_float32(student, request):
    """MultiHeadSelfAttention(12, 3) forward, float32 (dtype kept)"""
    _numbers(student, request, MULTI, _init(MULTI), "7.7", "float32")


@check("7.8", points=1, kind="property")
def test_properties(student):
    """Both modules' attention weights lie in [0, 1] and each query's row sums to 1"""
    for cls, init in ((SINGLE, _init(SINGLE)), (MULTI, _init(MULTI))):
        x = randn((STEP, "7.8", cls, "x"), (B, T, D))
        params = _params("7.8", cls, init)
        _out, w, what, _shapes = _forward(student, cls, init, params, x)
        expect_full_precision(student, student.module_request(cls, init, params, x), what)
        attention.expect_rows_sum_to_one(w, f"{what}: attn_weights",
                                         wrong_axis=lambda: _mistakes(cls, init, params, x)["softmax-wrong-axis"][1])


# ------------------------------------------------------------------ gradients
SMALL_B, SMALL_T, SMALL_D, SMALL_H = 2, 3, 4, 2     # the gradcheck case: under 100 inputs


def _grad_case(key, cls, b, t, d, h):
    """init, float64 parameters ~ N(0, 1/d) (biases N(0, 0.3^2)), x, and cotangents for
    (out, attn_weights), for a module of width d (h heads for the multi-head one)."""
    init = {"d_model": d} if cls == SINGLE else {"d_model": d, "num_heads": h, "bias": True}
    params = {name: randn((STEP, key, cls, name), shape, 1 / math.sqrt(d) if name.endswith("weight") else 0.3)
              for name, shape in _expected_params(cls, init).items()}
    wshape = (b, t, t) if cls == SINGLE else (b, h, t, t)
    cotangents = [randn((STEP, key, cls, "d_out"), (b, t, d)), randn((STEP, key, cls, "d_weights"), wshape)]
    return init, params, randn((STEP, key, cls, "x"), (b, t, d)), cotangents


@check("7.14", points=1, kind="gradients")
def test_gradients(student):
    """Both modules: gradients w.r.t. x and every parameter match the reference's (float64), and gradcheck passes"""
    # both: each class has its own forward(), and either can cut its graph
    for cls in (SINGLE, MULTI):
        init, params, x, cotangents = _grad_case("7.14", cls, B, T, D, H)
        s_init, s_params, s_x, _cot = _grad_case("7.14 small", cls, SMALL_B, SMALL_T, SMALL_D, SMALL_H)
        got = gradients.run_backward(student, gradients.module_target(cls, init, params, x), cotangents,
                                     gradients.module_target(cls, s_init, s_params, s_x),
                                     f"{_call_text(cls, init)}.forward(x)")
        out, w, what, _shapes = _forward(student, cls, init, params, x, reply=(got.value, got.params))
        module = _ref_module(cls, init)
        (ref_out, ref_w), expected = gradients.reference_gradients(
            gradients.module_forward(module), {"x": x, **params}, cotangents)
        lost = precision_lost(what, student.measure(student.module_request(cls, init, params, x), what,
                                                    count=False).downcasts)
        gradients.expect_gradients(got, [("out", out, ref_out), ("attn_weights", w, ref_w)], expected, what,
                                   gradients.small_case(SMALL_B, SMALL_T, SMALL_D,
                                                        None if cls == SINGLE else SMALL_H), precision=lost)


# ------------------------------------------------------------------ GPU (no points; skipped without CUDA)
@check("7.9", points=0, kind="device")
def test_cuda_float32(student, cuda, request):
    """On CUDA, float32: both modules run on the GPU, keep float32 and match the reference"""
    with gpu_usable():
        for cls, init in ((SINGLE, _init(SINGLE)), (MULTI, _init(MULTI))):
            _numbers(student, request, cls, init, "7.9", "float32", device=cuda)


# x ~ N(0, 8^2): scores up to a few hundred, beyond exp()'s range in float16 (11) and bfloat16 (88)
HALF_X_SCALE = 8.0


def _scores(cls, init, params, x64):
    """The scaled scores the reference computes on these inputs (float64)."""
    if cls == SINGLE:
        Wq, Wk = _linear(params, "W_q")[0], _linear(params, "W_k")[0]      # no biases
        return attention.scaled_scores(x64 @ Wq, x64 @ Wk)
    h = init["num_heads"]
    (Wq, bq), (Wk, bk) = _linear(params, "q_proj"), _linear(params, "k_proj")
    return attention.scaled_scores(variants.split_heads(x64 @ Wq + (0 if bq is None else bq), h),
                                   variants.split_heads(x64 @ Wk + (0 if bk is None else bk), h))


def _expect_stable(student, request, cls, init, key, dtype, device=None, cast=None, x_scale=HALF_X_SCALE):
    """The module on large scores in `dtype` (on `device`, inputs cast to `cast`): out and attn_weights
    finite, values right (attention.expect_stable). The unstable softmax is named on the CPU only."""
    x_low, x64 = rounded(randn((STEP, key, cls, "x"), (B, T, D), x_scale), dtype)
    params = _params(key, cls, init, dtype)
    who = student if device is None else student.on(device, cast=cast)
    out, w, what, _shapes = _forward(who, cls, init, params, x_low, dtype=dtype, device=device)
    what = _("{what} on {device} in {dtype}", what=what, device=device or "cpu", dtype=dtype)
    # half precision is too coarse to tell mistakes apart at these scores: the CPU checks name them
    mistakes = (lambda: _mistakes(cls, init, params, x64)) if device is None else None
    attention.expect_stable(request, (out, w), what, dtype, _scores(cls, init, params, x64),
                            lambda level: expect_attention(out, w, _reference(cls, init, params, x64), what, dtype,
                                                           mistakes, NAMES, level=level),
                            "7.2" if cls == SINGLE else "7.5", NAMES, name_unstable=device is None,
                            global_max_hint=False)


# x ~ N(0, 30^2): scaled scores in the thousands, beyond exp()'s range in float64 (709) and float32 (88)
LARGE_X_SCALE = 30.0


@check("7.15", points=1, kind="stability")
def test_large_scores(student, request):
    """No overflow when scores reach the thousands, float64 and float32, both modules: out and attn_weights finite, values right"""
    for cls, init in ((SINGLE, _init(SINGLE)), (MULTI, _init(MULTI))):
        for dtype in ("float64", "float32"):
            _expect_stable(student, request, cls, init, "7.15", dtype, x_scale=LARGE_X_SCALE)


@check("7.10", points=0, kind="device")
def test_cuda_float16(student, cuda, request):
    """On CUDA, float16: both modules keep float16 on the GPU, match the reference and survive large scores"""
    with gpu_usable():
        for cls, init in ((SINGLE, _init(SINGLE)), (MULTI, _init(MULTI))):
            _numbers(student, request, cls, init, "7.10", "float16", device=cuda, cast="float16", with_mistakes=False)
            _expect_stable(student, request, cls, init, "7.10 large", "float16", device=cuda, cast="float16")


@check("7.11", points=0, kind="device")
def test_cuda_bfloat16(student, cuda, request):
    """On CUDA, bfloat16: both modules keep bfloat16 on the GPU, match the reference and survive large scores"""
    with gpu_usable():
        for cls, init in ((SINGLE, _init(SINGLE)), (MULTI, _init(MULTI))):
            _numbers(student, request, cls, init, "7.11", "bfloat16", device=cuda, cast="bfloat16", with_mistakes=False)
            _expect_stable(student, request, cls, init, "7.11 large", "bfloat16", device=cuda, cast="bfloat16")


# ------------------------------------------------------------------ complexity and shortcuts
GROW = {"T": (8, 16, 32), "B": (2, 3, 4)}                  # d_model 32
GROW_HEADS = (2, 4, 8)
MEMORY = {"B": 2, "T": 64, "D": 128, "h": 4}              # head_dim 32: a (B, h, T, T, head_dim) intermediate
#                                                            is 32 times the weights, far over the allowance


def _complexity_case(cls, B, T, D=32, h=4):
    """(init, params, x) for the module `cls` at these sizes, seeded by them."""
    init = {"d_model": D} if cls == SINGLE else {"d_model": D, "num_heads": h}
    return init, _params(("7.12", B, T), cls, init), randn((STEP, "7.12", cls, B, T, D), (B, T, D))


@remembered
def _reference_flops(cls, init, params, x):
    mod = _ref_module(cls, init)
    with torch.no_grad():
        for name, p in mod.named_parameters():
            p.copy_(torch.from_numpy(params[name]))
    return complexity.reference_flops(mod, torch.from_numpy(x))


def _expect_module_efficient(student, request, cls):
    what = f"{cls}(...).forward(x)"

    def measure(B, T, D=32, h=4):
        init, params, x = _complexity_case(cls, B, T, D, h)
        return student.measure(student.module_request(cls, init, params, x), what)
    if cls == SINGLE:
        complexity.expect_vectorised(request, measure, what, {"B": 2, "T": 8}, GROW)
    else:   # the module a real model would use: a loop over heads costs here (step 6 only tells it)
        complexity.expect_vectorised(request, measure, what, {"B": 2, "T": 8, "h": 4}, dict(GROW, h=GROW_HEADS))
    init, params, x = _complexity_case(cls, **MEMORY)
    measured = measure(**MEMORY)
    complexity.expect_memory(measured, complexity.nbytes(*_reference(cls, init, params, x)), what,
                             complexity.shapes_text(x))
    complexity.expect_flops(measured, _reference_flops(cls, init, params, x), what)


@check("7.12", points=1, kind="complexity")
def test_vectorised(student, request):
    """Vectorised, heads batched: no Python loop over tokens, batch entries or heads; memory and multiply-adds within a constant factor of the reference's"""
    for cls in (SINGLE, MULTI):
        _expect_module_efficient(student, request, cls)


@check("7.13", points=1, kind="api")
def test_no_library_attention(student):
    """Calls none of the library attention functions (F.scaled_dot_product_attention, nn.MultiheadAttention, ...)"""
    names = complexity.forbidden_apis(STEP)
    for cls in (SINGLE, MULTI):
        init, what = _init(cls), f"{cls}(...).forward(x)"
        x = randn((STEP, "7.13", cls, "x"), (B, T, D))
        measured = student.measure(student.module_request(cls, init, _params("7.13", cls, init), x), what,
                                   forbidden=names, count=False)
        complexity.expect_no_forbidden([measured], what, names)


# ------------------------------------------------------------------ the feedback page's example (not a check)
def _example(student, cls, init):
    """(what, expected weights (T, T), ask) for one module's example: head 0 of its attn_weights."""
    key, d_model = ("html", STEP), attention.EXAMPLE_D_MODEL
    # parameters exactly representable in float32: the student's module holds them exactly
    params = {name: rounded(randn(key + (name,), shape, d_model ** -0.5), "float32")[1]
              for name, shape in _expected_params(cls, init).items()}
    x = randn(key + ("x",), (1, attention.EXAMPLE_T, d_model))
    w = _reference(cls, init, params, x)[1]
    call = f"{cls}({', '.join(str(v) for v in init.values())}).forward(x)"
    what = (_("head 0 of attn_weights from {call}, x of shape (1, 5, 12)", call=call) if w.ndim == 4
            else _("attn_weights from {call}, x of shape (1, 5, 12)", call=call))
    return what, w[0, 0] if w.ndim == 4 else w[0], lambda: attention.head_0(attention.second_of_pair(
        student.module(cls, init, params, x)[0]))


@example
def test_example(student, request):
    """Head 0 of MultiHeadSelfAttention's weights for one x (1, 5, 12), drawn beside the reference's (the
    single-head module's when the file defines only that one)"""
    d_model = attention.EXAMPLE_D_MODEL
    attention.show_first_defined(request, [_example(student, MULTI, {"d_model": d_model,
                                                                      "num_heads": attention.EXAMPLE_HEADS}),
                                           _example(student, SINGLE, {"d_model": d_model})])
