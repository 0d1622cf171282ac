"""Known mistakes of step 2 (02_swiglu), applied to its reference's arithmetic in torch float64.

`ffn(params, x, mistake)` is SwiGLU's forward written out once more (mistake=None: the reference's
answer, which a test holds to solutions/). "swiglu-gate-swapped": silu on up_proj(x) instead of
gate_proj(x); "swiglu-wrong-activation": ReLU, GELU or the sigmoid alone instead of SiLU (the
ways the mistake is made, each a candidate). reference/misconceptions.py says what each means.

Shapes: x (..., dim); params {"gate_proj.weight", "up_proj.weight": (hidden, dim), "down_proj.weight": (dim, hidden)}.
"""
import functools

import torch
import torch.nn.functional as F

from solutions.decoder import step02_swiglu as ref

ACTIVATIONS = {"silu": F.silu, "relu": F.relu, "gelu": F.gelu, "sigmoid": torch.sigmoid}


def _t(a):
    return torch.as_tensor(a, dtype=torch.float64)


def ffn(params, x, mistake=None, activation="silu"):
    """SwiGLU(x) as a float64 tensor."""
    x = _t(x)
    gate, up = x @ _t(params["gate_proj.weight"]).T, x @ _t(params["up_proj.weight"]).T
    if mistake == "swiglu-gate-swapped":
        gate, up = up, gate
    act = ACTIVATIONS[activation if mistake == "swiglu-wrong-activation" else "silu"]
    return (act(gate) * up) @ _t(params["down_proj.weight"]).T


def mistakes(params, x):
    """{id: [(array,), ...]}: every way of each mistake (named_on_evidence's candidates)."""
    return {"swiglu-gate-swapped": [(ffn(params, x, "swiglu-gate-swapped").numpy(),)],
            "swiglu-wrong-activation": [(ffn(params, x, "swiglu-wrong-activation", a).numpy(),)
                                        for a in ("relu", "gelu", "sigmoid")]}


# ------------------------------------------------------------------ the audit's equivalence probes
def _run(module, W_gate, W_up, W_down, x):
    layer = module.SwiGLU(x.shape[-1], W_gate.shape[0]).to(x.dtype)
    own = dict(layer.named_parameters())           # parameters by these names, or no module
    with torch.no_grad():
        for name, w in zip(("gate_proj.weight", "up_proj.weight", "down_proj.weight"), (W_gate, W_up, W_down)):
            own[name].copy_(w)
    return layer(x)


def probes(rng, dtype, scale):
    """[(callable, args, kwargs)] for the mutation audit's equivalence check: SwiGLU(8, 12) and (6, 6)."""
    grad = dtype == "float64"

    def t(shape, s, g=False):
        return torch.tensor((rng.standard_normal(shape) * s).astype(dtype), requires_grad=g)
    calls = []
    for d, hidden in ((8, 12), (6, 6)):
        weights = [t((hidden, d), d ** -0.5), t((hidden, d), d ** -0.5), t((d, hidden), hidden ** -0.5)]
        calls.append((functools.partial(_run), weights + [t((2, 3, d), scale, grad)], {}))
    return calls


assert ref.SwiGLU         # the module whose arithmetic is written out above
