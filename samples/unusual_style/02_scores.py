import numpy as np


def attention_scores(Q, K):
    return np.einsum("...qd,...kd->...qk", Q, K)
