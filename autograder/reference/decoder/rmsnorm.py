"""Known mistakes of step 1 (01_rmsnorm), applied to its reference's arithmetic in torch.

`norm(x, weight, eps, mistake)` is RMSNorm's forward written out once more (mistake=None: the
reference's answer, which a test holds to solutions/), float64 for float64 and float32 inputs; for
float16 and bfloat16 inputs computed in float32 and cast back, as the contract says, or, with
"rmsnorm-half-precision", in the input's own half dtype (the squares of values above 256 overflow
float16: those rows come out 0). reference/misconceptions.py says what each mistake means.

Shapes: x (..., dim); weight (dim,).
"""
import torch

from solutions.decoder import step01_rmsnorm as ref

MISTAKES = ("rmsnorm-eps-outside-root",)          # value mistakes at every dtype
HALF = ("float16", "bfloat16")


def norm(x, weight, eps=1e-06, mistake=None):
    """RMSNorm(x) as a float64 numpy array. x: a numpy array (float16 travels as float16, bfloat16 as its
    float32 widening, `dtype` then says which), or a tensor of its own dtype."""
    x = torch.as_tensor(x)
    w = torch.as_tensor(weight)
    half = x.dtype in (torch.float16, torch.bfloat16)
    h = x if (mistake == "rmsnorm-half-precision" or not half) else x.float()
    if not half:
        h, w = h.double(), w.double()
    ms = h.pow(2).mean(-1, keepdim=True)
    if mistake == "rmsnorm-eps-outside-root":
        y = h / (ms.sqrt() + eps)
    else:
        y = h * torch.rsqrt(ms + eps)
    y = y * w.to(y.dtype)
    return y.to(x.dtype).double().numpy() if half else y.numpy()


def mistakes(x, weight, eps=1e-06):
    """{id: float64 array} for every value mistake that changes something on these inputs."""
    right = norm(x, weight, eps)
    found = {}
    for mid in MISTAKES:
        got = norm(x, weight, eps, mid)
        if not (abs(got - right) <= 1e-12).all():
            found[mid] = got
    return found


# ------------------------------------------------------------------ the audit's equivalence probes
def _run(module, weight, x, eps=1e-06):
    layer = module.RMSNorm(x.shape[-1], eps).to(x.dtype)
    with torch.no_grad():
        dict(layer.named_parameters())["weight"].copy_(weight)     # a parameter by that name, or no module
    return layer(x)


def probes(rng, dtype, scale):
    """[(callable, args, kwargs)] for the mutation audit's equivalence check: the norm at the default eps and at
    a large one (where eps inside or outside the root differ), over small and ordinary inputs; x of `dtype`
    (float64 requires grad), scaled by `scale`."""
    grad = dtype == "float64"

    def t(shape, s, g=False):
        return torch.tensor((rng.standard_normal(shape) * s).astype(dtype), requires_grad=g)
    calls = []
    for eps, s in ((1e-06, 1.0), (0.5, 1.0), (1e-06, 1e-3)):
        weight = torch.tensor((1 + 0.3 * rng.standard_normal(8)).astype(dtype))
        calls.append((lambda module, w, x, eps=eps: _run(module, w, x, eps), [weight, t((2, 3, 8), scale * s, grad)], {}))
    return calls


assert ref.RMSNorm        # the module whose arithmetic is written out above
