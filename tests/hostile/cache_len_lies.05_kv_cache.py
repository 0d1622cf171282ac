# A KVCache whose len() is absurd: 2**100 positions (len() itself refuses it). Its append is correct,
# and so is the module (the step's correct CausalSelfAttention comes before this file).
import torch


class KVCache:
    def __init__(self):
        self.k = self.v = None

    def append(self, k, v):
        self.k = k if self.k is None else torch.cat([self.k, k], dim=-2)
        self.v = v if self.v is None else torch.cat([self.v, v], dim=-2)
        return self.k, self.v

    def __len__(self):
        return 2 ** 100
