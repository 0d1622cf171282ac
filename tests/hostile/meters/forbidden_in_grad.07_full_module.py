# Appended to a correct 07_full_module.py: the library's attention, which the step forbids, is
# called only where autograd is on, which is in the grader's gradient requests alone (its other
# calls run under torch.no_grad()). Those requests used to run with no meter on, so the api check
# never saw it. Every call is metered now (runner.MEASURED_HANDLERS): 7.13 sees the call.
import torch as _torch


def _library_when_differentiated(forward):
    def run(self, x, *args, **kwargs):
        if _torch.is_grad_enabled():
            _torch.nn.functional.scaled_dot_product_attention(x.unsqueeze(1), x.unsqueeze(1), x.unsqueeze(1))
        return forward(self, x, *args, **kwargs)
    return run


MultiHeadSelfAttention.forward = _library_when_differentiated(MultiHeadSelfAttention.forward)    # noqa: F821
