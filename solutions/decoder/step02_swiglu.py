"""Reference for step 2, generated from source/decoder/02_swiglu.ipynb
by `python -m autograder build`. Do not edit: edit the notebook and rebuild."""
import torch
import torch.nn as nn
import torch.nn.functional as F


# Difficulty: ★☆☆, about 20 minutes
class SwiGLU(nn.Module):
    """The gated feed-forward network of a Llama block.

    SwiGLU(dim, hidden_dim): gate_proj, up_proj nn.Linear(dim, hidden_dim), down_proj nn.Linear(hidden_dim, dim),
    all without bias
    forward(x): x (..., dim) -> down_proj(silu(gate_proj(x)) * up_proj(x)), (..., dim)
    """

    def __init__(self, dim, hidden_dim):
        super().__init__()
        # The three linear layers, without bias.
        self.gate_proj = nn.Linear(dim, hidden_dim, bias=False)
        self.up_proj = nn.Linear(dim, hidden_dim, bias=False)
        self.down_proj = nn.Linear(hidden_dim, dim, bias=False)

    def forward(self, x):
        # silu of the gate, times the up projection, projected down.
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))
