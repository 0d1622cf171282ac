"""Stability on large scores (5.7, 6.7, and the CUDA half-precision checks 6.9, 6.10, 7.10, 7.11).

5.7 and 6.7 each cover float64 and float32: code that is stable in one dtype only, or that keeps
the values finite by clamping the scores (wrong values), loses exactly that check's point, and a
softmax that skips the max subtraction in one dtype is named `softmax-unstable`. The half-precision
cases run only on CUDA inside the grader (0 points); here their helpers run on the CPU, in float16
and bfloat16, against correct code and a softmax without the max subtraction.
"""
from string import Template

import pytest

from autograder import contract
from autograder.checks.expect import CheckFailed
from autograder.checks.student import Student
from autograder.sandbox.limits import Limits
from autograder.sandbox.step_child import StepChild
from conftest import ROOMY_SECONDS, ROOT
from harness.grade_many import grade_many, summary as _summary
from harness.suites import load_suite

# ------------------------------------------------------------------ graded: 5.7 and 6.7
STEP5 = Template('''
import math
import numpy as np

def weighted_sum(weights, V):
    return weights @ V

def self_attention(X, W_Q, W_K, W_V):
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    s = Q @ np.swapaxes(K, -1, -2) / math.sqrt(K.shape[-1])
    s = $clamp
    e = np.exp(s - $shift)
    w = e / e.sum(axis=-1, keepdims=True)
    return w @ V, w
''')
STEP6 = Template('''
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
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    w = $softmax
    return merge_heads(w @ v) @ W_O, w
''')
NAIVE6 = "s.exp() / s.exp().sum(-1, keepdim=True)"
# (label, stem, source, the check that fails, the misconception it names or None)
CASES = [
    # stable in float64 only: the float32 half of 5.7 catches it
    ("05-naive-float32", "05_weighted_sum",
     STEP5.substitute(clamp="s", shift="(s.max(axis=-1, keepdims=True) if s.dtype == np.float64 else 0)"),
     "5.7", "softmax-unstable"),
    # finite by clamping the scores: right on ordinary inputs, wrong values on large ones
    ("05-clamped", "05_weighted_sum", STEP5.substitute(clamp="np.clip(s, -80, 80)", shift="0"), "5.7", None),
    # stable in float32 only: the float64 half of 6.7 catches it
    ("06-naive-float64", "06_multi_head",
     STEP6.substitute(softmax=f"torch.softmax(s, dim=-1) if s.dtype == torch.float32 else {NAIVE6}"),
     "6.7", "softmax-unstable"),
    ("06-clamped", "06_multi_head", STEP6.substitute(softmax="torch.softmax(s.clamp(-60, 60), dim=-1)"), "6.7", None),
]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """{label: [check dicts]} for every case, graded in one of the worker's warm grading processes."""
    root = tmp_path_factory.mktemp("stability")
    jobs = []
    for label, stem, code, *_ in CASES:
        (root / label).mkdir()
        (root / label / f"{stem}.py").write_text(code)
        jobs.append((root / label, stem))
    return {label: checks for (label, *_), checks in zip(CASES, grade_many(jobs))}


@pytest.mark.parametrize("label, stem, code, number, mid", CASES, ids=[c[0] for c in CASES])
def test_unstable_code_loses_exactly_the_stability_point(graded, label, stem, code, number, mid):
    checks = graded[label]
    summary = _summary(checks)
    assert [c["number"] for c in checks if c["status"] != "passed"] == [number], summary
    failed = next(c for c in checks if c["number"] == number)
    assert sum(c["score"] for c in checks) == sum(c["max_score"] for c in checks) - failed["max_score"]
    assert failed["misconceptions"] == ([mid] if mid else []), summary
    if mid is None:           # finite but wrong: the message says where
        assert "Worst at index" in failed["output"], failed["output"]


# ------------------------------------------------------------------ the CUDA half-precision cases, on the CPU
def _student(tmp_path, stem, code):
    path = tmp_path / f"{stem}.py"
    path.write_text(code)
    return Student(StepChild(contract.step_for_stem(stem), path, Limits(call_seconds=ROOMY_SECONDS)))


HALF = ("float16", "bfloat16")
CODE6 = {"reference": (ROOT / "solutions" / "step06_multi_head.py").read_text(),
         "unusual-style": (ROOT / "samples" / "unusual_style" / "06_multi_head.py").read_text(),
         "naive": STEP6.substitute(softmax=NAIVE6)}
CODE7 = {"reference": (ROOT / "solutions" / "step07_full_module.py").read_text(),
         "unusual-style": (ROOT / "samples" / "unusual_style" / "07_full_module.py").read_text()}
CODE7["naive"] = CODE7["reference"].replace("torch.softmax(scores, dim=-1)",
                                            "scores.exp() / scores.exp().sum(-1, keepdim=True)")


def _outcome(run):
    """None when the check passes, else (its misconceptions, its message)."""
    try:
        run()
    except CheckFailed as failure:
        return failure.misconceptions, str(failure.message)
    return None


@pytest.mark.parametrize("label", sorted(CODE6))
def test_step6_half_precision_large_scores(tmp_path, label):
    suite = load_suite("06_multi_head")
    student = _student(tmp_path, "06_multi_head", CODE6[label])
    try:
        for dtype, key in zip(HALF, ("6.9 large", "6.10 large")):
            x, Ws = suite._inputs(key, suite.HALF_X_SCALE)
            outcome = _outcome(lambda: suite._expect_stable(student, None, x, Ws, dtype, device="cpu", cast=dtype))
            if label == "naive":
                assert outcome and outcome[0] == ["softmax-unstable"] and f"overflows {dtype}" in outcome[1], outcome
            else:
                assert outcome is None, outcome
    finally:
        student.session.close()


@pytest.mark.parametrize("label", sorted(CODE7))
def test_step7_half_precision_large_scores(tmp_path, label):
    assert CODE7["naive"] != CODE7["reference"]       # the replacement above found its target
    suite = load_suite("07_full_module")
    student = _student(tmp_path, "07_full_module", CODE7[label])
    try:
        for dtype, key in zip(HALF, ("7.10 large", "7.11 large")):
            for cls in (suite.SINGLE, suite.MULTI):
                outcome = _outcome(lambda: suite._expect_stable(student, None, cls, suite._init(cls), key, dtype,
                                                                device="cpu", cast=dtype))
                if label == "naive":
                    # step 7 names no misconception for it (softmax-unstable is a step 4-6 id)
                    assert outcome and outcome[0] == [] and f"overflows {dtype}" in outcome[1], outcome
                else:
                    assert outcome is None, outcome
    finally:
        student.session.close()
