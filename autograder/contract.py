"""The student contract and the registry of assignments: which file defines what, shared by the
grader, the release, the reports and the tests.

Names, signatures and shapes are fixed here once; everything else reads them from this table.
The assignments are data (`REGISTRY`: an `Assignment` each, its steps and the folders of its
suites and released stubs); no module outside this one names an assignment or iterates "the
steps" without saying whose (tests/test_contract.py fails on such a use). Another assignment is
registered with `register(Assignment(...))` in-process, or for every process of a run (batch
workers, `python -m autograder` children) by naming its Python file in the environment variable
ATTENTION_KIT_ASSIGNMENTS (os.pathsep-separated), read when this module loads.
"""
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from autograder.i18n import N_, translate

KIT_ROOT = Path(__file__).resolve().parents[1]
# An empty submission (no step file of any assignment) is graded as this one, every step missing.
DEFAULT_ASSIGNMENT = "self_attention"
ASSIGNMENT = DEFAULT_ASSIGNMENT      # the old name, kept for the tests (no module of the kit uses it: test_contract)


@dataclass(frozen=True)
class Value:
    """One argument or result: its name and its shape (or type) as the student reads it."""
    name: str
    shape: str


@dataclass(frozen=True)
class Function:
    """A function the step defines: `name(args) -> returns`, with what it computes."""
    name: str
    args: tuple          # of Value; defaults written in the name, e.g. Value("axis=-1", "int")
    returns: tuple       # of Value: one, or the tuple a function returns
    meaning: str = ""

    @property
    def arg_names(self):
        return tuple(a.name.split("=")[0] for a in self.args)

    def signature(self):
        result = self.returns[0].name if len(self.returns) == 1 else f"({', '.join(r.name for r in self.returns)})"
        return f"{self.name}({', '.join(a.name for a in self.args)}) -> {result}"


@dataclass(frozen=True)
class Module:
    """An nn.Module the step defines: its constructor, the layers it must own, and forward."""
    name: str
    init: tuple          # of Value
    layers: tuple        # attribute names, each nn.Linear(d_model, d_model)
    forward: Function

    @property
    def arg_names(self):
        return tuple(a.name.split("=")[0] for a in self.init)

    def signature(self):
        return f"{self.name}({', '.join(a.name for a in self.init)})"


@dataclass(frozen=True)
class Class:
    """A plain class the step defines: its constructor and its methods (their args without self)."""
    name: str
    init: tuple          # of Value
    methods: tuple       # of Function (the dunder ones too: `__len__`)

    def signature(self):
        return f"{self.name}({', '.join(a.name for a in self.init)})"


@dataclass(frozen=True)
class Step:
    number: int          # 1..7
    stem: str            # file stem, e.g. "04_softmax"
    title: str
    framework: str       # "numpy" or "torch": what the student's code works with
    api: tuple           # the Functions / Modules the file must define
    points: int = 10     # the step's total; the hidden suite splits it between checks
    # modules the grader's calls make the step's child import lazily (not the student's code): the
    # zygote imports them once, and each child forked after inherits them (sandbox/zygote.py)
    child_imports: tuple = ()

    @property
    def names(self):
        """The functions / classes the file must define."""
        return tuple(item.name for item in self.api)

    @property
    def shown_title(self):
        """The title in the current language (for reports; `title` stays the English msgid)."""
        return translate(self.title)

    @property
    def files(self):
        """The file names a submission may use for this step."""
        return (f"{self.stem}.ipynb", f"{self.stem}.py")


V = Value
X_ = V("X", "(..., T, d_model)")
QKV_W = (V("W_Q", "(d_model, d_k)"), V("W_K", "(d_model, d_k)"), V("W_V", "(d_model, d_v)"))
OUT_WEIGHTS = (V("out", "(..., T, d_v)"), V("weights", "(..., T, T)"))
X_BTD = V("x", "(B, T, D)")
MHA_W = tuple(V(n, "(D, D)") for n in ("W_Q", "W_K", "W_V", "W_O"))

STEPS = (
    Step(1, "01_projection", N_("Projection X -> Q, K, V"), "numpy", (
        Function("project_qkv", (X_,) + QKV_W,
                 (V("Q", "(..., T, d_k)"), V("K", "(..., T, d_k)"), V("V", "(..., T, d_v)")),
                 "Q = X @ W_Q, K = X @ W_K, V = X @ W_V"),)),
    Step(2, "02_scores", N_("Scores Q K^T"), "numpy", (
        Function("attention_scores", (V("Q", "(..., T_q, d_k)"), V("K", "(..., T_k, d_k)")),
                 (V("scores", "(..., T_q, T_k)"),), "Q K^T over the last two axes"),)),
    Step(3, "03_scaling", N_("Scaling by 1/sqrt(d_k)"), "numpy", (
        Function("scale_scores", (V("scores", "(..., T_q, T_k)"), V("d_k", "int")),
                 (V("scaled", "(..., T_q, T_k)"),), "scores / sqrt(d_k), dtype kept"),)),
    Step(4, "04_softmax", N_("Numerically stable softmax"), "numpy", (
        Function("softmax", (V("x", "any shape"), V("axis=-1", "int")), (V("probs", "the shape of x"),),
                 "numerically stable along `axis`, -inf entries get weight 0"),)),
    Step(5, "05_weighted_sum", N_("Weighted sum and the five steps chained"), "numpy", (
        Function("weighted_sum", (V("weights", "(..., T_q, T_k)"), V("V", "(..., T_k, d_v)")),
                 (V("out", "(..., T_q, d_v)"),), "weights @ V"),
        Function("self_attention", (X_,) + QKV_W, OUT_WEIGHTS,
                 "softmax(Q K^T / sqrt(d_k)) V, single head"))),
    Step(6, "06_multi_head", N_("Multi-head attention"), "torch", (
        Function("split_heads", (X_BTD, V("num_heads", "int")), (V("heads", "(B, h, T, D/h)"),),
                 "head i holds columns i*D/h .. (i+1)*D/h - 1"),
        Function("merge_heads", (V("x", "(B, h, T, D/h)"),), (V("merged", "(B, T, D)"),), "undoes split_heads"),
        Function("multi_head_attention", (X_BTD,) + MHA_W + (V("num_heads", "int"),),
                 (V("out", "(B, T, D)"), V("weights", "(B, h, T, T)")),
                 "W_* applied as x @ W; scores scaled by sqrt(D/h)"))),
    Step(7, "07_full_module", N_("The full nn.Module"), "torch", (
        Module("SingleHeadSelfAttention", (V("d_model", "int"),), ("W_q", "W_k", "W_v"),
               Function("forward", (X_BTD,), (V("out", "(B, T, D)"), V("attn_weights", "(B, T, T)")),
                        "scaled by sqrt(d_model); layers without bias")),
        Module("MultiHeadSelfAttention", (V("d_model", "int"), V("num_heads", "int"), V("bias=True", "bool")),
               ("q_proj", "k_proj", "v_proj", "out_proj"),
               Function("forward", (X_BTD,), (V("out", "(B, T, D)"), V("attn_weights", "(B, h, T, T)")),
                        "scaled by sqrt(D/h)")))),
)

def step_for_stem(stem):
    """The Step whose file stem is `stem` (of any assignment), or None."""
    return STEP_BY_STEM.get(stem)


# ================================================================== the second assignment: modern_attention
# The attention a real language model runs (issue 15), torch throughout, weights applied as x @ W.
# `build` releases it (source/modern_attention/ -> assignments/modern_attention/, references in
# solutions/modern_attention/). STEPS is the first assignment's steps; ALL_STEPS, STEP_BY_STEM and
# step_for_stem (below) cover every assignment. A new step is one more Step(...) in the tuple.
MASK_ARG = V("mask=None", "bool, broadcastable to (..., T_q, T_k)")
NO_KEY = "a query with no allowed key gets zero weights and a zero output, never NaN"

STEPS_OF_MODERN_ATTENTION = (
    Step(1, "01_masks", N_("Causal and padding masks"), "torch", (
        Function("causal_mask", (V("T_q", "int"), V("T_k=None", "int, T_q if None"), V("device=None", "torch.device")),
                 (V("mask", "bool (T_q, T_k)"),),
                 "query i stands at position T_k - T_q + i (the last T_q positions) and may attend keys j <= it"),
        Function("padding_mask", (V("lengths", "int (B,)"), V("T", "int")), (V("mask", "bool (B, T)"),),
                 "True for the first lengths[b] tokens of row b"),
        Function("masked_attention", (V("q", "(..., T_q, d)"), V("k", "(..., T_k, d)"), V("v", "(..., T_k, d_v)"),
                                      MASK_ARG),
                 (V("out", "(..., T_q, d_v)"), V("weights", "(..., T_q, T_k)")),
                 "softmax(q k^T / sqrt(d)) v; mask True = may attend, on any device (moved to the inputs'); "
                 f"masked weights exactly 0; {NO_KEY}"))),
    Step(2, "02_cross_attention", N_("Cross-attention"), "torch", (
        Function("cross_attention", (V("x", "(B, T_q, D)"), V("context", "(B, T_k, D_c)"), V("W_Q", "(D, D)"),
                                     V("W_K", "(D_c, D)"), V("W_V", "(D_c, D)"), V("W_O", "(D, D)"),
                                     V("num_heads", "int"), V("context_mask=None", "bool (B, T_k)")),
                 (V("out", "(B, T_q, D)"), V("weights", "(B, h, T_q, T_k)")),
                 "queries from x, keys and values from context; context_mask True = real token (the opposite "
                 f"of nn.MultiheadAttention's key_padding_mask); scores scaled by sqrt(D/h); {NO_KEY}"),)),
    Step(3, "03_grouped_query", N_("Grouped-query attention"), "torch", (
        Function("grouped_query_attention", (X_BTD, V("W_Q", "(D, D)"), V("W_K", "(D, num_kv_heads * head_dim)"),
                                             V("W_V", "(D, num_kv_heads * head_dim)"), V("W_O", "(D, D)"),
                                             V("num_heads", "int"), V("num_kv_heads", "int"), V("causal=True", "bool")),
                 (V("out", "(B, T, D)"), V("weights", "(B, num_heads, T, T)")),
                 "head_dim = D / num_heads; key/value head j is columns j*head_dim .. (j+1)*head_dim - 1; query "
                 "head i reads key/value head i // (num_heads // num_kv_heads); scaled by sqrt(head_dim); "
                 "num_kv_heads = 1 is multi-query attention, = num_heads multi-head attention"),)),
    Step(4, "04_rope", N_("Rotary position embeddings (RoPE)"), "torch", (
        Function("rope_angles", (V("positions", "int (T,)"), V("head_dim", "int, even"), V("base=10000.0", "float")),
                 (V("angles", "float64 (T, head_dim / 2)"),),
                 "angles[t, i] = positions[t] * base ** (-2i / head_dim)"),
        Function("apply_rope", (V("x", "(..., T, head_dim)"), V("positions", "int (T,)"), V("base=10000.0", "float")),
                 (V("rotated", "the shape and dtype of x"),),
                 "rotate half: element i pairs with element i + head_dim / 2, the pair of token t turned by "
                 "angles[t, i]; cos and sin from the float64 angles, then cast to x's dtype"))),
    Step(5, "05_kv_cache", N_("A KV cache for generation"), "torch", (
        Class("KVCache", (), (
            Function("append", (V("k", "(B, h, T_new, hd)"), V("v", "(B, h, T_new, hd)")),
                     (V("k_all", "(B, h, T_cached + T_new, hd)"), V("v_all", "(B, h, T_cached + T_new, hd)")),
                     "appended along time"),
            Function("__len__", (), (V("T_cached", "int"),), "the cached length"))),
        Module("CausalSelfAttention", (V("d_model", "int"), V("num_heads", "int")),
               ("q_proj", "k_proj", "v_proj", "out_proj"),
               Function("forward", (X_BTD, V("cache=None", "KVCache")), (V("out", "(B, T, D)"),),
                        "layers without bias; causal multi-head attention scaled by sqrt(D/h); with a cache (the "
                        "step's own KVCache), x holds the new tokens only (one or several), their keys and values "
                        "are appended, and new query i attends keys j <= T_k - T + i")),)),
    Step(6, "06_flash_attention", N_("Tiled attention with an online softmax"), "torch", (
        Function("tiled_attention", (V("q", "(B, h, T_q, d)"), V("k", "(B, h, T_k, d)"), V("v", "(B, h, T_k, d)"),
                                     V("block_size=64", "int"), V("causal=False", "bool")),
                 (V("out", "(B, h, T_q, d)"), V("lse", "(B, h, T_q)")),
                 "keys block_size at a time with a running maximum, running sum and rescaled accumulator (online "
                 "softmax), never a (T_q, T_k) tensor; lse = logsumexp of the scores scaled by 1/sqrt(d); causal "
                 "aligned at the end as in step 1; a query with no allowed key gets out 0 and lse -inf, never "
                 "NaN"),)),
)



# ================================================================== the third assignment: decoder
# The pieces compose (issue 31): a small Llama-style decoder that trains and generates, torch
# throughout, weights as nn.Linear layers without bias named as below (the names Hugging Face's
# LlamaForCausalLM uses, so the kit's own tests can load the references' weights into it). Each
# step's notebook is self-contained: the pieces of earlier steps it needs come in a locked cell.
DEC_X = V("x", "(B, T, D)")
LAYER_CACHE = "LayerCache"
KEY_MASK = V("key_mask=None", "bool (B, T_cached + T), True = a real token (padding is False)")

STEPS_OF_DECODER = (
    Step(1, "01_rmsnorm", N_("RMSNorm"), "torch", (
        Module("RMSNorm", (V("dim", "int"), V("eps=1e-06", "float")), ("weight",),
               Function("forward", (V("x", "(..., dim)"),), (V("y", "the shape and dtype of x"),),
                        "y = x / sqrt(mean(x**2, -1) + eps) * weight; eps inside the root; weight a learnable "
                        "nn.Parameter of ones (dim,); float16 and bfloat16 inputs are computed in float32 and "
                        "the result cast back to x's dtype (float32 and float64 kept)")),)),
    Step(2, "02_swiglu", N_("SwiGLU feed-forward"), "torch", (
        Module("SwiGLU", (V("dim", "int"), V("hidden_dim", "int")), ("gate_proj", "up_proj", "down_proj"),
               Function("forward", (V("x", "(..., dim)"),), (V("y", "(..., dim)"),),
                        "down_proj(silu(gate_proj(x)) * up_proj(x)); gate_proj and up_proj nn.Linear(dim, "
                        "hidden_dim), down_proj nn.Linear(hidden_dim, dim), all without bias")),)),
    Step(3, "03_decoder_block", N_("A decoder block: pre-norm, grouped-query attention with RoPE and a cache"),
         "torch", (
        Class(LAYER_CACHE, (), (
            Function("append", (V("k", "(B, num_kv_heads, T_new, head_dim)"), V("v", "(B, num_kv_heads, T_new, head_dim)")),
                     (V("k_all", "(B, num_kv_heads, T_cached + T_new, head_dim)"),
                      V("v_all", "(B, num_kv_heads, T_cached + T_new, head_dim)")),
                     "appended along time; keys are stored after RoPE, with num_kv_heads heads (never repeated "
                     "to num_heads)"),
            Function("__len__", (), (V("T_cached", "int"),), "the cached length"))),
        Module("DecoderBlock", (V("dim", "int"), V("num_heads", "int"), V("num_kv_heads", "int"),
                                V("hidden_dim", "int"), V("eps=1e-06", "float"), V("rope_base=10000.0", "float")),
               ("attn_norm", "q_proj", "k_proj", "v_proj", "o_proj", "ffn_norm", "ffn"),
               Function("forward", (DEC_X, V("cache=None", LAYER_CACHE), V("positions=None", "int (T,) or (B, T)"),
                                    KEY_MASK),
                        (V("out", "(B, T, D)"),),
                        "h = x + attention(attn_norm(x)); out = h + ffn(ffn_norm(h)) (pre-norm: the residual "
                        "adds the block's input, not its norm); attention: head_dim = D / num_heads, q_proj "
                        "nn.Linear(D, D), k_proj and v_proj nn.Linear(D, num_kv_heads * head_dim), o_proj "
                        "nn.Linear(D, D), no bias; RoPE (rotate half, base rope_base) on queries and keys, never "
                        "values, at `positions` (default: len(cache) + arange(T), so a cached call continues "
                        "where the cache ends); the rotated keys and the values are appended to the cache; query "
                        "head i reads key/value head i // (num_heads // num_kv_heads); causal, aligned at the "
                        "end (new query i attends keys j <= T_cached + i); keys where key_mask is False get "
                        "weight 0; scaled by sqrt(head_dim); attn_norm and ffn_norm are RMSNorm(D, eps), ffn is "
                        "SwiGLU(D, hidden_dim)")),)),
    Step(4, "04_model", N_("The model: embedding, blocks, final norm and head"), "torch", (
        Module("DecoderLM", (V("vocab_size", "int"), V("dim", "int"), V("num_layers", "int"), V("num_heads", "int"),
                             V("num_kv_heads", "int"), V("hidden_dim", "int"), V("eps=1e-06", "float"),
                             V("rope_base=10000.0", "float"), V("tie_embeddings=False", "bool")),
               ("embed", "blocks", "norm", "lm_head"),
               Function("forward", (V("tokens", "int64 (B, T)"), V("cache=None", f"list of {LAYER_CACHE}, one per block"),
                                    V("attention_mask=None", "bool (B, T_cached + T), True = a real token")),
                        (V("logits", "(B, T, vocab_size)"),),
                        "embed nn.Embedding(vocab_size, D); blocks an nn.ModuleList of num_layers DecoderBlock; "
                        "norm RMSNorm(D, eps); lm_head nn.Linear(D, vocab_size) without bias, its weight the "
                        "embedding's own Parameter when tie_embeddings; positions continue across cached calls "
                        "(len(cache[0]) + arange(T)), and with an attention_mask a row's positions count its real "
                        "tokens only (cumsum(mask) - 1; padding positions are not counted)")),
        Function("new_cache", (V("model", "DecoderLM"),), (V("cache", f"list of {LAYER_CACHE}"),),
                 "one empty LayerCache per block"))),
    Step(5, "05_generation", N_("Generation with a cache: greedy and sampled"), "torch", (
        Function("sample_next", (V("logits", "(B, vocab_size)"), V("temperature=0.0", "float"), V("top_k=None", "int"),
                                 V("top_p=None", "float"), V("generator=None", "torch.Generator")),
                 (V("next_tokens", "int64 (B,)"),),
                 "temperature 0: argmax (greedy, no random number drawn); else logits / temperature, then keep "
                 "the top_k largest, then the smallest set of most likely tokens whose probability reaches "
                 "top_p (the token that crosses top_p is kept), the rest -inf; one draw per row with "
                 "torch.multinomial(softmax, 1, generator=generator)"),
        Function("generate", (V("model", "DecoderLM"), V("prompts", "int64 (B, T), left-padded"),
                              V("attention_mask=None", "bool (B, T), True = a real token"),
                              V("max_new_tokens=16", "int"), V("temperature=0.0", "float"), V("top_k=None", "int"),
                              V("top_p=None", "float"), V("eos_id=None", "int"),
                              V("generator=None", "torch.Generator")),
                 (V("tokens", "int64 (B, T + n), n <= max_new_tokens"),),
                 "prefill the prompts in one call with a new cache, then one token a call; the mask grows by "
                 "one real column a step; a row that has produced eos_id gets eos_id from then on, and "
                 "generation stops when every row has or after max_new_tokens"))),
    Step(6, "06_training", N_("A loss and a training step"), "torch", (
        Function("lm_loss", (V("logits", "(B, T, vocab_size)"), V("tokens", "int64 (B, T)"),
                             V("attention_mask=None", "bool (B, T)")),
                 (V("loss", "scalar tensor"),),
                 "mean cross-entropy of logits[:, :-1] against tokens[:, 1:] (the next token), targets that "
                 "are padding not counted"),
        Function("train_step", (V("model", "DecoderLM"), V("optimizer", "torch.optim.Optimizer"),
                                V("tokens", "int64 (B, T)")),
                 (V("loss", "float"),),
                 "zero the gradients, lm_loss of model(tokens), backward, one optimizer step; the loss before "
                 "the step")),
         # the grader's torch.optim.SGD: an optimizer's first use imports torch._dynamo (about a second)
         child_imports=("torch._dynamo",)),
)


# ================================================================== the registry
@dataclass(frozen=True)
class Assignment:
    """One assignment as the grader and the reports see it: its steps, where its hidden suites lie
    (`suites/step<stem>.py`) and where its released stubs lie (what similarity discounts)."""
    name: str
    steps: tuple                     # of Step, in order
    suites: Path = KIT_ROOT / "autograder" / "suites"
    stubs: Path = None               # default: <kit>/assignments/<name>
    home: Path = None                # a folder of its own outside the kit (packed into the Gradescope zip), or None
    # its known mistakes applied to its references, one module per step named for the stem without
    # its number (01_masks -> masks.py), each with the audit's probes(rng, dtype, scale): a package's
    # import name ("autograder.reference.modern") or a folder (a Path) of such modules; None: the
    # first assignment's, in reference/variants.py and reference/equivalence.py
    variants: object = None
    # the folder of its references, step<stem>.py each (the suites' oracle, what the audit mutates);
    # None: solutions/<tag>/ (where `build` writes the kit's own)
    references: Path = None
    # the mutation operators its audit applies (reference/mutants.py); None: every one (OPERATORS)
    operators: tuple = None
    # what its derived files are named by: its name unless said (solutions/<name>/,
    # notebooks_<name>.pot, docs/mutation_audit_<name>.json, `<name>` in the docs' markers); the
    # first assignment's is "", its files keep the names they had when it was the only one
    # (references at the top of solutions/, notebooks.pot, docs/mutation_audit.json, plain markers)
    file_tag: str = None

    @property
    def tag(self):
        """file_tag, or the name: "" for the first assignment, "modern_attention" for the second."""
        return self.name if self.file_tag is None else self.file_tag

    def tagged(self, plain, sep="_"):
        """`plain` with the assignment's tag: "notebooks" -> "notebooks" (first), "notebooks_modern_attention"."""
        return f"{plain}{sep}{self.tag}" if self.tag else plain

    @property
    def reference_folder(self):
        return Path(self.references) if self.references is not None else KIT_ROOT / "solutions" / self.tag

    def reference_file(self, stem):
        """The reference of one of its steps: <reference_folder>/step<stem>.py."""
        return self.reference_folder / f"step{stem}.py"

    @property
    def stub_folder(self):
        return Path(self.stubs) if self.stubs is not None else KIT_ROOT / "assignments" / self.name

    @property
    def max_score(self):
        return sum(s.points for s in self.steps)

    @property
    def stems(self):
        return [s.stem for s in self.steps]


# Every assignment, by folder name (source/<name>/ -> assignments/<name>/), in order.
REGISTRY = {}
ASSIGNMENTS = {}            # name -> its steps (REGISTRY's, kept in step)
ALL_STEPS = ()
ASSIGNMENT_OF = {}          # step stem -> assignment name: a submission says which assignment it is by its files
STEP_BY_STEM = {}


def register(assignment):
    """Add an assignment (an `Assignment`) to the registry; a step stem of two assignments is refused."""
    clash = [s.stem for s in assignment.steps if ASSIGNMENT_OF.get(s.stem, assignment.name) != assignment.name]
    if clash:
        raise ValueError(f"assignment {assignment.name}: step stem(s) {', '.join(clash)} belong to another assignment")
    REGISTRY[assignment.name] = assignment
    _reindex()
    return assignment


def unregister(name):
    """Remove an assignment (a test's, when it is done)."""
    REGISTRY.pop(name, None)
    _reindex()


def _reindex():
    global ALL_STEPS
    ASSIGNMENTS.clear()
    ASSIGNMENTS.update({name: a.steps for name, a in REGISTRY.items()})
    ALL_STEPS = tuple(step for steps in ASSIGNMENTS.values() for step in steps)
    ASSIGNMENT_OF.clear()
    ASSIGNMENT_OF.update({step.stem: name for name, steps in ASSIGNMENTS.items() for step in steps})
    STEP_BY_STEM.clear()
    STEP_BY_STEM.update({s.stem: s for s in ALL_STEPS})


def assignment_of_step(stem):
    """The Assignment a step stem belongs to, or None."""
    name = ASSIGNMENT_OF.get(stem)
    return None if name is None else REGISTRY[name]


def suite_file(step):
    """The hidden suite of a Step: <its assignment's suites folder>/step<stem>.py."""
    return Path(assignment_of_step(step.stem).suites) / f"step{step.stem}.py"


def step_of_file(name):
    """The Step (of any assignment) a submitted file name is for ("04_softmax.ipynb"), or None."""
    step = STEP_BY_STEM.get(os.path.splitext(name)[0])
    return step if step is not None and name in step.files else None


def step_file_names():
    """{file name: Step} of every registered assignment's step files ("04_softmax.ipynb", ...)."""
    return {name: step for step in ALL_STEPS for name in step.files}


def assignment_of_report(stems):
    """The assignment of a graded report from its steps' stems (the first stem's), or None."""
    for stem in stems:
        if stem in ASSIGNMENT_OF:
            return ASSIGNMENT_OF[stem]
    return None


register(Assignment(DEFAULT_ASSIGNMENT, STEPS, file_tag=""))
register(Assignment("modern_attention", STEPS_OF_MODERN_ATTENTION, variants="autograder.reference.modern"))


def _decoder_steps():
    """The decoder's steps that exist so far (issue 31 is built in two halves, steps 1-3 and 4-6, merged
    one after the other): those with a hidden suite (what grading needs, shipped wherever the grader
    runs) or a master notebook (what `build` releases). Once both halves are in, every step."""
    return tuple(s for s in STEPS_OF_DECODER
                 if (KIT_ROOT / "autograder" / "suites" / f"step{s.stem}.py").exists()
                 or (KIT_ROOT / "source" / "decoder" / f"{s.stem}.ipynb").exists())


register(Assignment("decoder", _decoder_steps(), variants="autograder.reference.decoder"))


def assignments_of(stems):
    """{assignment: sorted stems} for the step stems a submission holds, in ASSIGNMENTS' order
    (two keys: a folder that mixes two assignments, which grading refuses)."""
    out = {}
    for name, steps in ASSIGNMENTS.items():
        mine = [s.stem for s in steps if s.stem in stems]
        if mine:
            out[name] = mine
    return out


# ------------------------------------------------------------------ the contract page's tables, from the contract
CONTRACT_PAGE = "docs/contract.md"     # the documentation site's contract page (issue 29: once README.md)
README_BEGIN, README_END = "<!-- contract:table begin -->", "<!-- contract:table end -->"


def _item(item):
    if isinstance(item, Class):
        methods = "; ".join(f"`{m.signature()}`: " + "; ".join(f"{a.name} `{a.shape}`" for a in m.args + m.returns)
                            + f", {m.meaning}" for m in item.methods)
        return f"`{item.signature()}`: {methods}"
    if isinstance(item, Module):
        layers = ", ".join(f"`{n}`" for n in item.layers)
        f = item.forward
        shapes = "; ".join(f"{a.name} `{a.shape}`" for a in f.args + f.returns)
        return f"`{item.signature()}` ({layers}): `{f.signature()}`, {shapes}; {f.meaning}"
    shapes = "; ".join(f"{a.name.split('=')[0]} `{a.shape}`" for a in item.args + item.returns)
    return f"`{item.signature()}`: {shapes}; {item.meaning}"


def readme_markers(assignment=DEFAULT_ASSIGNMENT):
    """(begin, end): the markers around an assignment's table in docs/contract.md (tagged: the
    first assignment's are the plain ones)."""
    name = REGISTRY[assignment].tagged("contract:table", " ")
    return f"<!-- {name} begin -->", f"<!-- {name} end -->"


def readme_table(assignment=DEFAULT_ASSIGNMENT):
    """The contract of an assignment as docs/contract.md shows it, between its markers (a test checks
    that the page holds exactly this)."""
    begin, end = readme_markers(assignment)
    lines = ["| file | library | defines: shapes; meaning |", "|---|---|---|"]
    for step in ASSIGNMENTS[assignment]:
        lines.append(f"| `{step.stem}` | {step.framework} | " + "<br>".join(_item(i) for i in step.api) + " |")
    return f"{begin}\n" + "\n".join(lines) + f"\n{end}"


# ------------------------------------------------------------------ assignments named by the environment
ENV_VAR = "ATTENTION_KIT_ASSIGNMENTS"


def load_file(path):
    """Run an assignment's Python file (the instructor's, trusted like the kit) that registers it.
    Its module is named for its path, so loading it twice registers it once."""
    path = Path(path).resolve()
    import hashlib
    import sys
    name = "attention_kit_assignment_" + hashlib.sha256(str(path).encode()).hexdigest()[:16]
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


for _path in filter(None, os.environ.get(ENV_VAR, "").split(os.pathsep)):
    load_file(_path)
