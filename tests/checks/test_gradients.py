"""Gradients (6.13, 7.14): a cut graph, an input changed in place or a wrong backward costs exactly
the gradient check's point, and nothing else; correct code in several styles loses nothing.

Every broken submission here is right in its forward values (the other checks pass), so the
gradient check is the only one that can tell; one more has a wrong forward, to show what the
gradient check says then. Each is a .py step file graded alone by the real grader, in
two of the test worker's warm grading processes at once (tests/harness/grade_many.py: pytest inside
pytest is avoided).
"""
import shutil
from string import Template

import pytest

from autograder.reference import misconceptions
from conftest import ROOT
from harness.grade_many import grade_many, summary as _summary

GRADIENT_CHECK = {"06_multi_head": "6.13", "07_full_module": "7.14"}    # the one check each case may fail

# ------------------------------------------------------------------ step 6: a plain template with slots
STEP6 = Template('''
import math
import numpy as np
import torch


class GoodSoftmax(torch.autograd.Function):
    """softmax over the last axis with its own (right) backward."""
    @staticmethod
    def forward(ctx, s):
        p = torch.softmax(s, dim=-1)
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx, g):
        p, = ctx.saved_tensors
        return p * (g - (g * p).sum(dim=-1, keepdim=True))


class BadSoftmax(GoodSoftmax):
    """The same forward; the backward forgets the - p * sum(g * p) term."""
    @staticmethod
    def backward(ctx, g):
        p, = ctx.saved_tensors
        return g * p


def split_heads(x, num_heads):
    B, T, D = x.shape
    return x.view(B, T, num_heads, D // num_heads).transpose(1, 2)


def merge_heads(x):
    B, h, T, hd = x.shape
    return x.transpose(1, 2).reshape(B, T, h * hd)


def multi_head_attention(x, W_Q, W_K, W_V, W_O, num_heads):
    q, k, v = (split_heads(x @ W, num_heads) for W in (W_Q, W_K, W_V))
    scores = q @ k.transpose(-2, -1)
    scores = $scale
    weights = $softmax
    out = merge_heads(weights @ v) @ W_O
    $after
    return out, weights
''')
DEFAULT6 = dict(scale="scores / math.sqrt(q.shape[-1])", softmax="torch.softmax(scores, dim=-1)", after="pass")

# (label, slots, misconception named or None, words the message must hold)
BROKEN6 = [
    ("detach", dict(scale="scores.detach() / math.sqrt(q.shape[-1])"), "detached-graph", "does not require grad"),
    ("data", dict(scale="scores.data / math.sqrt(q.shape[-1])"), "detached-graph", "no gradient flows back to W_Q"),
    # .item() of every score at once: a loop of .item() would also cost 6.11 (a Python loop per element)
    ("item-scaling", dict(scale="scores.new_tensor(scores.tolist()) / math.sqrt(q.shape[-1])"),
     "detached-graph", "no gradient flows back to W_Q"),
    ("numpy-weights", dict(softmax="torch.from_numpy(torch.softmax(scores, dim=-1).detach().numpy())"),
     "detached-graph", "numpy round trip"),
    # without .detach(): torch refuses .numpy() once the input requires grad, so only the gradient check sees it
    ("numpy-softmax", dict(softmax="torch.from_numpy((lambda e: e / e.sum(-1, keepdims=True))"
                                   "(np.exp(scores.numpy() - scores.numpy().max(-1, keepdims=True))))"),
     "detached-graph", "into a numpy array"),
    ("input-in-place", dict(after="x.mul_(0.5)"), None, "changed x in place"),
    ("wrong-backward", dict(softmax="BadSoftmax.apply(scores)"), None, "gradcheck"),
]
# a wrong forward (no output projection), for the message that says so
WRONG_FORWARD6 = ("no-output-projection", dict(after="out = merge_heads(weights @ v)"))
CORRECT6 = [
    ("template", {}),
    # the max is a constant to softmax's gradient: detaching it changes nothing
    ("detached-max", dict(softmax="(lambda e: e / e.sum(-1, keepdim=True))"
                                  "(torch.exp(scores - scores.amax(-1, keepdim=True).detach()))")),
    # in place on its own intermediate, which nothing saved for backward
    ("own-in-place", dict(scale="scores.div_(math.sqrt(q.shape[-1]))")),
    ("right-backward", dict(softmax="GoodSoftmax.apply(scores)")),
    # .item() of a constant cuts nothing
    ("item-constant", dict(scale="scores / torch.tensor(float(q.shape[-1])).sqrt().item()")),
]

# ------------------------------------------------------------------ step 7: both modules, one slot each
STEP7 = Template('''
import math
import torch
from torch import nn


class SingleHeadSelfAttention(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, d_model, bias=False)
        self.W_v = nn.Linear(d_model, d_model, bias=False)
        $single_init

    def forward(self, x):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(x.shape[-1]), dim=-1)
        return w @ v, w


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
        q, k, v = (p(x).view(B, T, self.h, -1).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        scores = $scores
        w = torch.softmax(scores, dim=-1)
        return self.out_proj((w @ v).transpose(1, 2).reshape(B, T, D)), w
''')
DEFAULT7 = dict(single_init="pass", scores="q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])")
BROKEN7 = [
    # in the multi-head module only: the single-head one is right, and the check still fails
    ("multi-detach", dict(scores="(q @ k.transpose(-2, -1)).detach() / math.sqrt(q.shape[-1])"),
     "detached-graph", "MultiHeadSelfAttention"),
    ("frozen-parameter", dict(single_init="self.W_q.weight.requires_grad_(False)"), None,
     "W_q.weight has requires_grad=False"),
]

# ------------------------------------------------------------------ grading them all, once
def _jobs():
    """{(label, stem): source}: every case above, the references and the unusual-style samples."""
    jobs = {}
    for label, slots, *_ in BROKEN6 + CORRECT6 + [WRONG_FORWARD6]:
        jobs[label, "06_multi_head"] = STEP6.substitute({**DEFAULT6, **slots})
    for label, slots, *_ in BROKEN7:
        jobs[label, "07_full_module"] = STEP7.substitute({**DEFAULT7, **slots})
    jobs["template", "07_full_module"] = STEP7.substitute(DEFAULT7)
    for stem, ref in (("06_multi_head", "step06_multi_head.py"), ("07_full_module", "step07_full_module.py")):
        jobs["reference", stem] = (ROOT / "solutions" / ref).read_text()
        jobs["unusual-style", stem] = (ROOT / "samples" / "unusual_style" / f"{stem}.py").read_text()
    return jobs


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """{(label, stem): [check dicts]}; the first broken case is graded twice, as ("again", stem)."""
    root = tmp_path_factory.mktemp("gradients")
    folders = {}
    for i, ((label, stem), code) in enumerate(_jobs().items()):
        folder = root / f"{i:02d}-{label}"
        folder.mkdir()
        (folder / f"{stem}.py").write_text(code)
        folders[label, stem] = str(folder)
    again = root / "again"
    shutil.copytree(folders[BROKEN6[0][0], "06_multi_head"], again)
    folders["again", "06_multi_head"] = str(again)
    # two processes, half the submissions each: the two cores grade side by side
    return dict(zip(folders, grade_many([(f, s) for (_, s), f in folders.items()], processes=2)))


def _expect_only_the_gradient_check_fails(checks, stem, mid, words):
    number = GRADIENT_CHECK[stem]
    failed = [c for c in checks if c["status"] != "passed"]
    assert [c["number"] for c in failed] == [number], _summary(checks)
    gradient = failed[0]
    assert gradient["kind"] == "gradients" and gradient["max_score"] == 1
    # the step scores all its points but that one
    assert sum(c["score"] for c in checks) == sum(c["max_score"] for c in checks) - 1
    assert gradient["misconceptions"] == ([mid] if mid else []), _summary(checks)
    assert words in gradient["output"], gradient["output"]
    if mid:
        assert misconceptions.CATALOGUE[mid].diagnosis in gradient["output"]


@pytest.mark.parametrize("label, slots, mid, words", BROKEN6, ids=[c[0] for c in BROKEN6])
def test_step6_broken_backward_loses_only_the_gradient_point(graded, label, slots, mid, words):
    _expect_only_the_gradient_check_fails(graded[label, "06_multi_head"], "06_multi_head", mid, words)


@pytest.mark.parametrize("label, slots, mid, words", BROKEN7, ids=[c[0] for c in BROKEN7])
def test_step7_broken_backward_loses_only_the_gradient_point(graded, label, slots, mid, words):
    _expect_only_the_gradient_check_fails(graded[label, "07_full_module"], "07_full_module", mid, words)


CORRECT = ([(label, "06_multi_head") for label, _ in CORRECT6]
           + [(label, stem) for label in ("reference", "unusual-style") for stem in GRADIENT_CHECK]
           + [("template", "07_full_module")])


@pytest.mark.parametrize("label, stem", CORRECT, ids=[f"{s[:2]}-{label}" for label, s in CORRECT])
def test_correct_code_passes_the_gradient_check(graded, label, stem):
    checks = graded[label, stem]
    gradient = [c for c in checks if c["number"] == GRADIENT_CHECK[stem]]
    assert gradient and gradient[0]["status"] == "passed", _summary(checks)
    assert all(c["status"] == "passed" and not c["misconceptions"] for c in checks), _summary(checks)


def test_a_wrong_forward_is_told_first_and_not_called_a_cut_graph(graded):
    """No output projection: the numbers checks charge for it, the gradient check fails too (the
    gradients differ from the reference's), says the forward comes first, and names no cut graph:
    W_O gets no gradient because it is not used, and gradcheck finds the backward consistent."""
    checks = graded[WRONG_FORWARD6[0], "06_multi_head"]
    failed = {c["number"] for c in checks if c["status"] != "passed"}
    assert failed == {"6.4", "6.5", "6.13"}, _summary(checks)
    gradient = next(c for c in checks if c["number"] == "6.13")
    assert gradient["misconceptions"] == []
    for words in ("forward values already differ", "no gradient flows back to W_O", "does your forward use",
                  "consistent with your own forward"):
        assert words in gradient["output"], gradient["output"]


def test_grading_twice_gives_identical_results(graded):
    assert graded["again", "06_multi_head"] == graded[BROKEN6[0][0], "06_multi_head"]
