"""The wire format between the grader and a student child process.

Only plain data crosses: JSON, with arrays as {dtype, shape, bytes}. Nothing is pickled or
eval'd. This file is copied next to the child's runner (it may not import `autograder`), so it
depends on the standard library and numpy alone; torch is imported only when a tensor is met.

Framing: each message is an 8-byte header (two big-endian uint32: the length of the UTF-8 JSON
and the length of the attachments), the JSON, then the attachments: the raw bytes of every
array, one after another. On the wire an array record's "data" is [offset, length] into the
attachments; in memory (`encode`'s output, `unpack`'s) it is the bytes themselves. Raw bytes
instead of base64 inside the JSON: a third fewer bytes, and no encoding, escaping or decoding
of megabytes per request (the complexity checks send a few MB per submission).
"""
import json
import os
import struct
import sys

import numpy as np

# dtypes allowed to cross as arrays; anything else is described, never decoded
ARRAY_DTYPES = ("float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64",
                "uint8", "bool")
MAX_MESSAGE_BYTES = 256 * 1024 * 1024   # a reply larger than this is refused unread
MAX_ITEMS = 10_000                      # list / tuple / dict entries kept
MAX_DEPTH = 8                           # nesting kept
MAX_TEXT = 2_000                        # characters of a string or repr kept


# ---------------------------------------------------------------- framing
HEADER = struct.Struct(">II")           # JSON bytes, attachment bytes


def pack(obj):
    """One message as bytes: header, JSON, attachments (the bytes found in `obj`'s records)."""
    blobs, size = [], 0

    def attach(x):
        nonlocal size
        if not isinstance(x, (bytes, bytearray)):
            raise TypeError(f"{type(x).__name__} cannot cross the wire")
        ref = [size, len(x)]
        blobs.append(x)
        size += len(x)
        return ref
    body = json.dumps(obj, allow_nan=True, default=attach).encode()
    return b"".join([HEADER.pack(len(body), size), body, *blobs])


def sizes(header):
    """(JSON bytes, attachment bytes) from a message's header; ValueError over MAX_MESSAGE_BYTES."""
    body, attached = HEADER.unpack(header)
    if body + attached > MAX_MESSAGE_BYTES:
        raise ValueError(f"message of {body + attached} bytes is over the limit")
    return body, attached


def nodes(body):
    """An upper bound on the values a JSON text holds: its brackets, braces and commas (counted in
    strings too: over, never under). Parsed, each costs the reader up to ~100 bytes (a list, a dict,
    a float), so this bounds the memory of json.loads before it runs."""
    return body.count(b"[") + body.count(b"{") + body.count(b",") + 1


def unpack(body, attachments, max_nodes=None):
    """The message's JSON, each array record's "data" swapped for its bytes. A reference that is
    not two in-bounds integers becomes None, which `decode_array` refuses. Anything malformed
    (bad UTF-8 or JSON, nesting past the parser's depth, more than `max_nodes` values, array
    records that together claim more bytes than were attached) raises ValueError.

    The last two bound what the reader builds from one message: json.loads makes ~100 bytes of
    objects per value (a 60 MB reply of nested lists cost the grader 700 MiB), and every array
    record is copied when decoded (ten thousand records pointing at the same 16 MiB would be
    160 GB): the records of a message may claim its attached bytes once, no more."""
    view = memoryview(attachments)
    if max_nodes is not None and nodes(body) > max_nodes:
        raise ValueError(f"a reply of over {max_nodes} values is more than this request may return")
    claimed = 0

    def resolve(record):
        nonlocal claimed
        if record.get("t") == "array":
            ref = record.get("data")
            ok = (isinstance(ref, list) and len(ref) == 2 and all(type(n) is int and n >= 0 for n in ref)
                  and ref[0] + ref[1] <= len(view))
            record["data"] = view[ref[0]:ref[0] + ref[1]] if ok else None
            if ok:
                claimed += ref[1]
                if claimed > len(view):
                    raise ValueError("array records claim more bytes than were attached")
        return record
    try:
        return json.loads(body, object_hook=resolve)
    except (RecursionError, UnicodeError, TypeError, OverflowError) as exc:
        raise ValueError(f"malformed message ({type(exc).__name__})") from None


def send(fd, obj):
    """Write one message to a blocking file descriptor."""
    view = memoryview(pack(obj))
    while view:
        n = os.write(fd, view)
        view = view[n:]


def read_exactly(fd, n):
    """Read n bytes from a blocking fd; None at end of file."""
    chunks, got = [], 0
    while got < n:
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def receive(fd):
    """Read one message from a blocking fd; None at end of file."""
    head = read_exactly(fd, HEADER.size)
    if head is None:
        return None
    body_size, attached_size = sizes(head)
    body = read_exactly(fd, body_size)
    attached = read_exactly(fd, attached_size)
    return None if body is None or attached is None else unpack(body, attached)


# ---------------------------------------------------------------- encoding
def _type_name(x):
    t = type(x)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _short(text):
    text = str(text)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "..."


def _array_record(arr, kind, type_name, device=None, requires_grad=False):
    """arr: a plain, C-contiguous numpy array whose dtype name is in ARRAY_DTYPES."""
    return {"t": "array", "kind": kind, "type": type_name, "dtype": str(arr.dtype),
            "shape": list(arr.shape), "device": device, "requires_grad": requires_grad,
            "data": arr.tobytes()}


def _encode_tensor(x):
    import torch
    dtype = str(x.dtype).replace("torch.", "")
    if dtype not in ARRAY_DTYPES:
        return {"t": "opaque", "type": _type_name(x), "repr": f"tensor of dtype {dtype}"}
    t = torch.Tensor.detach(x).to("cpu").contiguous()
    if dtype == "bfloat16":            # numpy has no bfloat16: ship the raw 16-bit patterns
        arr = t.view(torch.int16).numpy()
    else:
        arr = t.numpy()
    rec = _array_record(arr, "tensor", _type_name(x), str(x.device), bool(x.requires_grad))
    rec["dtype"] = dtype
    return rec


def encode(x, depth=0):
    """Turn a value into JSON-able plain data. Unknown objects become {"t": "opaque"}."""
    if x is None or isinstance(x, bool):
        return {"t": "scalar", "value": x}
    if type(x) in (int, float):
        return {"t": "scalar", "value": x}
    if type(x) is str:
        return {"t": "str", "value": _short(x)}
    if isinstance(x, np.ndarray) or isinstance(x, np.generic):
        if x.dtype.name not in ARRAY_DTYPES:
            return {"t": "opaque", "type": _type_name(x), "repr": f"array of dtype {x.dtype}"}
        kind = "ndarray" if isinstance(x, np.ndarray) else "numpy-scalar"
        plain = np.array(x, copy=True, subok=False, order="C")
        return _array_record(plain, kind, _type_name(x))
    torch = sys.modules.get("torch")      # only loaded when the step uses torch
    if torch is not None and isinstance(x, torch.Tensor):
        return _encode_tensor(x)
    if isinstance(x, (list, tuple)) and depth < MAX_DEPTH:
        items = [encode(v, depth + 1) for v in list(x)[:MAX_ITEMS]]
        return {"t": "seq", "type": _type_name(x), "items": items, "length": len(x)}
    try:
        text = repr(x)
    except BaseException as exc:  # a hostile __repr__ must not take the runner down
        text = f"<repr failed: {type(exc).__name__}>"
    return {"t": "opaque", "type": _type_name(x), "repr": _short(text)}


def encode_input(arr, as_tensor=False, device="cpu", cast=None):
    """Parent side: an input array to send, to arrive as an ndarray or a torch tensor.

    cast: a torch dtype name the child converts the tensor to (how float16/bfloat16 travel).
    """
    rec = _array_record(np.ascontiguousarray(arr), "tensor" if as_tensor else "ndarray", "input", device)
    rec["cast"] = cast
    return rec


def decode_array(rec, max_bytes=MAX_MESSAGE_BYTES):
    """Checked decoding of an array record into a fresh numpy array.

    bfloat16 arrives as int16 bit patterns and is widened to float32 (exactly).
    Raises ValueError on anything malformed.
    """
    if not isinstance(rec, dict):
        raise ValueError("malformed array record")
    dtype = rec.get("dtype")
    shape = rec.get("shape")
    if not isinstance(dtype, str) or dtype not in ARRAY_DTYPES:
        raise ValueError(f"dtype {str(dtype)[:40]!r} not allowed")
    if (not isinstance(shape, list) or len(shape) > 32
            or not all(type(n) is int and 0 <= n <= MAX_MESSAGE_BYTES for n in shape)):
        raise ValueError("malformed shape")
    raw = rec.get("data")
    if not isinstance(raw, (bytes, memoryview)):
        raise ValueError("the array's bytes are missing")
    if len(raw) > max_bytes:
        raise ValueError("array too large")
    count = 1
    for n in shape:            # in Python integers: a forged shape cannot overflow
        count *= n
    if count > MAX_MESSAGE_BYTES:
        raise ValueError("byte count does not match shape")
    if dtype == "bfloat16":
        bits = np.frombuffer(raw, dtype=np.uint16)
        if bits.size != count:
            raise ValueError("byte count does not match shape")
        # a bfloat16 is the top half of a float32
        return (bits.astype(np.uint32) << 16).view(np.float32).reshape(shape).copy()
    arr = np.frombuffer(raw, dtype=np.dtype(dtype))
    if arr.size != count:
        raise ValueError("byte count does not match shape")
    return arr.reshape(shape).copy()
