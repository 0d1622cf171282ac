"""A generated class for the class report (issue 16): every student's code their own.

`write_class(root, plan)` writes one folder per student, each step as a `.py` file or as the
released notebook with the student's code in its solution cells. Each student's code is put
together from random choices per statement (the idiom of each product, transpose, softmax,
helper functions or not, checks or not, the order of the functions), so independent students
write correct code in different styles; a student has a kind per step:

- "correct", "slow" (a Python loop over tokens, rows or batch entries: loses the complexity point),
  "stub" (the released stub left in), "missing" (no file),
- a mistake the grader names: "scale-multiplied", "scale-by-d", "scale-missing",
  "softmax-unstable", "softmax-wrong-axis", "scores-transposed", "weights-transposed",
  "scale-by-d-model", "heads-reshape-no-transpose", "missing-output-projection",
  "projection-swapped", "broadcast-weighted-sum", "forbidden-api".

A copy (`copy_of=`) takes another student's choices and writes them with other variable names,
other comments and the functions in another order (and, when the original is a script, as a
notebook): what a student who copied and disguised it would hand in.

`python tests/harness/class_maker.py ROOT N` writes a class of N students for a timing run.
"""
import json
import random
import re
import sys
from pathlib import Path
from string import Template

ROOT = Path(__file__).resolve().parent.parent.parent
STUBS = ROOT / "assignments" / "self_attention"
STEMS = ["01_projection", "02_scores", "03_scaling", "04_softmax", "05_weighted_sum", "06_multi_head",
         "07_full_module"]

# the names a student gives things: each placeholder, several spellings
NAMES = {
    "q": ["Q", "q", "queries", "qs", "query"], "k": ["K", "k", "keys", "ks", "key"],
    "v": ["V", "v", "values", "vs", "value"], "s": ["scores", "s", "logits", "sc", "att"],
    "w": ["weights", "w", "probs", "attn", "p"], "e": ["e", "ex", "exps", "num", "expd"],
    "m": ["m", "mx", "row_max", "peak", "biggest"], "z": ["z", "total", "denom", "norm", "summed"],
    "o": ["out", "o", "result", "res", "y"], "W": ["W", "M", "mat", "weight", "proj"],
    "t": ["t", "i", "pos", "j", "n"], "hd": ["hd", "head_dim", "dh", "d_head", "size"],
    "h": ["h", "heads", "nh", "n_heads", "H"], "x1": ["xs", "inp", "data", "arr", "a"],
    "f": ["_project", "_proj", "_apply", "_lin", "_mm"], "g": ["_check", "_validate", "_shapes_ok", "_guard",
                                                              "_ensure"],
    "sp": ["_split", "_to_heads", "_heads", "_part", "_chunk"], "mg": ["_merge", "_from_heads", "_join",
                                                                       "_concat", "_glue"],
    "at": ["_attend", "_attention", "_core", "_mix", "_sdpa_own"],
}
COMMENTS = ["# first the projections", "# shapes: (..., T, d)", "# TODO tidy up", "# works for batches too",
            "# see lecture 3", "# vectorised, no loops", "# keep the dtype", "# this was tricky",
            "# checked against the notebook", "# rows are queries", "# numerically stable",
            "# my own version", "# helper", "# (B, h, T, hd)", "# done", "# inspired by the slides"]


def pick(rng, options):
    return options[rng.randrange(len(options))]


# ------------------------------------------------------------------ statement idioms
def mm(rng, a, b):
    """a @ b for a (..., T, d) and a 2-D b."""
    return pick(rng, [f"{a} @ {b}", f"np.matmul({a}, {b})", f"np.dot({a}, {b})",
                      f'np.einsum("...td,dk->...tk", {a}, {b})', f"np.tensordot({a}, {b}, axes=1)"])


def kt(rng, k):
    return pick(rng, [f"np.swapaxes({k}, -1, -2)", f"{k}.swapaxes(-2, -1)", f"np.moveaxis({k}, -1, -2)"])


def scores_expr(rng, q, k):
    return pick(rng, [f"{q} @ {kt(rng, k)}", f"np.matmul({q}, {kt(rng, k)})",
                      f'np.einsum("...qd,...kd->...qk", {q}, {k})', f'np.einsum("...id,...jd->...ij", {q}, {k})'])


def scale_expr(rng, s, d, promotion_ok=True):
    """A correct scaling. NumPy 2's float64 promotion by np.sqrt is accepted in step 3 only
    (promotion_ok); in step 5's chain a float32 input must give float32."""
    keep = [f"{s} / math.sqrt({d})", f"{s} * {d} ** -0.5", f"{s} / {d} ** 0.5", f"{s} * (1.0 / math.sqrt({d}))"]
    return pick(rng, keep + ([f"{s} / np.sqrt({d})", f"np.divide({s}, np.sqrt({d}))"] if promotion_ok else []))


def prelude(rng, names):
    lines = []
    if rng.random() < 0.4:
        lines.append(pick(rng, [f"{n} = np.asarray({n})" for n in names]))
    if rng.random() < 0.3:
        lines.append(f'assert {names[0]}.ndim >= 2, "{pick(rng, ["need a matrix", "bad input", "at least 2-D"])}"')
    return lines


def body(lines, indent="    "):
    return "\n".join(indent + ln if ln else "" for ln in lines)


# ------------------------------------------------------------------ the steps
def step01(rng, kind):
    blocks = []
    wq, wk, wv = ("W_Q", "W_V", "W_K") if kind == "projection-swapped" else ("W_Q", "W_K", "W_V")
    style = rng.randrange(4)
    lines = prelude(rng, ["X"])
    if kind == "slow":
        lines += [f"$q = np.stack([X[..., $t, :] @ {wq} for $t in range(X.shape[-2])], axis=-2)",
                  f"$k = np.stack([X[..., $t, :] @ {wk} for $t in range(X.shape[-2])], axis=-2)",
                  f"$v = np.stack([X[..., $t, :] @ {wv} for $t in range(X.shape[-2])], axis=-2)",
                  "return $q, $k, $v"]
    elif style == 0:
        lines += [f"$q = {mm(rng, 'X', wq)}", f"$k = {mm(rng, 'X', wk)}", f"$v = {mm(rng, 'X', wv)}",
                  "return $q, $k, $v"]
    elif style == 1:
        lines += [f"return tuple({mm(rng, 'X', '$W')} for $W in ({wq}, {wk}, {wv}))"
                  if rng.random() < 0.5 else f"return tuple([{mm(rng, 'X', '$W')} for $W in [{wq}, {wk}, {wv}]])"]
    elif style == 2:
        blocks.append("def $f(X, $W):\n" + body([f"return {mm(rng, 'X', '$W')}"]))
        lines += [f"return $f(X, {wq}), $f(X, {wk}), $f(X, {wv})"]
    else:
        lines += [f"$W = np.concatenate([{wq}, {wk}, {wv}], axis=1)", f"$o = {mm(rng, 'X', '$W')}",
                  f"$hd = {wq}.shape[1]", f"$q, $k, $v = np.split($o, [$hd, $hd + {wk}.shape[1]], axis=-1)",
                  "return $q, $k, $v"]
    blocks.append("def project_qkv(X, W_Q, W_K, W_V):\n" + body(lines))
    return ["import numpy as np"], blocks


def step02(rng, kind):
    lines = prelude(rng, ["Q", "K"])
    if kind == "slow":
        lines += ["$s = [(Q[..., $t:$t + 1, :] * K).sum(axis=-1) for $t in range(Q.shape[-2])]",
                  "return np.stack($s, axis=-2)"]
    elif kind == "scores-transposed":
        lines += [f"return {scores_expr(rng, 'K', 'Q')}"]
    else:
        if rng.random() < 0.5:
            lines += [f"$s = {scores_expr(rng, 'Q', 'K')}", "return $s"]
        else:
            lines += [f"return {scores_expr(rng, 'Q', 'K')}"]
    return ["import numpy as np"], ["def attention_scores(Q, K):\n" + body(lines)]


def step03(rng, kind):
    lines = prelude(rng, ["scores"])
    if rng.random() < 0.3:
        lines.append(f'if d_k <= 0:\n        raise ValueError("{pick(rng, ["d_k must be positive", "bad d_k"])}")')
    if kind == "slow":
        lines += ["$o = np.empty_like(scores)", "for $t in np.ndindex(scores.shape[:-1]):",
                  "    $o[$t] = scores[$t] / math.sqrt(d_k)", "return $o"]
    elif kind == "scale-multiplied":
        lines += [f"return scores * {pick(rng, ['np.sqrt(d_k)', 'math.sqrt(d_k)', 'd_k ** 0.5'])}"]
    elif kind == "scale-by-d":
        lines += [pick(rng, ["return scores / d_k", "return np.divide(scores, d_k)"])]
    elif kind == "scale-missing":
        lines += ["return scores.copy()"]
    else:
        lines += [f"return {scale_expr(rng, 'scores', 'd_k')}"]
    return ["import math", "import numpy as np"], ["def scale_scores(scores, d_k):\n" + body(lines)]


def softmax_lines(rng, kind, x="x", axis="axis"):
    """The body of a numpy softmax (list of lines), returning the probabilities."""
    sum_axis = "0" if kind == "softmax-wrong-axis" else axis
    if kind == "slow":
        return [f"{x} = np.moveaxis({x}, {axis}, -1)", "$o = np.empty_like(" + x + ")",
                f"for $t in np.ndindex({x}.shape[:-1]):", f"    $e = np.exp({x}[$t] - {x}[$t].max())",
                "    $o[$t] = $e / $e.sum()", f"return np.moveaxis($o, -1, {axis})"]
    if kind == "forbidden-api":
        return [f"return special.softmax({x}, axis={axis})"]
    lines = []
    if kind != "softmax-unstable":
        lines.append("$m = " + pick(rng, [f"{x}.max(axis={axis}, keepdims=True)",
                                          f"np.max({x}, axis={axis}, keepdims=True)",
                                          f"np.amax({x}, axis={axis}, keepdims=True)",
                                          f"np.expand_dims({x}.max(axis={axis}), {axis})"]))
        shifted = f"{x} - $m"
    else:
        shifted = x
    lines.append(f"$e = np.exp({shifted})")
    lines.append("$z = " + pick(rng, [f"$e.sum(axis={sum_axis}, keepdims=True)",
                                      f"np.sum($e, axis={sum_axis}, keepdims=True)"]))
    lines.append(pick(rng, ["return $e / $z", "return np.divide($e, $z)", "return $e * (1.0 / $z)"]))
    return lines


def step04(rng, kind):
    lines = prelude(rng, ["x"]) + softmax_lines(rng, kind)
    imports = ["import numpy as np"] + (["from scipy import special"] if kind == "forbidden-api" else [])
    return imports, ["def softmax(x, axis=-1):\n" + body(lines)]


def step05(rng, kind):
    """weighted_sum and self_attention, with the student's own copies of steps 1-4 (or inline)."""
    imports, blocks = ["import math", "import numpy as np"], []
    if kind == "slow":
        ws = ["return np.concatenate([$w[..., $t:$t + 1, :] @ V for $t in range($w.shape[-2])], axis=-2)"]
    elif kind == "broadcast-weighted-sum":
        ws = ["return ($w[..., :, :, None] * V[..., None, :, :]).sum(axis=-2)"]
    else:
        ws = [pick(rng, ["return $w @ V", "return np.matmul($w, V)", 'return np.einsum("...qk,...kd->...qd", $w, V)'])]
    blocks.append("def weighted_sum($w, V):\n" + body(ws))
    d = "X.shape[-1]" if kind == "scale-by-d-model" else pick(rng, ["$k.shape[-1]", "W_K.shape[1]", "$q.shape[-1]"])
    mix = "np.swapaxes($w, -1, -2)" if kind == "weights-transposed" else "$w"
    if rng.random() < 0.5:       # the earlier steps as functions of their own
        _, b1 = step01(rng, "correct")
        _, b2 = step02(rng, "correct")
        _, b4 = step04(rng, "correct")
        blocks += b1 + b2 + b4
        lines = ["$q, $k, $v = project_qkv(X, W_Q, W_K, W_V)",
                 f"$s = {pick(rng, ['attention_scores($q, $k) / math.sqrt(' + d + ')', 'attention_scores($q, $k) * ' + d + ' ** -0.5'])}",
                 "$w = softmax($s, axis=-1)", f"return weighted_sum({mix}, $v), $w"]
    else:
        lines = prelude(rng, ["X"])
        if rng.random() < 0.5:
            lines += [f"$q, $k, $v = {mm(rng, 'X', 'W_Q')}, {mm(rng, 'X', 'W_K')}, {mm(rng, 'X', 'W_V')}"]
        else:
            lines += [f"$q = {mm(rng, 'X', 'W_Q')}", f"$k = {mm(rng, 'X', 'W_K')}", f"$v = {mm(rng, 'X', 'W_V')}"]
        if rng.random() < 0.5:
            lines += [f"$hd = {d}"]
            d = "$hd"
        if rng.random() < 0.5:
            lines += [f"$s = {scores_expr(rng, '$q', '$k')}", f"$s = {scale_expr(rng, '$s', d, promotion_ok=False)}"]
        else:
            lines += [f"$s = {scale_expr(rng, scores_expr(rng, '$q', '$k'), d, promotion_ok=False)}"]
        lines += [ln.replace("return ", "$w = ") for ln in softmax_lines(rng, "correct", "$s", "-1")]
        lines += pick(rng, [[f"return weighted_sum({mix}, $v), $w"],
                            [f"$o = weighted_sum({mix}, $v)", "return $o, $w"]])
    blocks.append("def self_attention(X, W_Q, W_K, W_V):\n" + body(lines))
    return imports, blocks


def split_expr(rng, x, h, kind):
    if kind == "heads-reshape-no-transpose":
        return f"{x}.reshape(B, {h}, T, D // {h})"
    return pick(rng, [f"{x}.view(B, T, {h}, D // {h}).transpose(1, 2)",
                      f"{x}.reshape(B, T, {h}, -1).permute(0, 2, 1, 3)",
                      f"torch.stack({x}.chunk({h}, dim=-1), dim=1)",
                      f"{x}.unflatten(-1, ({h}, -1)).transpose(1, 2)"])


def merge_expr(rng, x):
    return pick(rng, [f"{x}.transpose(1, 2).reshape(B, T, -1)",
                      f"{x}.permute(0, 2, 1, 3).contiguous().view(B, T, -1)",
                      f"torch.cat({x}.unbind(1), dim=-1)", f"{x}.transpose(1, 2).flatten(2)"])


def torch_scores(rng, q, k, d):
    d = f"({d})" if " " in d else d
    s = pick(rng, [f"{q} @ {k}.transpose(-2, -1)", f"torch.matmul({q}, {k}.transpose(-1, -2))",
                   f'torch.einsum("...qd,...kd->...qk", {q}, {k})', f"{q} @ {k}.mT"])
    return pick(rng, [f"{s} / math.sqrt({d})", f"{s} * {d} ** -0.5", f"{s} / {d} ** 0.5"])


def torch_softmax(rng, s):
    return pick(rng, [f"torch.softmax({s}, dim=-1)", f"({s}).softmax(dim=-1)", f"F.softmax({s}, dim=-1)"])


def shape_line(rng, names="B, T, D"):
    return pick(rng, [f"{names} = x.shape", f"{names} = x.size()", f"{names} = tuple(x.shape)"])


def maybe(rng, line, p=0.5):
    return [line] if rng.random() < p else []


def step06(rng, kind):
    imports = ["import math", "import torch", "import torch.nn.functional as F"]
    sp = [shape_line(rng)] + maybe(rng, 'assert D % num_heads == 0, "heads must divide D"', 0.4)
    sp += ["return " + split_expr(rng, "x", "num_heads", kind)] if rng.random() < 0.6 else \
        [f"$o = {split_expr(rng, 'x', 'num_heads', kind)}", "return $o"]
    mg = [pick(rng, ["B, $h, T, $hd = x.shape", "B, $h, T, $hd = x.size()", "B, T = x.shape[0], x.shape[2]"])]
    mg += ["return " + merge_expr(rng, "x")] if rng.random() < 0.6 else [f"$o = {merge_expr(rng, 'x')}", "return $o"]
    d = "D" if kind == "scale-by-d-model" else pick(rng, ["$hd", "$q.shape[-1]", "D // num_heads", "$q.size(-1)"])
    if kind == "slow":       # a loop over the batch entries
        lines = [shape_line(rng), "$hd = D // num_heads", "$o, $w = [], []", "for $t in range(B):",
                 "    xb = x[$t:$t + 1]",
                 "    $q, $k, $v = (split_heads(xb @ $W, num_heads) for $W in (W_Q, W_K, W_V))",
                 f"    a = {torch_softmax(rng, torch_scores(rng, '$q', '$k', d))}",
                 "    $o.append(merge_heads(a @ $v) @ W_O)", "    $w.append(a)",
                 "return torch.cat($o), torch.cat($w)"]
    else:
        lines = [shape_line(rng)] + maybe(rng, "$hd = D // num_heads", 0.7 if "$hd" in d else 0.3)
        if "$hd" in d and "$hd = D // num_heads" not in lines:
            lines.append("$hd = D // num_heads")
        style = rng.randrange(3)
        mat = pick(rng, ["x @ {}", "torch.matmul(x, {})"])
        if style == 0:
            lines += ["$q, $k, $v = (split_heads(" + mat.format("$W") + ", num_heads) for $W in (W_Q, W_K, W_V))"]
        elif style == 1:
            lines += [f"$q = split_heads({mat.format('W_Q')}, num_heads)",
                      f"$k = split_heads({mat.format('W_K')}, num_heads)",
                      f"$v = split_heads({mat.format('W_V')}, num_heads)"]
        else:
            lines += ["$q, $k, $v = [split_heads(" + mat.format("$W") + ", num_heads) for $W in [W_Q, W_K, W_V]]"]
        if rng.random() < 0.5:
            lines += [f"$s = {torch_scores(rng, '$q', '$k', d)}", f"$w = {torch_softmax(rng, '$s')}"]
        else:
            lines += [f"$w = {torch_softmax(rng, torch_scores(rng, '$q', '$k', d))}"]
        heads = "F.scaled_dot_product_attention($q, $k, $v)" if kind == "forbidden-api" else "$w @ $v"
        proj = "" if kind == "missing-output-projection" else pick(rng, [" @ W_O", ".matmul(W_O)"])
        if rng.random() < 0.5:
            lines += [f"$e = {heads}", f"$o = merge_heads($e){proj}", "return $o, $w"]
        else:
            lines += [f"return merge_heads({heads}){proj}, $w"]
    blocks = ["def split_heads(x, num_heads):\n" + body(sp), "def merge_heads(x):\n" + body(mg),
              "def multi_head_attention(x, W_Q, W_K, W_V, W_O, num_heads):\n" + body(lines)]
    return imports, blocks


def step07(rng, kind):
    imports = ["import math", "import torch", "import torch.nn as nn", "import torch.nn.functional as F"]
    blocks = []
    shared = rng.random() < 0.5
    if shared:
        blocks.append("def $at($q, $k, $v):\n" + body(
            maybe(rng, "$hd = $q.shape[-1]", 0.4)
            + [f"$w = {torch_softmax(rng, torch_scores(rng, '$q', '$k', '$q.shape[-1]'))}"]
            + pick(rng, [["return $w @ $v, $w"], ["$o = $w @ $v", "return $o, $w"],
                         ["return torch.matmul($w, $v), $w"]])))
    scaled = rng.random() < 0.4
    if shared:
        single_fwd = pick(rng, [["return $at(self.W_q(x), self.W_k(x), self.W_v(x))"],
                                ["$q, $k, $v = self.W_q(x), self.W_k(x), self.W_v(x)", "return $at($q, $k, $v)"]])
    else:
        sc = "$s * self.scale" if scaled else torch_scores(rng, "$q", "$k", "x.shape[-1]")
        single_fwd = (["$q, $k, $v = self.W_q(x), self.W_k(x), self.W_v(x)"]
                      + (["$s = $q @ $k.transpose(-2, -1)"] if scaled else [])
                      + [f"$w = {torch_softmax(rng, sc)}",
                         pick(rng, ["return $w @ $v, $w", "return torch.bmm($w, $v), $w"])])
    single_init = (maybe(rng, "self.d_model = d_model", 0.4)
                   + (["self.scale = d_model ** -0.5"] if scaled and not shared else [])
                   + pick(rng, [["self.W_q, self.W_k, self.W_v = (nn.Linear(d_model, d_model, bias=False) "
                                 "for _ in range(3))"],
                                [f"self.{n} = nn.Linear(d_model, d_model, bias=False)" for n in ("W_q", "W_k", "W_v")]]))
    single = ("class SingleHeadSelfAttention(nn.Module):\n"
              "    def __init__(self, d_model):\n        super().__init__()\n" + body(single_init, "        ")
              + "\n\n    def forward(self, x):\n" + body(single_fwd, "        "))
    proj = pick(rng, ["p(x)", "F.linear(x, p.weight, p.bias)"])
    split = {"heads-reshape-no-transpose": "{t}.reshape(B, self.$h, T, -1)"}.get(
        kind, pick(rng, ["{t}.view(B, T, self.$h, -1).transpose(1, 2)",
                         "{t}.unflatten(-1, (self.$h, -1)).transpose(1, 2)",
                         "{t}.reshape(B, T, self.$h, D // self.$h).permute(0, 2, 1, 3)"]))
    methods = []
    fwd = [shape_line(rng)]
    style = rng.randrange(3)
    if style == 0:
        fwd += [f"$q, $k, $v = ({split.format(t=proj)} for p in (self.q_proj, self.k_proj, self.v_proj))"]
    elif style == 1:
        fwd += [f"$q = {split.format(t='self.q_proj(x)')}", f"$k = {split.format(t='self.k_proj(x)')}",
                f"$v = {split.format(t='self.v_proj(x)')}"]
    else:
        methods.append("    def $sp(self, t, B, T, D):\n" + body([f"return {split.format(t='t')}"], "        "))
        fwd += ["$q = self.$sp(self.q_proj(x), B, T, D)", "$k = self.$sp(self.k_proj(x), B, T, D)",
                "$v = self.$sp(self.v_proj(x), B, T, D)"]
    if kind == "slow":     # one head at a time
        fwd += ["pairs = [$at($q[:, $t], $k[:, $t], $v[:, $t]) for $t in range(self.$h)]" if shared else
                f"pairs = [(lambda a: (a @ $v[:, $t], a))({torch_softmax(rng, torch_scores(rng, '$q[:, $t]', '$k[:, $t]', 'D // self.$h'))}) for $t in range(self.$h)]",
                "$o = torch.stack([a for a, _ in pairs], dim=1)", "$w = torch.stack([b for _, b in pairs], dim=1)"]
    elif shared:
        fwd += ["$o, $w = $at($q, $k, $v)"]
    else:
        fwd += [f"$w = {torch_softmax(rng, torch_scores(rng, '$q', '$k', pick(rng, ['D // self.$h', '$q.shape[-1]'])))}",
                "$o = $w @ $v"]
    merged = ("$o.reshape(B, T, D)" if kind == "heads-merge-no-transpose" else merge_expr(rng, "$o"))
    if kind != "heads-merge-no-transpose" and rng.random() < 0.4:
        methods.append("    def $mg(self, t, B, T):\n" + body([f"return {merge_expr(rng, 't')}"], "        "))
        merged = "self.$mg($o, B, T)"
    if rng.random() < 0.4:
        fwd += [f"$e = {merged}", "return $e, $w" if kind == "missing-output-projection" else
                "return self.out_proj($e), $w"]
    else:
        fwd += [f"return {merged}, $w" if kind == "missing-output-projection" else f"return self.out_proj({merged}), $w"]
    multi_init = (maybe(rng, "assert d_model % num_heads == 0", 0.5) + ["self.$h = num_heads"]
                  + maybe(rng, "self.$hd = d_model // num_heads", 0.4)
                  + pick(rng, [["self.q_proj, self.k_proj, self.v_proj, self.out_proj = (",
                                "    nn.Linear(d_model, d_model, bias=bias) for _ in range(4))"],
                               [f"self.{n} = nn.Linear(d_model, d_model, bias=bias)"
                                for n in ("q_proj", "k_proj", "v_proj", "out_proj")]]))
    multi = ("class MultiHeadSelfAttention(nn.Module):\n"
             "    def __init__(self, d_model, num_heads, bias=True):\n        super().__init__()\n"
             + body(multi_init, "        ") + "\n\n" + "".join(m + "\n\n" for m in methods)
             + "    def forward(self, x):\n" + body(fwd, "        "))
    return imports, blocks + [single, multi]


STEPS = dict(zip(STEMS, [step01, step02, step03, step04, step05, step06, step07]))


# ------------------------------------------------------------------ a student's files
def code_for(stem, kind, seed, style_seed):
    """The code of one step: choices from `seed`, names, comments and order from `style_seed`."""
    rng, style = random.Random(f"{seed}:{stem}"), random.Random(f"{style_seed}:{stem}")
    imports, blocks = STEPS[stem](rng, kind)
    names = {p: pick(style, spellings) for p, spellings in NAMES.items()}
    helpers, public = [b for b in blocks if b.startswith("def _") or b.startswith("def $")], \
        [b for b in blocks if not (b.startswith("def _") or b.startswith("def $"))]
    ordered = helpers + public
    style.shuffle(ordered) if stem not in ("07_full_module",) else None
    if stem == "07_full_module":       # the helper first: the classes call it
        ordered = helpers + (public if style.random() < 0.5 else public[::-1])
    out = []
    for block in ordered:
        lines = block.split("\n")
        for _ in range(style.randrange(3)):
            at = style.randrange(1, len(lines) + 1)
            indent = re.match(r"\s*", lines[min(at, len(lines) - 1)]).group() if at < len(lines) else "    "
            if at < len(lines) and lines[at - 1].rstrip().endswith(("(", ",")):
                continue        # inside a bracket: no comment line there
            lines.insert(at, indent + pick(style, COMMENTS))
        out.append("\n".join(lines))
    text = "\n".join(imports) + "\n\n\n" + "\n\n\n".join(out) + "\n"
    return Template(text).substitute(names)


def notebook_with(stem, code):
    """The released notebook for `stem` with `code` in its solution cells (the first one; the
    others emptied), as a student hands it in."""
    nb = json.loads((STUBS / f"{stem}.ipynb").read_text(encoding="utf-8"))
    first = True
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell["cell_type"] == "code" and meta.get("solution"):
            cell["source"] = code if first else "# see above\n"
            first = False
    return json.dumps(nb, indent=1)


def write_student(folder, kinds, seed, style_seed, notebook=False):
    """Write one student's folder: `kinds` {stem: kind}."""
    folder.mkdir(parents=True, exist_ok=True)
    for stem, kind in kinds.items():
        if kind == "missing":
            continue
        if kind == "stub":
            (folder / f"{stem}.ipynb").write_bytes((STUBS / f"{stem}.ipynb").read_bytes())
            continue
        code = code_for(stem, kind, seed, style_seed)
        if notebook:
            (folder / f"{stem}.ipynb").write_text(notebook_with(stem, code), encoding="utf-8")
        else:
            (folder / f"{stem}.py").write_text(code, encoding="utf-8")


MISTAKES = {   # stem -> mistakes the grader names there (in the kit's catalogue)
    "01_projection": ["projection-swapped"], "02_scores": ["scores-transposed"],
    "03_scaling": ["scale-multiplied", "scale-by-d", "scale-missing"],
    "04_softmax": ["softmax-unstable", "softmax-wrong-axis"],
    "05_weighted_sum": ["weights-transposed", "scale-by-d-model", "broadcast-weighted-sum"],
    "06_multi_head": ["heads-reshape-no-transpose", "missing-output-projection", "scale-by-d-model"],
    "07_full_module": ["missing-output-projection", "heads-merge-no-transpose"],
}


def class_plan(n_correct=14, n_buggy=10, n_slow=4, n_forbidden=2, n_stub=4, copies=2, seed=0):
    """[(name, kinds, seed, style_seed, notebook, copy_of)] for a class of students."""
    rng = random.Random(seed)
    plan = []

    def add(prefix, i, kinds):
        name = f"{prefix}{i:02d}"
        plan.append((name, kinds, f"{name}-{seed}", f"{name}-style-{seed}", len(plan) % 2 == 1, None))

    for i in range(n_correct):
        add("correct", i, dict.fromkeys(STEMS, "correct"))
    for i in range(n_buggy):
        kinds = dict.fromkeys(STEMS, "correct")
        for stem in rng.sample(STEMS, 2):
            kinds[stem] = pick(rng, MISTAKES[stem])
        add("buggy", i, kinds)
    for i in range(n_slow):
        kinds = dict.fromkeys(STEMS, "correct")
        for stem in rng.sample(["01_projection", "02_scores", "04_softmax", "05_weighted_sum", "06_multi_head",
                                "07_full_module"], 2):
            kinds[stem] = "slow"
        add("slow", i, kinds)
    for i in range(n_forbidden):
        kinds = dict.fromkeys(STEMS, "correct")
        kinds[["04_softmax", "06_multi_head"][i % 2]] = "forbidden-api"
        add("shortcut", i, kinds)
    for i in range(n_stub):
        kinds = {stem: ("stub" if k >= 2 + i else "correct") for k, stem in enumerate(STEMS)}
        if i == n_stub - 1:
            kinds = dict.fromkeys(STEMS, "stub")
        add("stub", i, kinds)
    originals = [p for p in plan if p[0].startswith(("correct", "buggy"))]
    for i in range(copies):
        name, kinds, s, _style, notebook, _ = originals[2 * i + 1]
        plan.append((f"copier{i:02d}", kinds, s, f"copier{i}-style", not notebook, name))
    return plan


def write_class(root, plan):
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    for name, kinds, s, style_seed, notebook, _copy in plan:
        write_student(root / name, kinds, s, style_seed, notebook)
    return root


def main(argv):
    """python tests/harness/class_maker.py ROOT N: a class of N students (mostly correct, in many styles)."""
    root, n = Path(argv[0]), int(argv[1])
    scale = max(1, n // 40)
    plan = class_plan(14 * scale, 10 * scale, 4 * scale, 2 * scale, 4 * scale, 2 * scale)
    write_class(root, plan[:n])
    print(f"{min(n, len(plan))} students in {root}")


if __name__ == "__main__":
    main(sys.argv[1:])
