"""Issue 14's mistakes as small student files (tests/suites/test_leniency_and_diagnoses.py). Read by that test and by the visible-agree test."""
from conftest import ROOT

CASES = {
    "astype-float": ("01_projection", """
        import numpy as np

        def project_qkv(X, W_Q, W_K, W_V):
            X = X.astype(float)
            return X @ W_Q, X @ W_K, X @ W_V
    """),
    "scaling-numpy-scalar": ("03_scaling", """
        import numpy as np

        def scale_scores(scores, d_k):
            return scores / np.sqrt(d_k)
    """),
    "attention-numpy-scalar": ("05_weighted_sum", """
        import numpy as np

        def weighted_sum(weights, V):
            return weights @ V

        def self_attention(X, W_Q, W_K, W_V):
            Q, K, V = X @ W_Q, X @ W_K, X @ W_V
            s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
            e = np.exp(s - s.max(axis=-1, keepdims=True))
            w = e / e.sum(axis=-1, keepdims=True)
            return w @ V, w
    """),
    "scaling-widened-after": ("03_scaling", """
        import math
        import numpy as np

        def scale_scores(scores, d_k):
            return (scores / math.sqrt(d_k)).astype(np.float64)
    """),
    "attention-widened-after": ("05_weighted_sum", """
        import math
        import numpy as np

        def weighted_sum(weights, V):
            return weights @ V

        def self_attention(X, W_Q, W_K, W_V):
            Q, K, V = X @ W_Q, X @ W_K, X @ W_V
            s = Q @ np.swapaxes(K, -1, -2) / math.sqrt(K.shape[-1])
            e = np.exp(s - s.max(axis=-1, keepdims=True))
            w = e / e.sum(axis=-1, keepdims=True)
            return (w @ V).astype(float), w.astype(float)
    """),
    "attention-float32-keys": ("05_weighted_sum", """
        import math
        import numpy as np

        def weighted_sum(weights, V):
            return weights @ V

        def self_attention(X, W_Q, W_K, W_V):
            Q, K, V = X @ W_Q, (X @ W_K).astype(np.float32), X @ W_V
            s = Q @ np.swapaxes(K, -1, -2) / math.sqrt(K.shape[-1])
            e = np.exp(s - s.max(axis=-1, keepdims=True))
            w = e / e.sum(axis=-1, keepdims=True)
            return w @ V, w
    """),
    "softmax-in-place": ("04_softmax", """
        import numpy as np

        def softmax(x, axis=-1):
            x -= np.max(x, axis=axis, keepdims=True)
            e = np.exp(x)
            return e / e.sum(axis=axis, keepdims=True)
    """),
    "softmax-global-max": ("04_softmax", """
        import numpy as np

        def softmax(x, axis=-1):
            e = np.exp(x - np.max(x))
            return e / e.sum(axis=axis, keepdims=True)
    """),
    "torch-wrong-dim": ("06_multi_head", """
        import math
        import torch

        def split_heads(x, num_heads):
            B, T, D = x.shape
            return x.view(B, T, num_heads, D // num_heads).transpose(1, 2)

        def merge_heads(x):
            B, h, T, hd = x.shape
            return x.transpose(1, 2).reshape(B, T, h * hd)

        def multi_head_attention(x, W_Q, W_K, W_V, W_O, num_heads):
            q, k, v = (split_heads(x @ W, num_heads) for W in (W_Q, W_K, W_V))
            w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-2)
            return merge_heads(w @ v) @ W_O, w
    """),
    "float32-softmax": ("07_full_module", """
        import math
        import torch
        from torch import nn

        def attend(q, k, v):
            s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
            w = torch.softmax(s.float(), dim=-1).to(s.dtype)      # float32 inside, whatever the module's dtype
            return w @ v, w

        class SingleHeadSelfAttention(nn.Module):
            def __init__(self, d_model):
                super().__init__()
                self.W_q, self.W_k, self.W_v = (nn.Linear(d_model, d_model, bias=False) for _ in range(3))

            def forward(self, x):
                return attend(self.W_q(x), self.W_k(x), self.W_v(x))

        class MultiHeadSelfAttention(nn.Module):
            def __init__(self, d_model, num_heads, bias=True):
                super().__init__()
                self.h = num_heads
                self.q_proj, self.k_proj, self.v_proj, self.out_proj = (
                    nn.Linear(d_model, d_model, bias=bias) for _ in range(4))

            def forward(self, x):
                q, k, v = (p(x).unflatten(-1, (self.h, -1)).transpose(1, 2)
                           for p in (self.q_proj, self.k_proj, self.v_proj))
                o, w = attend(q, k, v)
                return self.out_proj(o.transpose(1, 2).flatten(2)), w
    """),
    "leftover-cell": ("03_scaling", """
        import math

        def scale_scores(scores, d_k):
            return scores / math.sqrt(d_k)

        raise RuntimeError("a leftover demo cell")
    """),
}



# ------------------------------------------------------------------ hints checked against their cause (issue 28)
def _reference(stem):
    return (ROOT / "solutions" / "modern_attention" / f"step{stem}.py").read_text()


def _edited(stem, old, new):
    """The reference with one edit: a mistake written as a student would (the edit must apply)."""
    code = _reference(stem)
    assert old in code, (stem, old)
    return stem, code.replace(old, new)


GQA_VIEW = ".view(B, T, num_heads, head_dim).transpose(1, 2)"
LSE = "m + torch.log(torch.where(seen, l, torch.ones_like(l)))"
CASES.update({
    # the weights are causal, yet later tokens reach earlier outputs: a view that mixes time with the heads
    "gqa-heads-time-view": _edited("03_grouped_query", GQA_VIEW, ".view(B, num_heads, T, head_dim)"),
    # the queries read in (T, B) order: the two sequences of the batch are mixed
    "gqa-batch-time-mixed": _edited("03_grouped_query", GQA_VIEW,
                                    ".reshape(T, B, num_heads, head_dim).permute(1, 2, 0, 3)"),
    # the hints' fix applied: the view transposed as they say (the reference's own line)
    "gqa-fixed": ("03_grouped_query", _reference("03_grouped_query")),
    # a log-sum-exp without its maximum: wrong alike for every block size, the blocks are not the cause
    "lse-without-max": _edited("06_flash_attention", LSE, "torch.log(torch.where(seen, l, torch.ones_like(l)))"),
    "lse-fixed": ("06_flash_attention", _reference("06_flash_attention")),
    # an integer square root: right where d_k is a square (16), "no scale" where sqrt(d_k) < 2 (d_k = 2),
    # neither elsewhere: one coincidence, no diagnosis
    "scaling-integer-sqrt": ("03_scaling", """
        import math

        def scale_scores(scores, d_k):
            return scores / int(math.sqrt(d_k))
    """),
})


def _failed(checks):
    return {n for n, c in checks.items() if c["status"] != "passed"}


def _points_lost(checks):
    return sum(c["max_score"] - c["score"] for c in checks.values())
