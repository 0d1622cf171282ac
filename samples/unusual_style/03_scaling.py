import numpy as np


def scale_scores(scores, d_k):
    return scores * (1.0 / np.sqrt(d_k))   # a float64 scalar: float32 scores become float64
