"""Reference for step 1, generated from source/self_attention/01_projection.ipynb
by `python -m autograder build`. Do not edit: edit the notebook and rebuild."""
import numpy as np


# Difficulty: ★☆☆, about 5 minutes
def project_qkv(X, W_Q, W_K, W_V):
    """Project the inputs X into queries, keys and values.

    X:   (..., T, d_model)   one row per token; any leading batch dimensions
    W_Q: (d_model, d_k)      W_K: (d_model, d_k)      W_V: (d_model, d_v)
    returns Q (..., T, d_k), K (..., T, d_k), V (..., T, d_v)
    """
    Q = X @ W_Q  # (..., T, d_k): what each token is looking for
    K = X @ W_K  # (..., T, d_k): the label each token offers
    V = X @ W_V  # (..., T, d_v): the content each token hands over
    return Q, K, V
