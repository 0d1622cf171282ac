# Correct, but writes a warning to stderr (nbgrader gives such a cell 0). Must get full marks.
import warnings
import numpy as np


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def softmax(x, axis=-1, _good=softmax):
    warnings.warn("just a warning")
    return _good(x, axis)
