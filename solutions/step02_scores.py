"""Reference for step 2, generated from source/self_attention/02_scores.ipynb
by `python -m autograder build`. Do not edit: edit the notebook and rebuild."""
import numpy as np


# Difficulty: ★☆☆, about 5 minutes
def attention_scores(Q, K):
    """Dot product of every query with every key.

    Q: (..., T_q, d_k)   K: (..., T_k, d_k)
    returns scores (..., T_q, T_k) with scores[..., i, j] = Q[..., i, :] . K[..., j, :]
    """
    # swapaxes turns each K into K^T without touching the leading batch dimensions
    return Q @ np.swapaxes(K, -1, -2)  # (..., T_q, T_k)
