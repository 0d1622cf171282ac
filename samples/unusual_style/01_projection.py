# Correct, written differently from the reference: einsum and a loop over the three matrices.
import numpy as np


def project_qkv(X, W_Q, W_K, W_V):
    return tuple(np.einsum("...td,dk->...tk", X, W) for W in (W_Q, W_K, W_V))
