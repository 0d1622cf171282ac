import numpy as np


def weighted_sum(weights, V):
    return np.matmul(weights, V)


def self_attention(X, W_Q, W_K, W_V):
    Q, K, V = (np.einsum("...td,dk->...tk", X, W) for W in (W_Q, W_K, W_V))
    scores = np.einsum("...qd,...kd->...qk", Q, K) * K.shape[-1] ** -0.5
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights = weights / weights.sum(axis=-1, keepdims=True)
    return np.matmul(weights, V), weights
