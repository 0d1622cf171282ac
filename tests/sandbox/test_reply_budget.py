"""The grader's memory is bounded per reply (issue 25, item 6).

A reply is read against a budget derived from its request (protocol.reply_budget: what the
references' answer to the same request can be), not the wire's global 256 MB cap: a reply over it
is refused before it is read, a JSON text with more values than any honest reply holds is refused
before it is parsed, and array records may not claim the attached bytes twice. Measured, not
timed: each hostile reply is read by the grader's real reading code (process.Child.receive) in a
fresh interpreter, fed through a pipe by another process, and the peak of what the reader allocated while reading
(tracemalloc: every Python object and numpy buffer) is compared with a bound.
"""
import json
import os
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from autograder.child import wire
from autograder.sandbox import protocol
from harness import meters
from conftest import ROOT, run_grader  # at collection: a suite graded later puts its own conftest in sys.modules

MiB = 1 << 20


def call_of(*shapes, ints=()):
    return protocol.call_request("f", [protocol.encode_value(np.zeros(s)) for s in shapes]
                                 + [protocol.encode_value(n) for n in ints], {})


def test_the_budget_follows_the_request():
    small = protocol.reply_budget(call_of((2, 5, 8)))
    assert small.attached_bytes == protocol.REPLY_FLOOR + 4 * 8 * (2 * 5 * 8 * 8)
    # the (B, H, T, T) weights of a (B, T, D) input fit, four times over
    big = protocol.reply_budget(call_of((2, 128, 32)))
    assert big.attached_bytes > 4 * 8 * (2 * 8 * 128 * 128)
    assert protocol.reply_budget(call_of(ints=(300,))).attached_bytes == protocol.REPLY_FLOOR + 32 * 300 * 300
    assert protocol.reply_budget(protocol.load_request("x.py", "x.py")) == protocol.SMALL_REPLY
    measure = protocol.measure_request(call_of((4, 512, 64)))
    assert protocol.reply_budget(measure) == protocol.SMALL_REPLY          # counts come back, not values
    # an input whose (..., T, T) answer would be over the wire's cap gets the cap: (64, 512, 64) asks for
    # 32 x 2M x 512 bytes, while its own record is 16 MiB (a shape far beyond the cap, (4096, 4096, 64),
    # cost 8 GiB of zeros and 26 s to encode)
    huge = (64, 512, 64)
    assert 4 * 8 * (64 * 512 * 64) * 512 > 4 * wire.MAX_MESSAGE_BYTES
    assert protocol.reply_budget(call_of(huge)).attached_bytes == wire.MAX_MESSAGE_BYTES


def test_records_may_not_claim_the_attached_bytes_twice():
    blob = np.zeros(4).tobytes()
    rec = {"t": "array", "dtype": "float64", "shape": [4], "data": [0, 32]}
    body = json.dumps({"ok": True, "value": {"t": "seq", "items": [rec, rec]}}).encode()
    with pytest.raises(ValueError, match="claim more bytes"):
        wire.unpack(body, blob)
    body = json.dumps({"ok": True, "value": rec}).encode()
    assert bytes(wire.unpack(body, blob)["value"]["data"]) == blob


def test_a_text_with_more_values_than_allowed_is_not_parsed():
    body = b"[" + b"[]," * 1000 + b"[]]"
    with pytest.raises(ValueError, match="more than this request may return"):
        wire.unpack(body, b"", max_nodes=500)
    assert len(wire.unpack(body, b"", max_nodes=5000)) == 1001


# ------------------------------------------------------------------ the grader's own peak memory
READER = textwrap.dedent("""
    import json, subprocess, sys, tracemalloc
    import numpy as np
    from autograder.sandbox import process, protocol
    from autograder.sandbox.problems import BadReply

    class Reader(process.Child):          # the grader's reading code, on a pipe fed by a writer process
        def __init__(self, fd):
            self.rep_r = fd
        def kill(self):
            pass

    request = protocol.call_request("softmax", [protocol.encode_value(np.zeros((2, 3, 7)))], {})
    writer = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]], stdout=subprocess.PIPE)
    reader = Reader(writer.stdout.fileno())
    reader.reply_budget = protocol.reply_budget(request) if sys.argv[3] == "budget" else protocol.ReplyBudget(
        1 << 28, 1 << 28, None)
    tracemalloc.start()
    try:
        reply = reader.receive("softmax(...)", __import__("time").monotonic() + 600, 600)
        value = protocol.checked(protocol.decode, reply.get("value"))
        outcome = "read: " + type(value).__name__
    except BadReply as exc:
        outcome = "BadReply: " + str(exc)
    writer.kill()
    peak = tracemalloc.get_traced_memory()[1]
    print(json.dumps({"outcome": outcome, "peak_kib": peak // 1024}))
""")

WRITER = textwrap.dedent("""
    import json, os, struct, sys
    kind = sys.argv[1]
    attached = b""
    if kind == "nested-60MB":           # the issue's reply: ~60 MB of nested lists
        body = b'{"ok": true, "value": ' + b"[" + b"[[0]]," * 10_000_000 + b"[[0]]]}"
    elif kind == "nested-under-text-cap":    # under the text cap, far over the values an answer holds
        body = b'{"ok": true, "value": ' + b"[" + b"[]," * 2_500_000 + b"[]]}"
    elif kind == "deep":
        body = b'{"ok": true, "value": ' + b"[" * 2_000_000 + b"]" * 2_000_000 + b"}"
    elif kind == "same-bytes-again":     # 16 MiB attached, claimed by 40 records
        attached = bytes(16 << 20)
        rec = {"t": "array", "kind": "ndarray", "type": "numpy.ndarray", "dtype": "float64",
               "shape": [2 << 20], "data": [0, 16 << 20]}
        body = json.dumps({"ok": True, "value": {"t": "seq", "type": "list", "items": [rec] * 40,
                                                 "length": 40}}).encode()
    elif kind == "honest":
        attached = bytes(8 * 42)
        rec = {"t": "array", "kind": "ndarray", "type": "numpy.ndarray", "dtype": "float64",
               "shape": [2, 3, 7], "data": [0, 8 * 42]}
        body = json.dumps({"ok": True, "value": rec}).encode()
    frame = struct.pack(">II", len(body), len(attached)) + body + attached
    view = memoryview(frame)
    try:
        while view:
            view = view[os.write(1, view[:1 << 20]):]
    except BrokenPipeError:
        pass
""")


def read_in_fresh_grader(kind, budget="budget"):
    proc = subprocess.run([sys.executable, "-c", READER, WRITER, kind, budget], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("kind, outcome", [
    ("nested-60MB", "BadReply: a reply of 60000030 bytes of text is more than this request may return (8388608 bytes)"),
    ("nested-under-text-cap", "BadReply: a malformed reply (ValueError: a reply of over 200000 values is more than "
                              "this request may return)"),
    ("deep", "BadReply: a malformed reply (ValueError: a reply of over 200000 values is more than this request "
             "may return)"),
    ("same-bytes-again", "BadReply: a malformed reply (ValueError: array records claim more bytes than were "
                         "attached)"),
    ("honest", "read: Returned"),
])
def test_a_hostile_reply_costs_the_grader_little_memory(kind, outcome):
    got = read_in_fresh_grader(kind)
    assert got["outcome"] == outcome
    assert got["peak_kib"] < 48 * 1024, f"reading the reply took {got['peak_kib'] // 1024} MiB"


def test_without_the_budget_the_nested_reply_inflates_the_grader():
    """The measurement can fail: 7.5 MB of nested lists read under the wire's global cap cost the
    reader over 96 MiB (the issue's 60 MB, 736 MiB)."""
    got = read_in_fresh_grader("nested-under-text-cap", "global")
    assert got["outcome"] == "BadReply: malformed value" and got["peak_kib"] > 96 * 1024


# ------------------------------------------------------------------ the same, from a submission
HOSTILE, STEPS = meters.HOSTILE_REPLIES, meters.REPLY_STEPS


def graded_with(tmp_path, case, warm):
    import shutil
    sub = tmp_path / "sub"
    sub.mkdir()
    for stem in STEPS:
        shutil.copy(ROOT / "samples" / "unusual_style" / f"{stem}.py", sub)
    shutil.copy(HOSTILE / f"{case}.04_softmax.py", sub / "04_softmax.py")
    code, output, results = run_grader(sub, tmp_path, "--steps", ",".join(STEPS),
                                       "--memory-gib", "1", warm=warm)
    assert code == 0, output
    return results


@pytest.mark.parametrize("case, score, phrase", [
    ("nested_reply", 0, "Your code's result could not be read back: a reply of 60000030 bytes of text is more "
                        "than this request may return (8388608 bytes)"),
    ("shared_bytes", 0, "Your code's result could not be read back: a malformed reply (ValueError: array "
                        "records claim more bytes than were attached)"),
])
def test_a_submission_sending_such_a_reply_gets_its_exact_outcome(tmp_path, case, score, phrase, warm_cli):
    results = graded_with(tmp_path, case, warm_cli)
    steps = results["extra_data"]["steps"]
    assert steps["04_softmax"]["score"] == score
    assert all(s["score"] == 10 for k, s in steps.items() if k != "04_softmax"), "other steps graded normally"
    failed = [t["output"] for t in results["tests"] if "step:04_softmax" in t["tags"] and t["status"] == "failed"]
    assert phrase in failed[0]
    assert "internal error" not in json.dumps(results)
