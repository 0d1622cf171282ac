"""The wire format: arrays cross as dtype + shape + bytes, and malformed records are refused."""
import base64

import numpy as np
import pytest
import torch

from autograder.checks import Opaque, Returned, Seq, decode
from autograder.child import wire
from autograder.sandbox import BadReply


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int64", "bool"])
def test_numpy_round_trip(dtype):
    a = (np.arange(24).reshape(2, 3, 4) % 3).astype(dtype)
    back = decode(wire.encode(a))
    assert isinstance(back, Returned) and back.kind == "ndarray" and back.type == "numpy.ndarray"
    assert back.array.dtype == a.dtype and np.array_equal(back.array, a)


def test_bfloat16_tensor_arrives_exactly():
    t = torch.randn(3, 5).to(torch.bfloat16)
    back = decode(wire.encode(t))
    assert back.kind == "tensor" and back.dtype == "bfloat16" and back.device == "cpu"
    assert np.array_equal(back.array, t.float().numpy())


def test_odd_values_are_described_not_decoded():
    class Sneaky(np.ndarray):
        def __eq__(self, other):
            return True
    s = np.zeros(3).view(Sneaky)
    back = decode(wire.encode(s))
    assert back.kind == "ndarray" and back.type.endswith("Sneaky")       # flagged as a subclass
    assert isinstance(decode(wire.encode(np.array([object()], dtype=object))), Opaque)
    assert isinstance(decode(wire.encode([1.0, 2.0])), Seq)
    assert isinstance(decode(wire.encode(lambda: 0)), Opaque)


@pytest.mark.parametrize("tamper", [
    lambda r: r.update(dtype="object"),
    lambda r: r.update(shape=[1000]),
    lambda r: r.update(shape=[-1]),
    lambda r: r.update(data="not base64!"),
    lambda r: r.update(data=base64.b64encode(b"\0" * 7).decode()),
])
def test_malformed_arrays_are_refused(tamper):
    rec = wire.encode(np.zeros((2, 2)))
    tamper(rec)
    with pytest.raises(BadReply):
        decode(rec)


def test_unknown_record_kinds_are_refused():
    for rec in ({"t": "pickle", "data": "..."}, {"t": "scalar", "value": [1]}, "text", None):
        with pytest.raises(BadReply):
            decode(rec)
