import torch
import torch.nn.functional as F


def split_heads(x, num_heads):
    B, T, D = x.shape
    return x.reshape(B, T, num_heads, -1).permute(0, 2, 1, 3)


def merge_heads(x):
    return torch.cat(x.unbind(dim=1), dim=-1)      # heads side by side along the last axis


def multi_head_attention(x, W_Q, W_K, W_V, W_O, num_heads):
    q, k, v = (split_heads(torch.matmul(x, W), num_heads) for W in (W_Q, W_K, W_V))
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / (q.shape[-1] ** 0.5)
    weights = F.softmax(scores, dim=-1)
    return merge_heads(weights @ v) @ W_O, weights
