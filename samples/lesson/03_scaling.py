# The lesson's own code for step 3, wrapped in the kit's function name only.
# np.sqrt(...) is a float64 scalar, so NumPy 2 turns float32 scores into float64 (accepted).
import numpy as np


def scale_scores(scores, d_k):
    scale = np.sqrt(d_k)
    scaled_scores = scores / scale
    return scaled_scores
