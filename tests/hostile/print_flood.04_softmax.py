# Prints without end: 20 MB at import and in every call, stdout and stderr. Correct otherwise.
import sys
import numpy as np


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)
print("spam " * 4_000_000)


def softmax(x, axis=-1, _good=softmax):
    sys.stdout.write("more " * 1_000_000)
    sys.stderr.write("errs " * 1_000_000)
    return _good(x, axis)
