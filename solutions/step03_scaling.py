"""Reference for step 3, generated from source/self_attention/03_scaling.ipynb
by `python -m autograder build`. Do not edit: edit the notebook and rebuild."""
import math

import numpy as np


# Difficulty: ★☆☆, about 5 minutes
def scale_scores(scores, d_k):
    """Divide the scores by sqrt(d_k) so their spread does not grow with d_k.

    scores: (..., T_q, T_k)   d_k: int, the key dimension
    returns scaled scores, same shape and dtype as scores
    """
    # math.sqrt gives a Python float, which NumPy 2 treats as "weak": float32 stays float32
    return scores / math.sqrt(d_k)
