# Appended to a correct 07_full_module.py: makes the call the memory meter relies on raise, so the
# meter fails (formerly the grader's "internal error (not your code's fault)", hiding any loop).
import torch as _torch


def _refuse(self):
    raise TypeError("no storage for you")


_torch.Tensor.untyped_storage = _refuse
