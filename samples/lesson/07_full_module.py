# The lesson's SingleHeadSelfAttention, verbatim. Note `self.scale = d_model ** -0.5` and then
# `/ self.scale`: that multiplies the scores by sqrt(d_model).
import torch
import torch.nn as nn
import torch.nn.functional as F


class SingleHeadSelfAttention(nn.Module):
    """单头自注意力机制的完整实现"""

    def __init__(self, d_model: int):
        super().__init__()
        self.d_model = d_model

        # Q/K/V 的线性投影层
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, d_model, bias=False)
        self.W_v = nn.Linear(d_model, d_model, bias=False)

        # 缩放因子
        self.scale = d_model ** -0.5

    def forward(self, x: torch.Tensor) -> tuple:
        batch_size, seq_len, _ = x.shape

        # 1. 线性投影得到 Q, K, V
        Q = self.W_q(x)  # (B, T, D)
        K = self.W_k(x)
        V = self.W_v(x)

        # 2. 计算注意力分数: Q @ K^T / sqrt(d_k)
        scores = torch.matmul(Q, K.transpose(-2, -1)) / self.scale  # (B, T, T)

        # 3. Softmax 归一化（对最后一维）
        attn_weights = F.softmax(scores, dim=-1)  # (B, T, T)

        # 4. 用注意力权重对 V 做加权求和
        output = torch.matmul(attn_weights, V)  # (B, T, D)

        return output, attn_weights
