# The lesson's own code for step 1, wrapped in the kit's function name only.
import numpy as np


def project_qkv(X, W_Q, W_K, W_V):
    Q = X @ W_Q   # Query: (seq_len, d_model)
    K = X @ W_K   # Key:   (seq_len, d_model)
    V = X @ W_V   # Value: (seq_len, d_model)
    return Q, K, V
