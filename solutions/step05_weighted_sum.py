"""Reference for step 5, generated from source/self_attention/05_weighted_sum.ipynb
by `python -m autograder build`. Do not edit: edit the notebook and rebuild."""
import math

import numpy as np


# Difficulty: ★☆☆, about 1 minute (step 1, copied)
def project_qkv(X, W_Q, W_K, W_V):
    """Step 1 (repeated here so this step stands alone). Shapes as in step 1."""
    # Copy your solution from step 1 (01_projection).
    return X @ W_Q, X @ W_K, X @ W_V


# Difficulty: ★☆☆, about 1 minute (step 2, copied)
def attention_scores(Q, K):
    """Step 2: (..., T_q, d_k), (..., T_k, d_k) -> (..., T_q, T_k)."""
    # Copy your solution from step 2 (02_scores).
    return Q @ np.swapaxes(K, -1, -2)


# Difficulty: ★☆☆, about 1 minute (step 3, copied)
def scale_scores(scores, d_k):
    """Step 3: divide by sqrt(d_k)."""
    # Copy your solution from step 3 (03_scaling).
    return scores / math.sqrt(d_k)


# Difficulty: ★☆☆, about 2 minutes (step 4, copied)
def softmax(x, axis=-1):
    """Step 4: numerically stable softmax along `axis`."""
    # Copy your solution from step 4 (04_softmax).
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


# Difficulty: ★☆☆, about 5 minutes
def weighted_sum(weights, V):
    """Mix the values with the attention weights.

    weights: (..., T_q, T_k), each row sums to 1
    V:       (..., T_k, d_v)
    returns  (..., T_q, d_v): row i is sum_j weights[i, j] * V[j]
    """
    return weights @ V  # one matmul, never a (T_q, T_k, d_v) intermediate


# Difficulty: ★★☆, about 10 minutes
def self_attention(X, W_Q, W_K, W_V):
    """Single-head self-attention: the five steps chained.

    X: (..., T, d_model)   W_Q, W_K: (d_model, d_k)   W_V: (d_model, d_v)
    returns out (..., T, d_v) and weights (..., T, T)
    """
    Q, K, V = project_qkv(X, W_Q, W_K, W_V)          # (..., T, d_k), (..., T, d_k), (..., T, d_v)
    scores = attention_scores(Q, K)                   # (..., T, T)
    scaled = scale_scores(scores, K.shape[-1])        # (..., T, T), divided by sqrt(d_k)
    weights = softmax(scaled, axis=-1)                # (..., T, T), rows sum to 1
    out = weighted_sum(weights, V)                    # (..., T, d_v)
    return out, weights
