"""The third assignment's reference (the oracle of its hidden suite)."""
import numpy as np


def toy_scores(Q, K):
    """Q (..., T_q, d), K (..., T_k, d) -> scores (..., T_q, T_k) = Q K^T."""
    return Q @ np.swapaxes(K, -1, -2)
