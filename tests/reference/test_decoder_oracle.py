"""The decoder's references against an implementation nobody here wrote: Hugging Face transformers'
LlamaForCausalLM, built from a random small config (nothing downloaded), given the references'
weights by name, in float64.

What is compared: the logits of one call (1e-10), the logits of a prefill and then one token a call
with each side's cache, equal to the uncached ones, and greedy generations (our `generate` against
`LlamaForCausalLM.generate`), left-padded batches included. The grader never imports transformers:
this is the kit's own check that its references are the model they claim to be (docs/oracle.md).

Convention differences, aligned here and nowhere else (transformers is left as it is otherwise):
- RMSNorm: transformers computes it in float32 whatever the input's dtype (float64 is cast *down*);
  ours keeps float32 and float64 and computes half precision in float32. For float64 the norm is
  patched to compute in the input's dtype.
- RoPE: the same rotate-half layout (the two halves of a head, not interleaved pairs) and the same
  inverse frequencies, but transformers computes them and the angles in float32; patched to float64.
- attention: "sdpa" (torch's own, in float64) or "eager" with its softmax patched out of float32
  (eager's softmax is taken in float32 and cast back).
"""
import math

import pytest
import torch

transformers = pytest.importorskip(
    "transformers", reason="the oracle extra is not installed (pip install -e '.[oracle]'; scripts/setup.sh does)")
from transformers.models.llama import modeling_llama  # noqa: E402

from solutions.decoder import step04_model, step05_generation  # noqa: E402

CONFIGS = [dict(vocab_size=37, dim=32, num_layers=3, num_heads=4, num_kv_heads=2, hidden_dim=48, eps=1e-5,
                rope_base=10000.0, tie_embeddings=False),
           dict(vocab_size=29, dim=24, num_layers=2, num_heads=6, num_kv_heads=1, hidden_dim=40, eps=1e-6,
                rope_base=500.0, tie_embeddings=True)]
TOL = 1e-10


# ------------------------------------------------------------------ aligning transformers' float32 habits
def _rmsnorm_in_input_dtype(self, hidden_states):
    dtype = hidden_states.dtype
    h = hidden_states.to(torch.float32) if dtype in (torch.float16, torch.bfloat16) else hidden_states
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
    return self.weight * h.to(dtype)


def _rope_in_float64(self, x, position_ids):
    dim = self.inv_freq.shape[0] * 2
    base = self.config.rope_parameters["rope_theta"]
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    freqs = position_ids[..., None].to(torch.float64) * inv_freq
    emb = torch.cat((freqs, freqs), dim=-1)
    return (emb.cos() * self.attention_scaling).to(x.dtype), (emb.sin() * self.attention_scaling).to(x.dtype)


def _eager_in_input_dtype(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    k = modeling_llama.repeat_kv(key, module.num_key_value_groups)
    v = modeling_llama.repeat_kv(value, module.num_key_value_groups)
    w = torch.matmul(query, k.transpose(2, 3)) * scaling
    if attention_mask is not None:
        w = w + attention_mask
    w = torch.softmax(w, dim=-1)
    return torch.matmul(w, v).transpose(1, 2).contiguous(), w


@pytest.fixture
def aligned(monkeypatch):
    """transformers' Llama computing in float64 where it computes in float32 (the module docstring)."""
    monkeypatch.setattr(modeling_llama.LlamaRMSNorm, "forward", _rmsnorm_in_input_dtype)
    monkeypatch.setattr(modeling_llama.LlamaRotaryEmbedding, "forward", _rope_in_float64)
    monkeypatch.setattr(modeling_llama, "eager_attention_forward", _eager_in_input_dtype)


# ------------------------------------------------------------------ the two models, the same weights
def reference(cfg, seed):
    """The references' DecoderLM with random weights (norm scales too), float64, eval."""
    torch.manual_seed(seed)
    model = step04_model.DecoderLM(**cfg).double().eval()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, p in sorted(model.named_parameters()):
            p.copy_(torch.randn(p.shape, dtype=torch.float64, generator=g) / math.sqrt(p.shape[-1]) + (p.dim() == 1))
    return model


HF_NAMES = {"attn_norm.weight": "input_layernorm.weight", "ffn_norm.weight": "post_attention_layernorm.weight",
            "q_proj.weight": "self_attn.q_proj.weight", "k_proj.weight": "self_attn.k_proj.weight",
            "v_proj.weight": "self_attn.v_proj.weight", "o_proj.weight": "self_attn.o_proj.weight",
            "ffn.gate_proj.weight": "mlp.gate_proj.weight", "ffn.up_proj.weight": "mlp.up_proj.weight",
            "ffn.down_proj.weight": "mlp.down_proj.weight"}


def hf_name(name):
    """Our parameter name -> LlamaForCausalLM's."""
    if name.startswith("blocks."):
        _, i, rest = name.split(".", 2)
        return f"model.layers.{i}.{HF_NAMES[rest]}"
    return {"embed.weight": "model.embed_tokens.weight", "norm.weight": "model.norm.weight",
            "lm_head.weight": "lm_head.weight"}[name]


def llama(ours, cfg, attn):
    config = transformers.LlamaConfig(
        vocab_size=cfg["vocab_size"], hidden_size=cfg["dim"], intermediate_size=cfg["hidden_dim"],
        num_hidden_layers=cfg["num_layers"], num_attention_heads=cfg["num_heads"],
        num_key_value_heads=cfg["num_kv_heads"], rms_norm_eps=cfg["eps"], rope_theta=cfg["rope_base"],
        tie_word_embeddings=cfg["tie_embeddings"], max_position_embeddings=256, attention_bias=False,
        mlp_bias=False, hidden_act="silu", bos_token_id=None, eos_token_id=None, pad_token_id=None)
    model = modeling_llama.LlamaForCausalLM._from_config(config, attn_implementation=attn,
                                                         dtype=torch.float64).eval()
    theirs = dict(model.named_parameters(remove_duplicate=False))
    with torch.no_grad():
        for name, p in ours.named_parameters(remove_duplicate=False):
            theirs[hf_name(name)].copy_(p)
    if cfg["tie_embeddings"]:
        assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    assert model.config.rope_parameters["rope_theta"] == cfg["rope_base"]
    return model


def worst(a, b):
    return (a - b).abs().max().item()


def tokens_of(B, T, vocab, seed):
    return torch.randint(0, vocab, (B, T), generator=torch.Generator().manual_seed(seed))


# ------------------------------------------------------------------ the checks
@pytest.mark.parametrize("attn", ["sdpa", "eager"])
@pytest.mark.parametrize("which", [0, 1])
def test_the_logits_are_llamas(aligned, which, attn):
    cfg = CONFIGS[which]
    ours = reference(cfg, seed=which)
    theirs = llama(ours, cfg, attn)
    tokens = tokens_of(3, 17, cfg["vocab_size"], seed=10 + which)
    with torch.no_grad():
        a, b = ours(tokens), theirs(tokens).logits
    assert a.dtype == b.dtype == torch.float64
    assert a.abs().max() > 0.1                                 # logits of some size, not a trivial agreement
    assert worst(a, b) < TOL, worst(a, b)


def test_without_the_alignment_they_differ_by_float32_rounding():
    """The alignment is needed and is all that is needed: unpatched, transformers' float32 norm and RoPE
    leave float32-sized differences (well above 1e-10, well below 1e-3)."""
    cfg = CONFIGS[0]
    ours = reference(cfg, seed=0)
    theirs = llama(ours, cfg, "sdpa")
    tokens = tokens_of(2, 17, cfg["vocab_size"], seed=3)
    with torch.no_grad():
        d = worst(ours(tokens), theirs(tokens).logits)
    assert 1e-9 < d < 1e-3, d


@pytest.mark.parametrize("which", [0, 1])
def test_cached_logits_are_the_uncached_ones_on_both_sides(aligned, which):
    cfg = CONFIGS[which]
    ours = reference(cfg, seed=20 + which)
    theirs = llama(ours, cfg, "sdpa")
    tokens = tokens_of(2, 12, cfg["vocab_size"], seed=21)
    with torch.no_grad():
        full = theirs(tokens).logits
        mine, past, parts, start = step04_model.new_cache(ours), transformers.DynamicCache(config=theirs.config), [], 0
        hf_parts = []
        for n in (5, 1, 1, 3, 2):                              # a prefill, then one or several tokens a call
            chunk = tokens[:, start:start + n]
            parts.append(ours(chunk, mine))
            out = theirs(chunk, cache=past, use_cache=True)
            past = out.cache
            hf_parts.append(out.logits)
            start += n
    assert worst(torch.cat(parts, 1), full) < TOL
    assert worst(torch.cat(hf_parts, 1), full) < TOL
    assert all(len(c) == 12 for c in mine)
    assert mine[0].k.shape[1] == cfg["num_kv_heads"]          # the cache keeps num_kv_heads heads, as Llama's does
    assert worst(mine[0].k, past.layers[0].keys) < TOL        # and the same keys: after RoPE, at their positions


@pytest.mark.parametrize("which", [0, 1])
def test_left_padded_logits_are_llamas_at_the_real_tokens(aligned, which):
    cfg = CONFIGS[which]
    ours = reference(cfg, seed=30 + which)
    theirs = llama(ours, cfg, "sdpa")
    tokens = tokens_of(3, 10, cfg["vocab_size"], seed=31)
    mask = torch.ones(3, 10, dtype=torch.bool)
    mask[1, :4] = False
    mask[2, :7] = False
    positions = (mask.long().cumsum(-1) - 1).clamp(min=0)      # what generate gives Llama: real tokens counted
    with torch.no_grad():
        a = ours(tokens, attention_mask=mask)
        b = theirs(tokens, attention_mask=mask.long(), position_ids=positions).logits
    assert worst(a[mask], b[mask]) < TOL


@pytest.mark.parametrize("which", [0, 1])
def test_greedy_generations_are_llamas_left_padding_included(aligned, which):
    cfg = CONFIGS[which]
    ours = reference(cfg, seed=40 + which)
    theirs = llama(ours, cfg, "sdpa")
    prompts = tokens_of(3, 9, cfg["vocab_size"], seed=41)
    mask = torch.ones(3, 9, dtype=torch.bool)
    mask[1, :3] = False
    mask[2, :6] = False
    prompts = prompts.masked_fill(~mask, 0)                    # padding id 0, as a tokenizer's pad would be
    got = step05_generation.generate(ours, prompts, mask, max_new_tokens=12)
    with torch.no_grad():
        expected = theirs.generate(prompts, attention_mask=mask.long(), max_new_tokens=12, do_sample=False,
                                   pad_token_id=0, eos_token_id=None)
    assert got.shape == expected.shape == (3, 21)
    assert torch.equal(got, expected), (got, expected)
    # and every row is what it is alone, without padding
    for row in range(3):
        real = prompts[row:row + 1][:, mask[row]]
        alone = step05_generation.generate(ours, real, max_new_tokens=12)
        assert torch.equal(alone[0], got[row, 9 - real.shape[1]:])


def test_greedy_with_a_stop_token_is_llamas(aligned):
    cfg = CONFIGS[0]
    ours = reference(cfg, seed=50)
    theirs = llama(ours, cfg, "sdpa")
    prompts = tokens_of(2, 6, cfg["vocab_size"], seed=51)
    free = step05_generation.generate(ours, prompts, max_new_tokens=10)
    eos = int(free[0, 9])                                      # the token row 0 produces fourth
    got = step05_generation.generate(ours, prompts, max_new_tokens=10, eos_id=eos)
    with torch.no_grad():
        expected = theirs.generate(prompts, attention_mask=torch.ones_like(prompts), max_new_tokens=10,
                                   do_sample=False, pad_token_id=eos, eos_token_id=eos)
    assert torch.equal(got[:, :expected.shape[1]], expected)
    assert (got[:, expected.shape[1]:] == eos).all()          # stopped rows padded with eos by both
