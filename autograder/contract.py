"""The student contract: which file defines what, shared by the grader, the release and the tests.

Names, signatures and shapes are fixed here once; everything else reads them from this table.
"""
from dataclasses import dataclass

from autograder.i18n import N_, translate

ASSIGNMENT = "self_attention"


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
class Step:
    number: int          # 1..7
    stem: str            # file stem, e.g. "04_softmax"
    title: str
    framework: str       # "numpy" or "torch": what the student's code works with
    api: tuple           # the Functions / Modules the file must define
    points: int = 10     # the step's total; the hidden suite splits it between checks

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

STEP_BY_STEM = {s.stem: s for s in STEPS}


def step_for_stem(stem):
    """The Step whose file stem is `stem`, or None."""
    return STEP_BY_STEM.get(stem)


# ------------------------------------------------------------------ the README's table, from the contract
README_BEGIN, README_END = "<!-- contract:table begin -->", "<!-- contract:table end -->"


def _item(item):
    if isinstance(item, Module):
        layers = ", ".join(f"`{n}`" for n in item.layers)
        f = item.forward
        shapes = "; ".join(f"{a.name} `{a.shape}`" for a in f.args + f.returns)
        return f"`{item.signature()}` ({layers}): `{f.signature()}`, {shapes}; {f.meaning}"
    shapes = "; ".join(f"{a.name.split('=')[0]} `{a.shape}`" for a in item.args + item.returns)
    return f"`{item.signature()}`: {shapes}; {item.meaning}"


def readme_table():
    """The contract as the README shows it (a test checks that README.md holds exactly this)."""
    lines = ["| file | library | defines: shapes; meaning |", "|---|---|---|"]
    for step in STEPS:
        lines.append(f"| `{step.stem}` | {step.framework} | " + "<br>".join(_item(i) for i in step.api) + " |")
    return f"{README_BEGIN}\n" + "\n".join(lines) + f"\n{README_END}"
