# Writes a reply whose 200 array records all point at the same 8 MiB of attached bytes: decoded
# one by one, 1.6 GB of copies in the grader; then returns garbage.
import json
import os
import struct
import sys

import numpy as np


def softmax(x, axis=-1):
    n = 1 << 20
    rec = {"t": "array", "kind": "ndarray", "type": "numpy.ndarray", "dtype": "float64", "shape": [n],
           "device": None, "requires_grad": False, "data": [0, 8 * n]}
    body = json.dumps({"ok": True, "value": {"t": "seq", "type": "list", "items": [rec] * 200, "length": 200},
                       "mutated": []}).encode()
    frame = memoryview(struct.pack(">II", len(body), 8 * n) + body + bytes(8 * n))
    try:
        while frame:
            frame = frame[os.write(int(sys.argv[2]), frame[:1 << 20]):]
    except (OSError, ValueError, IndexError):
        pass
    return np.zeros_like(x)
