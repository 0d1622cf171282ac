"""Every byte from the child is validated before use: fuzzed replies only ever give a BadReply.

A tampered child can send anything through its reply pipe. Whatever it sends, the grader's
decoders (the frame, array records, values, load replies, gradients and measurements) must
either return plain checked data or raise the student-facing BadReply: never OverflowError,
KeyError or any other exception that would count as the grader's own internal error.
"""
import json
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autograder.sandbox import protocol
from autograder.sandbox.limits import Limits
from autograder.sandbox.problems import BadReply, StudentProblem, StudentRaised
from autograder.child import wire

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# JSON-like values with the field names and kinds the decoders look at, so the fuzz reaches deep
KEYS = st.sampled_from(["t", "value", "items", "length", "type", "repr", "dtype", "shape", "data", "kind",
                        "device", "requires_grad", "ok", "defined", "cell_errors", "message", "traceback",
                        "grads", "params", "mutated", "frozen", "meters", "ran", "lines", "calls", "ops",
                        "flops", "peak_bytes", "forbidden", "tampered", "errors", "gradcheck",
                        "backward_error", "inputs", "x", "missing", "error"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70),
                    st.floats(allow_nan=True), st.text(max_size=20),
                    st.sampled_from(["array", "seq", "scalar", "str", "opaque", "float64", "float32",
                                     "bfloat16", "int64", "object"]))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=5), st.dictionaries(KEYS, inner, max_size=6)), max_leaves=30)
RECORDS = st.dictionaries(KEYS, VALUES, max_size=8)


def only_bad_reply(fn, *args):
    try:
        fn(*args)
    except BadReply:
        pass


def _attach_bytes(rec, blob):
    """Array records as unpack leaves them: "data" swapped for bytes (or None)."""
    if isinstance(rec, dict):
        if rec.get("t") == "array" or "dtype" in rec:
            rec["data"] = blob if isinstance(rec.get("data"), (int, list)) else rec.get("data")
        for v in list(rec.values()):
            _attach_bytes(v, blob)
    elif isinstance(rec, list):
        for v in rec:
            _attach_bytes(v, blob)
    return rec


@SETTINGS
@given(RECORDS, st.binary(max_size=64))
def test_decoding_a_value_gives_checked_data_or_bad_reply(rec, blob):
    only_bad_reply(protocol.checked, protocol.decode, _attach_bytes(rec, blob))


@SETTINGS
@given(RECORDS, st.binary(max_size=64))
def test_decoding_gradients_and_measurements_gives_checked_data_or_bad_reply(rec, blob):
    rec = _attach_bytes(rec, blob)
    only_bad_reply(protocol.checked, protocol.decode_gradients, rec, {"op": "call", "name": "f", "names": ["x"]})
    only_bad_reply(protocol.checked, protocol.decode_gradients, rec,
                   {"op": "module", "name": "M", "init": {}, "params": {"w": 1}})
    only_bad_reply(protocol.checked, protocol.decode_measurement, rec)


@SETTINGS
@given(RECORDS)
def test_a_load_reply_is_checked_field_by_field(rec):
    try:
        reply = protocol.checked_load_reply(rec)
    except BadReply:
        return
    assert all(isinstance(n, str) for n in reply["defined"])
    assert all(set(e) == {"type", "message", "traceback"} and all(isinstance(v, str) for v in e.values())
               for e in reply["cell_errors"])


@SETTINGS
@given(RECORDS)
def test_an_answer_is_the_reply_itself_or_a_student_problem(rec):
    """checked_answer: an "ok" reply comes back as it is; anything else is the student problem it
    reports (a name not defined, memory, disk, a raised error with plain bounded fields) or a BadReply."""
    try:
        reply = protocol.checked_answer(rec, "f(...)", Limits(), "04_softmax.py", {"defined": [], "cell_errors": []})
    except StudentRaised as problem:
        assert set(problem.error) == {"type", "message", "traceback"}
        assert all(isinstance(v, str) and len(v) <= 4000 for v in problem.error.values())
        return
    except StudentProblem:
        return
    assert reply is rec and rec.get("ok") is True and not rec.get("missing")


@SETTINGS
@given(st.binary(max_size=200), st.binary(max_size=64))
def test_unpacking_any_bytes_gives_a_message_or_value_error(body, attachments):
    try:
        wire.unpack(body, attachments)
    except ValueError:
        pass


@SETTINGS
@given(st.lists(st.integers(min_value=-2**70, max_value=2**70), max_size=40),
       st.sampled_from(list(wire.ARRAY_DTYPES) + ["object", "float128"]), st.binary(max_size=64))
def test_absurd_shapes_are_refused_not_overflowed(shape, dtype, raw):
    try:
        arr = wire.decode_array({"dtype": dtype, "shape": shape, "data": raw})
    except ValueError:
        return
    assert list(arr.shape) == shape


@pytest.mark.parametrize("shape", [[2**64], [2**32, 2**32], [2**63 - 1, 2], [-1], [3, None], "3"])
def test_the_forged_shapes_of_the_issue_are_refused(shape):
    with pytest.raises(ValueError):
        wire.decode_array({"dtype": "float64", "shape": shape, "data": b"\0" * 8})
    with pytest.raises(BadReply):
        protocol.checked(protocol.decode, {"t": "array", "dtype": "float64", "shape": shape, "data": b"\0" * 8})


def test_a_frame_nested_past_the_parsers_depth_is_a_value_error():
    with pytest.raises(ValueError):
        wire.unpack(b"[" * 100_000 + b"]" * 100_000, b"")


def test_a_well_formed_reply_still_decodes():
    arr = np.arange(6.0).reshape(2, 3)
    msg = wire.pack({"value": wire.encode(arr)})
    body, attached = struct.unpack(">II", msg[:8])
    reply = wire.unpack(msg[8:8 + body], msg[8 + body:])
    got = protocol.checked(protocol.decode, reply["value"])
    assert np.array_equal(got.array, arr) and json.dumps(got.shape)
