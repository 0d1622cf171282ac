# Appended by tests/sandbox/test_hostile.py to an attack of the corpus, after step 5's correct code: it moves
# the attack into the student's KVCache, the object the grader's requests leave in the child. Every
# append(k, v) first calls the attack's softmax on k's values, then returns what the attack returned,
# told in this step's terms: the right softmax gives the right k_all, zeros give zeros, NaN gives
# NaN, float16 gives float16, a list a list, an object array an object array, an ndarray subclass
# that claims equality a tensor subclass that claims equality, anything else itself. What the attack
# does on the way (raise, exit, sleep, hog, fill, forge, print) it does inside the cache.
import numpy as _np
import torch as _torch

_good_append = KVCache.append        # noqa: F821  (the correct KVCache, defined above)


class _Always(_torch.Tensor):
    """torch's sneaky subclass: every comparison made on it says equal."""
    _claims = (_torch.allclose, _torch.equal, _torch.isclose, _torch.Tensor.__eq__)

    def __eq__(self, other):
        return True

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in cls._claims:
            return True
        return super().__torch_function__(func, types, args, kwargs or {})


def _correct_softmax(x, axis=-1):
    e = _np.exp(x - _np.max(x, axis=axis, keepdims=True))
    return e / _np.sum(e, axis=axis, keepdims=True)


def _in_this_step(got, x, k_all):
    """The attack's softmax(x) result `got`, as append's k_all (the attack may have patched numpy's
    comparisons and builtins.abs: only == and type checks here)."""
    if type(got) is list:
        return k_all.tolist()
    if type(got) is not _np.ndarray:
        return _torch.zeros_like(k_all).as_subclass(_Always) if isinstance(got, _np.ndarray) else got
    if got.dtype == object:
        return k_all.detach().numpy().astype(object)
    if got.dtype != _np.float64:
        return k_all.to(getattr(_torch, got.dtype.name))
    if got.shape == x.shape and bool((got != got).all()):
        return _torch.full_like(k_all, float("nan"))
    if got.shape == x.shape and bool((got == _correct_softmax(x)).all()):
        return k_all
    return _torch.zeros_like(k_all)


def _hostile_append(self, k, v):
    x = k.detach().to("cpu", _torch.float64).numpy()
    got = softmax(x)                  # noqa: F821  (the attack's, defined above)
    k_all, v_all = _good_append(self, k, v)
    return _in_this_step(got, x, k_all), v_all


KVCache.append = _hostile_append      # noqa: F821
