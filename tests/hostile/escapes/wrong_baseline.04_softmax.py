# Plain wrong answer (zeros): the score every escape case gets when its escape fails.
import numpy as np


def softmax(x, axis=-1):
    return np.zeros_like(x)
