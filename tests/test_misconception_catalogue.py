"""Every catalogued mistake, written into code of a style unlike the reference, is named at its step.

Each step has a correct template written in another idiom than solutions/ (einsum, tensordot,
unflatten/flatten, a shared helper for both modules...). A case fills one or two of its `$slots`
with the mistake. All cases are graded step by step (`grading.grade(folder, steps=[stem])`) in
two subprocesses (numpy steps, torch steps: one per core), and each case must:

- be diagnosed with exactly its own id, and no other id anywhere in the step;
- fail exactly the checks listed (so the step loses exactly those checks' points);
- while the correct template gets full marks and no misconception at all.

`samples/unusual_style` and the source notebooks (other correct styles) are checked for "no
misconception" by tests/test_samples.py.
"""
import json
import subprocess
import sys
from string import Template

import pytest

from autograder import contract, misconceptions
from conftest import ROOT

# ------------------------------------------------------------------ correct templates, one per step
TEMPLATES = {
    "01_projection": dict(code='''
import numpy as np

def project_qkv(X, W_Q, W_K, W_V):
    mats = {"q": W_Q, "k": W_K, "v": W_V}
    return tuple(np.einsum("...i,ij->...j", X, mats[name]) for name in "$order")
''', order="qkv"),
    "02_scores": dict(code='''
import numpy as np

def attention_scores(Q, K):
    return np.einsum("$spec", Q, K)
''', spec="...qd,...kd->...qk"),
    "03_scaling": dict(code='''
import math
import numpy as np

def scale_scores(scores, d_k):
    return np.multiply(scores, $factor)
''', factor="1.0 / math.sqrt(d_k)"),
    "04_softmax": dict(code='''
import numpy as np

def softmax(x, axis=-1):
    ax = $axis
    z = $shifted
    p = np.exp(z)
    return p / p.sum(axis=ax, keepdims=True)
''', axis="axis", shifted="x - np.amax(x, axis=ax, keepdims=True)"),
    "05_weighted_sum": dict(code='''
import numpy as np

def weighted_sum(weights, V):
    return np.einsum("$mix", weights, V)

def self_attention(X, W_Q, W_K, W_V):
    q, k, v = (np.tensordot(X, W, axes=1) for W in ($wq, $wk, $wv))
    s = np.einsum("$scores", q, k) $scale
    s_max = $shift
    e = np.exp(s - s_max)
    w = e / e.sum(axis=$axis, keepdims=True)
    return weighted_sum(w, v), w
''', mix="...qk,...kv->...qv", wq="W_Q", wk="W_K", wv="W_V", scores="...id,...jd->...ij",
        scale="/ np.sqrt(k.shape[-1])", shift="s.max(axis=-1, keepdims=True)", axis="-1"),
    "06_multi_head": dict(code='''
import torch

def split_heads(x, num_heads):
    return $split

def merge_heads(x):
    return $merge

def multi_head_attention(x, W_Q, W_K, W_V, W_O, num_heads):
    q, k, v = (split_heads(torch.einsum("btd,de->bte", x, W), num_heads) for W in ($wq, $wk, $wv))
    s = torch.einsum("$scores", q, k) $scale
    w = $softmax
    merged = merge_heads(torch.einsum("$mix", w, v))
    return $out, w
''', split="x.unflatten(-1, (num_heads, -1)).transpose(1, 2)", merge="x.transpose(1, 2).flatten(2)",
        wq="W_Q", wk="W_K", wv="W_V", scores="bhid,bhjd->bhij", scale="* q.shape[-1] ** -0.5",
        softmax="torch.nn.functional.softmax(s, dim=-1)", mix="bhij,bhjd->bhid", out="merged @ W_O"),
    "07_full_module": dict(code='''
import math
import torch
from torch import nn

def attend(q, k, v, d):
    """Scaled dot-product attention over the last two axes, shared by both modules."""
    s = torch.einsum("$scores", q, k) $scale
    w = $softmax
    return torch.einsum("$mix", w, v), w

class SingleHeadSelfAttention(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.W_q, self.W_k, self.W_v = (nn.Linear(d_model, d_model, bias=False) for _ in range(3))

    def forward(self, x):
        q, k, v = $single_qkv
        return attend(q, k, v, x.shape[-1])

class MultiHeadSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.h = num_heads
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (
            nn.Linear(d_model, d_model, bias=bias) for _ in range(4))

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = ($split for t in $multi_qkv)
        o, w = attend(q, k, v, $head_dim)
        o = $merge
        return $out, w
''', scores="...id,...jd->...ij", scale="/ math.sqrt(d)", softmax="s.softmax(-1)", mix="...ij,...jd->...id",
        single_qkv="self.W_q(x), self.W_k(x), self.W_v(x)",
        multi_qkv="(self.q_proj(x), self.k_proj(x), self.v_proj(x))",
        split="t.view(B, T, self.h, -1).permute(0, 2, 1, 3)", head_dim="D // self.h",
        merge="o.permute(0, 2, 1, 3).reshape(B, T, D)", out="self.out_proj(o)"),
}

# ------------------------------------------------------------------ the mistakes
# (misconception id, step, the slots that differ from the correct template, checks that must fail)
CASES = [
    ("projection-swapped", "01_projection", dict(order="kqv"), "1.2 1.3 1.4 1.5"),
    # d_v != d_k: a swap with V shows in the shapes first, and every check needs the shapes
    ("projection-swapped", "01_projection", dict(order="vkq"), "1.1 1.2 1.3 1.4 1.5 1.6"),

    ("scores-transposed", "02_scores", dict(spec="...qd,...kd->...kq"), "2.1 2.2 2.3 2.4 2.5"),

    ("scale-multiplied", "03_scaling", dict(factor="math.sqrt(d_k)"), "3.2 3.3 3.4 3.6"),
    ("scale-multiplied", "03_scaling", dict(factor="1 / d_k ** -0.5"), "3.2 3.3 3.4 3.6"),   # the lesson's
    ("scale-missing", "03_scaling", dict(factor="1"), "3.2 3.3 3.4 3.6"),
    ("scale-by-d", "03_scaling", dict(factor="1 / d_k"), "3.2 3.3 3.4 3.6"),

    ("softmax-wrong-axis", "04_softmax", dict(axis="0"), "4.2 4.3 4.4 4.5 4.6"),
    ("softmax-unstable", "04_softmax", dict(shifted="x"), "4.7 4.8"),

    ("weights-transposed", "05_weighted_sum", dict(mix="...kq,...kv->...qv"), "5.1 5.2 5.4 5.5"),
    ("scores-transposed", "05_weighted_sum", dict(scores="...jd,...id->...ij"), "5.4 5.5"),
    ("softmax-wrong-axis", "05_weighted_sum", dict(shift="s.max(axis=-2, keepdims=True)", axis="-2"),
     "5.4 5.5 5.6"),
    ("softmax-unstable", "05_weighted_sum", dict(shift="0.0"), "5.7"),
    ("scale-multiplied", "05_weighted_sum", dict(scale="/ k.shape[-1] ** -0.5"), "5.4 5.5"),
    ("scale-missing", "05_weighted_sum", dict(scale=""), "5.4 5.5"),
    ("scale-by-d", "05_weighted_sum", dict(scale="/ k.shape[-1]"), "5.4 5.5"),
    ("scale-by-d-model", "05_weighted_sum", dict(scale="/ np.sqrt(X.shape[-1])"), "5.4 5.5"),

    ("heads-reshape-no-transpose", "06_multi_head",
     dict(split="x.reshape(x.shape[0], num_heads, x.shape[1], -1)"), "6.1 6.4 6.5"),
    ("heads-merge-no-transpose", "06_multi_head", dict(merge="x.reshape(x.shape[0], x.shape[2], -1)"),
     "6.2 6.4 6.5"),
    ("missing-output-projection", "06_multi_head", dict(out="merged"), "6.4 6.5"),
    ("projection-swapped", "06_multi_head", dict(wq="W_V", wv="W_Q"), "6.4 6.5"),
    ("scores-transposed", "06_multi_head", dict(scores="bhjd,bhid->bhij"), "6.4 6.5"),
    ("weights-transposed", "06_multi_head", dict(mix="bhji,bhjd->bhid"), "6.4 6.5"),
    ("softmax-wrong-axis", "06_multi_head", dict(softmax="torch.softmax(s, dim=-2)"), "6.4 6.5 6.6"),
    ("softmax-unstable", "06_multi_head", dict(softmax="s.exp() / s.exp().sum(dim=-1, keepdim=True)"), "6.7"),
    ("scale-multiplied", "06_multi_head", dict(scale="/ q.shape[-1] ** -0.5"), "6.4 6.5"),
    ("scale-missing", "06_multi_head", dict(scale=""), "6.4 6.5"),
    ("scale-by-d", "06_multi_head", dict(scale="/ q.shape[-1]"), "6.4 6.5"),
    ("scale-by-d-model", "06_multi_head", dict(scale="/ x.shape[-1] ** 0.5"), "6.4 6.5"),

    # in `attend`, shared by both modules: both lose their numbers checks
    ("scale-multiplied", "07_full_module", dict(scale="/ d ** -0.5"), "7.2 7.3 7.5 7.6 7.7"),
    ("scale-missing", "07_full_module", dict(scale=""), "7.2 7.3 7.5 7.6 7.7"),
    ("scale-by-d", "07_full_module", dict(scale="/ d"), "7.2 7.3 7.5 7.6 7.7"),
    ("scores-transposed", "07_full_module", dict(scores="...jd,...id->...ij"), "7.2 7.3 7.5 7.6 7.7"),
    ("weights-transposed", "07_full_module", dict(mix="...ji,...jd->...id"), "7.2 7.3 7.5 7.6 7.7"),
    ("softmax-wrong-axis", "07_full_module", dict(softmax="s.softmax(-2)"), "7.2 7.3 7.5 7.6 7.7 7.8"),
    ("projection-swapped", "07_full_module",
     dict(single_qkv="self.W_v(x), self.W_k(x), self.W_q(x)",
          multi_qkv="(self.v_proj(x), self.k_proj(x), self.q_proj(x))"), "7.2 7.3 7.5 7.6 7.7"),
    # in the multi-head module only
    ("scale-by-d-model", "07_full_module", dict(head_dim="D"), "7.5 7.6 7.7"),
    ("heads-reshape-no-transpose", "07_full_module", dict(split="t.view(B, self.h, T, -1)"), "7.5 7.6 7.7"),
    ("heads-merge-no-transpose", "07_full_module", dict(merge="o.reshape(B, T, D)"), "7.5 7.6 7.7"),
    ("missing-output-projection", "07_full_module", dict(out="o"), "7.5 7.6 7.7"),
]


def case_id(case):
    """e.g. "03-scale-multiplied", with a suffix when one step has several cases for an id."""
    same = [c for c in CASES if c[:2] == case[:2]]
    return f"{case[1][:2]}-{case[0]}" + (f"-{same.index(case) + 1}" if len(same) > 1 else "")


def source(stem, slots=None):
    """The step's template with its default slots, then `slots` applied."""
    template = dict(TEMPLATES[stem])
    code = template.pop("code")
    template.update(slots or {})
    return Template(code).substitute(template)


# ------------------------------------------------------------------ grading every case, once
GRADE_MANY = '''
import json, sys
from autograder import grading
out = {}
for folder, stem in json.load(sys.stdin):
    report = grading.grade(folder, steps=[stem])
    out[folder] = [{"number": c.number, "kind": c.kind, "score": c.score, "max_score": c.max_score,
                    "status": c.status, "misconceptions": c.misconceptions, "output": c.output}
                   for s in report.steps for c in s.checks]
json.dump(out, sys.stdout)
'''


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """{(label, stem): [check dicts]} for every case and every step's correct template."""
    root = tmp_path_factory.mktemp("catalogue")
    jobs = {("correct", stem): source(stem) for stem in TEMPLATES}
    jobs.update({(case_id(c), c[1]): source(c[1], c[2]) for c in CASES})
    folders = {}
    for i, ((label, stem), code) in enumerate(jobs.items()):
        folder = root / f"{i:02d}-{label}"
        folder.mkdir()
        (folder / f"{stem}.py").write_text(code)
        folders[label, stem] = str(folder)
    # numpy steps in one process, torch steps in another: the two cores grade side by side
    groups = [[(f, s) for (_, s), f in folders.items() if contract.step_for_stem(s).framework == fw]
              for fw in ("numpy", "torch")]
    procs = [subprocess.Popen([sys.executable, "-c", GRADE_MANY], cwd=ROOT, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in groups]
    results = {}
    for proc, group in zip(procs, groups):
        out, err = proc.communicate(json.dumps(group), timeout=300)
        assert proc.returncode == 0, err
        results.update(json.loads(out))
    return {key: results[folder] for key, folder in folders.items()}


def _summary(checks):
    return "\n".join(f"{c['number']} {c['status']} {c['misconceptions']}: {c['output'][:300]}" for c in checks)


@pytest.mark.parametrize("stem", sorted(TEMPLATES))
def test_correct_template_gets_full_marks_and_no_misconception(graded, stem):
    checks = graded["correct", stem]
    assert checks and all(c["status"] == "passed" for c in checks), _summary(checks)
    assert sum(c["score"] for c in checks) == contract.step_for_stem(stem).points
    assert not any(c["misconceptions"] for c in checks)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_mistake_is_named_at_its_step(graded, case):
    mid, stem, _, must_fail = case
    checks = graded[case_id(case), stem]
    failed = {c["number"] for c in checks if c["status"] != "passed"}
    assert failed == set(must_fail.split()), _summary(checks)
    # exactly this id, never another one, and it is named by at least one numbers/stability check
    named = {m for c in checks for m in c["misconceptions"]}
    assert named == {mid}, _summary(checks)
    assert any(mid in c["misconceptions"] and c["kind"] in ("numbers", "stability", "shape") for c in checks)
    # so the step scores its points less exactly those checks' points
    assert sum(c["score"] for c in checks) == contract.step_for_stem(stem).points - sum(
        c["max_score"] for c in checks if c["number"] in failed)
    # and the student reads the diagnosis
    text = misconceptions.CATALOGUE[mid].diagnosis
    assert any(text in c["output"] for c in checks if mid in c["misconceptions"])


def test_every_catalogued_mistake_has_a_case_at_every_step_it_can_occur():
    wanted = {(mid, f"{step:02d}") for mid, m in misconceptions.CATALOGUE.items() for step in m.steps}
    covered = {(mid, stem[:2]) for mid, stem, _, _ in CASES}
    assert covered == wanted
