"""Reference for step 1, generated from source/decoder/01_rmsnorm.ipynb
by `python -m autograder build`. Do not edit: edit the notebook and rebuild."""
import torch
import torch.nn as nn


# Difficulty: ★☆☆, about 20 minutes
class RMSNorm(nn.Module):
    """Root-mean-square normalisation of the last axis, with a learnable scale.

    RMSNorm(dim, eps=1e-06): weight, an nn.Parameter of ones (dim,)
    forward(x): x (..., dim) -> y, the shape and dtype of x:
        y = x / sqrt(mean(x ** 2, over the last axis) + eps) * weight
    float16 and bfloat16 inputs are computed in float32 and the result cast back.
    """

    def __init__(self, dim, eps=1e-06):
        super().__init__()
        # Keep eps; make weight a learnable parameter of ones, shape (dim,).
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        # Normalise the last axis by its root mean square (eps inside the root), then scale by weight.
        dtype = x.dtype
        h = x.float() if dtype in (torch.float16, torch.bfloat16) else x       # half precision: in float32
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)        # eps inside the root
        return (h * self.weight.to(h.dtype)).to(dtype)
