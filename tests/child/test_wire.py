"""The wire format: arrays cross as dtype + shape + bytes, and malformed records are refused."""
import json

import numpy as np
import pytest
import torch

from autograder.child import wire
from autograder.sandbox.problems import BadReply
from autograder.sandbox.protocol import Opaque, Returned, Seq, decode


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
    lambda r: r.update(data="AAAA"),               # text where the bytes belong
    lambda r: r.update(data=None),                 # what an out-of-bounds attachment becomes
    lambda r: r.update(data=b"\0" * 7),            # not a whole number of float64s
    lambda r: r.update(data=b"\0" * 40),           # more bytes than the shape holds
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


def test_a_message_round_trips_with_its_arrays_as_raw_attachments():
    a, b = np.arange(6.0).reshape(2, 3), np.arange(4, dtype=np.int32)
    message = {"op": "call", "args": [wire.encode(a), wire.encode([b, 2.5])]}
    data = wire.pack(message)
    body_size, attached_size = wire.sizes(data[:wire.HEADER.size])
    assert attached_size == a.nbytes + b.nbytes              # raw bytes, not base64
    back = wire.unpack(data[wire.HEADER.size:wire.HEADER.size + body_size], data[wire.HEADER.size + body_size:])
    assert np.array_equal(decode(back["args"][0]).array, a)
    assert np.array_equal(decode(back["args"][1]).items[0].array, b)


@pytest.mark.parametrize("ref", [[0, 999], [-8, 8], [0], "0:8", [0.0, 8], None])
def test_attachment_references_out_of_bounds_or_malformed_are_refused(ref):
    body = json.dumps({"t": "array", "kind": "ndarray", "type": "numpy.ndarray", "dtype": "float64",
                       "shape": [1], "data": ref}).encode()
    rec = wire.unpack(body, b"\0" * 16)
    with pytest.raises(BadReply):
        decode(rec)


def test_a_header_over_the_limit_is_refused_before_reading_the_body():
    with pytest.raises(ValueError, match="over the limit"):
        wire.sizes(wire.HEADER.pack(10, wire.MAX_MESSAGE_BYTES))
