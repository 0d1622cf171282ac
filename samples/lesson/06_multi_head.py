# The lesson's multi-head demo, fitted to the kit's signature: one loop iteration per head with
# that head's columns of W_Q, W_K, W_V, then the heads concatenated -- and, as in the lesson,
# no output projection W_O.
import torch
import torch.nn.functional as F


def split_heads(x, num_heads):
    B, T, D = x.shape
    return x.view(B, T, num_heads, D // num_heads).transpose(1, 2)


def merge_heads(x):
    B, h, T, hd = x.shape
    return x.transpose(1, 2).reshape(B, T, h * hd)


def multi_head_attention(x, W_Q, W_K, W_V, W_O, num_heads):
    d_model = x.shape[-1]
    head_dim = d_model // num_heads
    all_outputs, all_weights = [], []
    for h in range(num_heads):
        cols = slice(h * head_dim, (h + 1) * head_dim)
        Q_h = x @ W_Q[:, cols]
        K_h = x @ W_K[:, cols]
        V_h = x @ W_V[:, cols]
        scores = torch.matmul(Q_h, K_h.transpose(-2, -1)) / (head_dim ** 0.5)
        attn = F.softmax(scores, dim=-1)
        all_outputs.append(torch.matmul(attn, V_h))
        all_weights.append(attn)
    final_output = torch.cat(all_outputs, dim=-1)
    return final_output, torch.stack(all_weights, dim=1)
