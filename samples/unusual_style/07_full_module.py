import torch
import torch.nn as nn
import torch.nn.functional as F


class SingleHeadSelfAttention(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, d_model, bias=False)
        self.W_v = nn.Linear(d_model, d_model, bias=False)
        self.scale = d_model ** -0.5

    def forward(self, x):
        scores = torch.einsum("btd,bsd->bts", self.W_q(x), self.W_k(x)) * self.scale
        w = scores.softmax(dim=-1)
        return torch.bmm(w, self.W_v(x)), w


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.h = num_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = (F.linear(x, p.weight, p.bias).reshape(B, T, self.h, D // self.h).permute(0, 2, 1, 3)
                   for p in (self.q_proj, self.k_proj, self.v_proj))
        w = torch.softmax(torch.matmul(q, k.transpose(2, 3)) / torch.tensor(D // self.h).sqrt(), dim=-1)
        merged = torch.matmul(w, v).permute(0, 2, 1, 3).contiguous().view(B, T, D)
        return self.out_proj(merged), w
