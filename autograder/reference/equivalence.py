"""Is a mutant the same program as the reference? Run both on many random inputs and compare.

A mutant is *equivalent* when, on every probe, it returns what the reference returns (same
structure, dtype, shape and values to rounding), leaves the caller's inputs as the reference
leaves them and, in torch steps, gives the same gradients for every input and parameter. Probes
cover every dtype a step accepts on the CPU (float64, float32), several seeds, shapes with distinct
dims, and large values (scores far above exp()'s range), so a mutant that only differs on large
scores (a softmax without its max subtracted) or in float64 (a cast to float32) is not equivalent.

A mutant that raises where the reference does not is *crashing*.

This runs mutants of the references, which the audit wrote itself, not student code: it runs
them in one plain subprocess per step (`python -m autograder.reference.equivalence`, JSON in and out),
with an address-space limit and an alarm per mutant, apart from the grader.

    input:  {"04_softmax": {"04_softmax-m001": "<source>", ...}, ...}   (mutants per step)
    output: {"04_softmax-m001": {"verdict": "equivalent" | "differs" | "crashes", "why": "..."}, ...}

The first assignment's probes are written here. Another assignment's step keeps its probes beside
its known mistakes: `probes(rng, dtype, scale)` in <its Assignment.variants package>/<name>.py (the
stem without its number: 01_masks -> autograder/reference/modern/masks.py), returning [(function name, args, kwargs)], a call of the
step's function on torch tensors (the tensors of args that require grad are differentiated), or
[(callable, args, kwargs)] for what is not one call (a module, a cache): callable(module, *args,
**kwargs) runs the step's code, `module` being the reference or the mutant.
"""
import importlib
import importlib.util
import json
import signal
import sys
import types
from pathlib import Path

import numpy as np

from autograder import contract

SEEDS = (0, 1, 2)
SCALES = (1.0, 40.0)           # 40: scores of order 1e3 and more, past exp()'s range in float64 too
DTYPES = ("float64", "float32")


# ------------------------------------------------------------------ probes per step
def _arrays(rng, dtype, scale, *shapes):
    return [(rng.standard_normal(s) * scale).astype(dtype) for s in shapes]


def _weights(rng, dtype, shape):
    e = np.exp(rng.standard_normal(shape))
    return (e / e.sum(-1, keepdims=True)).astype(dtype)


def _probes(stem, rng, dtype, scale):
    """[(function name, args, kwargs)] for one seed, dtype and scale. Shapes keep every dim distinct."""
    if stem == "01_projection":
        return [("project_qkv", _arrays(rng, dtype, scale, (2, 3, 5, 4), (4, 3), (4, 3), (4, 6)), {}),
                ("project_qkv", _arrays(rng, dtype, scale, (5, 4), (4, 3), (4, 3), (4, 6)), {})]
    if stem == "02_scores":
        return [("attention_scores", _arrays(rng, dtype, scale, (2, 5, 3), (2, 7, 3)), {}),
                ("attention_scores", _arrays(rng, dtype, scale, (5, 3), (7, 3)), {})]
    if stem == "03_scaling":
        (s,) = _arrays(rng, dtype, scale, (2, 5, 7))
        return [("scale_scores", [s, 16], {}), ("scale_scores", [s.copy(), 3], {})]
    if stem == "04_softmax":
        (x,) = _arrays(rng, dtype, scale * 25, (2, 5, 7))
        masked = x.copy()
        masked[..., 1] = -np.inf
        return [("softmax", [x], {}), ("softmax", [x.copy()], {"axis": 1}), ("softmax", [x.copy()], {"axis": 0}),
                ("softmax", [x.copy(), -2], {}), ("softmax", [masked], {})]
    if stem == "05_weighted_sum":
        return [("weighted_sum", [_weights(rng, dtype, (2, 5, 7))] + _arrays(rng, dtype, scale, (2, 7, 6)), {}),
                ("self_attention", _arrays(rng, dtype, scale, (2, 5, 4), (4, 3), (4, 3), (4, 6)), {}),
                ("self_attention", _arrays(rng, dtype, scale, (5, 4), (4, 3), (4, 3), (4, 6)), {})]
    raise KeyError(stem)


def _torch_probes(stem, rng, dtype, scale):
    import torch
    t = lambda *shapes: [torch.tensor(a, requires_grad=dtype == "float64") for a in _arrays(rng, dtype, scale, *shapes)]
    if stem == "06_multi_head":
        return [("split_heads", [t((2, 5, 12))[0], 3], {}), ("merge_heads", [t((2, 3, 5, 4))[0]], {}),
                ("multi_head_attention", t((2, 5, 12), (12, 12), (12, 12), (12, 12), (12, 12)) + [3], {}),
                ("multi_head_attention", t((2, 5, 12), (12, 12), (12, 12), (12, 12), (12, 12)) + [4], {})]
    if stem == "07_full_module":
        return [("SingleHeadSelfAttention", [8], t((2, 5, 8))[0]),
                ("MultiHeadSelfAttention", [12, 3], t((2, 5, 12))[0]),
                ("MultiHeadSelfAttention", [12, 4, False], t((2, 5, 12))[0])]
    raise KeyError(stem)


# ------------------------------------------------------------------ observing one call
FIRST_TORCH = ("06_multi_head", "07_full_module")       # the first assignment's torch steps
FIRST_NUMPY = ("01_projection", "02_scores", "03_scaling", "04_softmax", "05_weighted_sum")


def _probes_of(stem):
    """The probes function of another assignment's step: probes(rng, dtype, scale) in its variants
    module, <its contract.Assignment.variants package>.<stem without its number> (for the second
    assignment autograder/reference/modern/masks.py for 01_masks)."""
    owner = contract.assignment_of_step(stem)
    if owner is None or owner.variants is None:
        raise KeyError(f"{stem}: no probes for the audit's equivalence check (its assignment names no variants "
                       "package or folder in its contract.Assignment)")
    short = stem.split('_', 1)[1]
    if isinstance(owner.variants, str):                     # a package: "autograder.reference.modern"
        name, where = f"{owner.variants}.{short}", f"{owner.variants.replace('.', '/')}/{short}.py"
    else:                                                    # a folder of modules (an assignment's own)
        name, where = None, str(Path(owner.variants) / f"{short}.py")
    try:
        if name is not None:
            probes = importlib.import_module(name).probes
        else:
            spec = importlib.util.spec_from_file_location(f"_variants_{owner.name}_{short}", where)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            probes = module.probes
        return lambda _stem, rng, dtype, scale: probes(rng, dtype, scale)
    except (ImportError, AttributeError, FileNotFoundError):
        raise KeyError(f"{stem}: no probes for the audit's equivalence check; define probes(rng, dtype, scale) "
                       f"in {where}") from None


def _numpy_step(stem):
    """Is the step's code numpy (compared without gradients), by its contract?"""
    return contract.step_for_stem(stem).framework == "numpy"


def _observe(module, stem, probe, dtype):
    """What a call shows: its outputs, the inputs after it and (torch, float64) the gradients."""
    name, args, extra = probe
    if not _numpy_step(stem):
        return _observe_torch(module, stem, probe, dtype)
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with np.errstate(all="ignore"):
        out = getattr(module, name)(*args, **extra)
    return {"out": _flat(out), "inputs after": _flat(args)}


def _observe_torch(module, stem, probe, dtype):
    import torch
    name, args, extra = probe
    torch_dtype = getattr(torch, dtype)
    if stem == "07_full_module":
        x = extra.detach().clone().requires_grad_(dtype == "float64")
        torch.manual_seed(0)
        layer = getattr(module, name)(*args).to(torch_dtype)
        layer.load_state_dict(_STATE[(name, tuple(args), dtype)])   # the reference's parameters, whatever the init order
        out = layer(x)
        grads = _grads(out, [x] + [p for _n, p in sorted(layer.named_parameters())])
        return {"out": _flat(out), "inputs after": _flat([x]), "grads": grads}
    args = [a.detach().clone().requires_grad_(a.requires_grad) if torch.is_tensor(a) else a for a in args]
    if callable(name):                     # another assignment's probe that is not one call (a module, a cache)
        out = name(module, *args, **extra)
    else:
        out = getattr(module, name)(*args, **extra)
    leaves = [a for a in args if torch.is_tensor(a) and a.requires_grad]
    return {"out": _flat(out), "inputs after": _flat(args), "grads": _grads(out, leaves)}


def _grads(out, leaves):
    """Gradients of a fixed random projection of the outputs with respect to `leaves`."""
    import torch
    leaves = [p for p in leaves if p.requires_grad]
    outs = [o for o in (out if isinstance(out, (tuple, list)) else [out]) if torch.is_tensor(o) and o.requires_grad]
    if not leaves or not outs:
        return []
    g = torch.Generator().manual_seed(7)
    loss = sum((o * torch.randn(o.shape, generator=g, dtype=o.dtype)).sum() for o in outs)
    grads = torch.autograd.grad(loss, leaves, allow_unused=True)
    return _flat([np.zeros(0) if gr is None else gr for gr in grads])


def _flat(value):
    """Outputs as comparable plain data: [(kind, dtype, shape, float64 values)], sequences flattened
    (a list and a tuple are the same to the grader)."""
    import torch
    if isinstance(value, (tuple, list)):
        return [("seq", len(value))] + [item for v in value for item in _flat(v)]
    if torch.is_tensor(value):
        return [("tensor", str(value.dtype), tuple(value.shape), value.detach().to(torch.float64).numpy().copy())]
    if isinstance(value, np.ndarray):
        return [("array", str(value.dtype), value.shape, value.astype(np.float64))]
    return [("other", type(value).__name__, repr(value)[:80])]


GRADS_NORMWISE = 1e-10     # a gradient's rounding, relative to the largest gradient of the same call


def _same(a, b, dtype):
    """Why two observations differ, or None.

    Values are compared element by element (float64: rtol 1e-9, atol 1e-12). Gradients are compared
    so too, but with an absolute tolerance of GRADS_NORMWISE times the largest gradient of the same
    call (the reference's): a gradient that cancels to zero, like the one through an online softmax's
    running max (the max is subtracted and added back), leaves rounding of the order of the terms that
    cancelled where the exact value is 0, so a mutant that cuts that path (`.detach()` on the max) gives
    the exact 0 and the reference 1e-12. The largest such rounding measured is 3.5e-13 of the largest
    gradient (06_flash_attention, scores of order 1e3); a mistake changes gradients by far more."""
    for key in a:
        x, y = a[key], b.get(key)
        if y is None or len(x) != len(y):
            return f"{key}: a different structure"
        arrays = [u[3] for u in x if u[0] in ("tensor", "array") and u[3].size]
        largest = max((float(np.abs(p[np.isfinite(p)]).max(initial=0.0)) for p in arrays), default=0.0)
        for u, v in zip(x, y):
            if u[:3] != v[:3]:
                return f"{key}: {v[:3]} instead of {u[:3]}"
            if u[0] in ("tensor", "array"):
                p, q = u[3], v[3]
                tol = dict(rtol=1e-9, atol=1e-12) if dtype == "float64" else dict(rtol=2e-5, atol=1e-6)
                if key == "grads":
                    tol["atol"] = max(tol["atol"], GRADS_NORMWISE * largest)
                if not np.array_equal(np.isnan(p), np.isnan(q)) or not np.allclose(p, q, equal_nan=True, **tol):
                    return f"{key}: different values (largest difference {np.nanmax(np.abs(p - q)):.3g})"
    return None


# ------------------------------------------------------------------ one step
_STATE = {}


def _module(source, name):
    module = types.ModuleType(name)
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module


def _all_probes(stem):
    make = _probes if stem in FIRST_NUMPY else _torch_probes if stem in FIRST_TORCH else _probes_of(stem)
    for dtype in DTYPES:
        for seed in SEEDS:
            for scale in SCALES:
                rng = np.random.default_rng([seed, int(scale), DTYPES.index(dtype)])
                for probe in make(stem, rng, dtype, scale):
                    yield dtype, probe


def compare(stem, reference_source, mutant_sources, seconds=30):
    """{mutant id: {"verdict", "why"}} for the mutants of one step."""
    import torch
    torch.set_num_threads(1)
    reference = _module(reference_source, "reference")
    probes = list(_all_probes(stem))
    expected = []
    for dtype, probe in probes:
        if stem == "07_full_module":
            name, args, _x = probe
            torch.manual_seed(0)
            _STATE[(name, tuple(args), dtype)] = getattr(reference, name)(*args).to(getattr(torch, dtype)).state_dict()
        expected.append(_observe(reference, stem, probe, dtype))
    verdicts = {}
    for mid, source in mutant_sources.items():
        signal.alarm(seconds)
        try:
            verdicts[mid] = _verdict(stem, _module(source, mid), probes, expected)
        except Exception as exc:   # noqa: BLE001 - a mutant may fail to even load
            verdicts[mid] = {"verdict": "crashes", "why": f"{type(exc).__name__}: {str(exc)[:200]}"}
        finally:
            signal.alarm(0)
    return verdicts


def _verdict(stem, module, probes, expected):
    for (dtype, probe), want in zip(probes, expected):
        try:
            got = _observe(module, stem, probe, dtype)
        except _Timeout:
            raise
        except Exception as exc:   # noqa: BLE001
            return {"verdict": "crashes", "why": f"{probe[0]} ({dtype}) raised {type(exc).__name__}: {str(exc)[:200]}"}
        why = _same(want, got, dtype)
        if why:
            return {"verdict": "differs", "why": f"{probe[0]} ({dtype}): {why}"}
    return {"verdict": "equivalent", "why": f"same outputs, inputs and gradients on {len(probes)} probes"}


class _Timeout(Exception):
    pass


def _alarm(_signum, _frame):
    raise _Timeout("took too long")


def main():
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
    signal.signal(signal.SIGALRM, _alarm)
    request = json.load(sys.stdin)
    from autograder.reference import mutants
    answer = {}
    for stem, sources in request.items():
        answer.update(compare(stem, mutants.reference_source(stem), sources))
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
