import numpy as np


def softmax(x, axis=-1):
    x = np.moveaxis(np.asarray(x), axis, -1)
    shifted = x - x.max(axis=-1)[..., None]
    out = np.exp(shifted)
    out /= out.sum(axis=-1)[..., None]
    return np.moveaxis(out, -1, axis)
