"""The references' results, remembered for the next submission.

The hidden suites' inputs are seeded, so every submission a grader process grades asks the
references (and the known mistakes' variants, and the reference's multiply-add counts) the
same questions. A warm batch worker answers each once: `remembered(fn)` is `fn`, keyed on the
bytes of its arguments, and returns a fresh copy of what it returned the first time.

Only plain values are remembered: arguments made of arrays, tensors that do not require grad,
numbers, strings and tuples or lists of them; results of the same kinds, and messages (immutable,
in no language yet: autograder/i18n.py). Anything else (a module, a tensor in a graph) is passed
through to `fn` every time.
"""
import functools
import hashlib
import sys
import types

import numpy as np

from autograder.i18n import Text

MAX_ENTRIES = 4096       # a few MB: the suites ask a few hundred distinct questions


class _Unkeyable(Exception):
    pass


def _key(x):
    if x is None or isinstance(x, (bool, int, float, str)):
        return (type(x).__name__, x)
    if isinstance(x, np.ndarray):
        return ("ndarray", x.dtype.str, x.shape, hashlib.blake2b(np.ascontiguousarray(x).tobytes(),
                                                                 digest_size=16).digest())
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        if x.requires_grad or x.device.type != "cpu" or type(x) is not torch.Tensor:
            raise _Unkeyable
        raw = x.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        return ("tensor", str(x.dtype), tuple(x.shape), hashlib.blake2b(raw, digest_size=16).digest())
    if isinstance(x, (tuple, list)):
        return (type(x).__name__,) + tuple(_key(v) for v in x)
    if isinstance(x, dict):
        return ("dict",) + tuple(sorted((str(k), _key(v)) for k, v in x.items()))
    if isinstance(x, types.FunctionType) and "<" not in x.__qualname__:
        return ("function", x.__module__, x.__qualname__)     # a module-level function, by name
    raise _Unkeyable


def _plain(x):
    """A copy of a result, or _Unkeyable for a result that is not plain data."""
    if x is None or isinstance(x, (bool, int, float, str, np.generic, Text)):
        return x
    if isinstance(x, np.ndarray):
        return x.copy()
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        if x.requires_grad or type(x) is not torch.Tensor:
            raise _Unkeyable
        return x.clone()
    if isinstance(x, (tuple, list)):
        return type(x)(_plain(v) for v in x)
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    raise _Unkeyable


_results = {}


def remembered(fn):
    """fn, answering a question asked before from memory (a copy of the first answer)."""
    @functools.wraps(fn)
    def answer(*args, **kwargs):
        try:
            key = (fn, _key(args), _key(kwargs))     # fn itself: two closures may share a name
        except _Unkeyable:
            return fn(*args, **kwargs)
        if key in _results:
            return _plain(_results[key])
        result = fn(*args, **kwargs)
        try:
            kept = _plain(result)
        except _Unkeyable:
            return result
        if len(_results) < MAX_ENTRIES:
            _results[key] = kept
        return result
    return answer


class Remembering:
    """A reference module seen through `remembered`: its functions remember, its classes (the
    step 7 modules, built afresh by each check) are the module's own."""

    def __init__(self, module):
        self._module = module

    def __getattr__(self, name):
        value = getattr(self._module, name)
        if callable(value) and not isinstance(value, type):
            value = remembered(value)
        setattr(self, name, value)          # wrapped once
        return value
