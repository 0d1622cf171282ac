"""The complexity and forbidden-API rules (issue 4), measured by counts, never by the clock.

For each rule, a submission that breaks it loses exactly the points of that rule's check and
nothing else; correct code in several styles loses nothing; a loop over heads is a note in step 6
and costs the check in step 7; and the same submission graded 20 times gives identical results.

Every case is one step file, graded alone by the real grader (tests/harness/grade_many.py); the
numpy cases and the torch cases are graded in two processes at once, once per test session.
"""
import json
import subprocess
import sys
import textwrap

import pytest

from autograder import contract
from autograder.checks import complexity
from conftest import ROOMY_SECONDS, ROOT
from harness.grade_many import grade_many, summary as _summary

# ------------------------------------------------------------------ correct code, in other styles
CORRECT = {
    "01-list-of-products": ("01_projection", """
        import numpy as np

        def project_qkv(X, W_Q, W_K, W_V):
            return tuple([X @ W for W in (W_Q, W_K, W_V)])      # a loop over the 3 matrices, not the tokens
    """),
    "02-matmul-swapaxes": ("02_scores", """
        import numpy as np

        def attention_scores(Q, K):
            return np.matmul(Q, np.swapaxes(K, -2, -1))
    """),
    "03-true-divide": ("03_scaling", """
        import math
        import numpy as np

        def scale_scores(scores, d_k):
            return np.true_divide(scores, math.sqrt(d_k))
    """),
    "04-logsumexp": ("04_softmax", """
        import numpy as np

        def softmax(x, axis=-1):
            m = np.max(x, axis=axis, keepdims=True)
            log_z = m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
            return np.exp(x - log_z)
    """),
    "05-tensordot-einsum": ("05_weighted_sum", """
        import numpy as np

        def weighted_sum(weights, V):
            return np.einsum("...qk,...kv->...qv", weights, V)

        def self_attention(X, W_Q, W_K, W_V):
            Q, K, V = (np.tensordot(X, W, axes=1) for W in (W_Q, W_K, W_V))
            s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1]).astype(X.dtype)
            e = np.exp(s - s.max(axis=-1, keepdims=True))
            w = e / e.sum(axis=-1, keepdims=True)
            return weighted_sum(w, V), w
    """),
    "06-einsum": ("06_multi_head", """
        import torch

        def split_heads(x, num_heads):
            B, T, D = x.shape
            return x.reshape(B, T, num_heads, D // num_heads).transpose(1, 2)

        def merge_heads(x):
            B, h, T, hd = x.shape
            return x.transpose(1, 2).reshape(B, T, h * hd)

        def multi_head_attention(x, W_Q, W_K, W_V, W_O, num_heads):
            q, k, v = (split_heads(torch.einsum("btd,de->bte", x, W), num_heads) for W in (W_Q, W_K, W_V))
            w = torch.softmax(torch.einsum("bhqd,bhkd->bhqk", q, k) / q.shape[-1] ** 0.5, dim=-1)
            return merge_heads(torch.einsum("bhqk,bhkd->bhqd", w, v)) @ W_O, w
    """),
    "07-shared-attend": ("07_full_module", """
        import math
        import torch
        from torch import nn

        def attend(q, k, v):
            w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
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
                B, T, D = x.shape
                q, k, v = (p(x).unflatten(-1, (self.h, -1)).transpose(1, 2)
                           for p in (self.q_proj, self.k_proj, self.v_proj))
                o, w = attend(q, k, v)
                return self.out_proj(o.transpose(1, 2).flatten(2)), w
    """),
}

# the lesson's multi-head demo (a loop over heads), with the output projection it leaves out
HEADS_LOOP_06 = """
    import torch
    import torch.nn.functional as F

    def split_heads(x, num_heads):
        B, T, D = x.shape
        return x.view(B, T, num_heads, D // num_heads).transpose(1, 2)

    def merge_heads(x):
        B, h, T, hd = x.shape
        return x.transpose(1, 2).reshape(B, T, h * hd)

    def multi_head_attention(x, W_Q, W_K, W_V, W_O, num_heads):
        head_dim = x.shape[-1] // num_heads
        outputs, weights = [], []
        for h in range(num_heads):
            cols = slice(h * head_dim, (h + 1) * head_dim)
            q, k, v = $project
            attn = F.softmax(q @ k.transpose(-2, -1) / head_dim ** 0.5, dim=-1)
            outputs.append(attn @ v)
            weights.append(attn)
        return torch.cat(outputs, dim=-1) @ W_O, torch.stack(weights, dim=1)
"""
CORRECT["06-heads-loop"] = ("06_multi_head", HEADS_LOOP_06.replace(
    "$project", "x @ W_Q[:, cols], x @ W_K[:, cols], x @ W_V[:, cols]"))

# ------------------------------------------------------------------ code that breaks one rule
# label -> (stem, code, the check that must fail, the misconception it names or None, a phrase of its message)
BROKEN = {
    "04-row-loop": ("04_softmax", """
        import numpy as np

        def softmax(x, axis=-1):
            x = np.moveaxis(x, axis, -1)
            out = np.empty_like(x)
            for idx in np.ndindex(x.shape[:-1]):      # one pass per row: per token, per batch entry
                row = x[idx]
                e = np.exp(row - row.max())
                out[idx] = e / e.sum()
            return np.moveaxis(out, -1, axis)
    """, "4.9", "not-vectorized", "at sequence lengths 32, 64, 128 your code ran"),
    "04-apply-along-axis": ("04_softmax", """
        import numpy as np

        def _row(r):
            e = np.exp(r - r.max())
            return e / e.sum()

        def softmax(x, axis=-1):
            return np.apply_along_axis(_row, axis, x)
    """, "4.9", "not-vectorized", "at sequence lengths 32, 64, 128 your code ran"),
    "01-batch-loop": ("01_projection", """
        import numpy as np

        def project_qkv(X, W_Q, W_K, W_V):
            if X.ndim == 2:
                return X @ W_Q, X @ W_K, X @ W_V
            flat = X.reshape((-1,) + X.shape[-2:])
            out = []
            for W in (W_Q, W_K, W_V):
                per_entry = [x @ W for x in flat]          # one product per batch entry
                out.append(np.stack(per_entry).reshape(X.shape[:-1] + (W.shape[1],)))
            return tuple(out)
    """, "1.7", "not-vectorized", "at batch sizes 2, 3, 4 your code ran"),
    "02-query-loop": ("02_scores", """
        import numpy as np

        def attention_scores(Q, K):
            rows = [np.einsum("...d,...kd->...k", Q[..., i, :], K) for i in range(Q.shape[-2])]
            return np.stack(rows, axis=-2)
    """, "2.7", "not-vectorized", "at sequence lengths"),
    "05-broadcast-weighted-sum": ("05_weighted_sum", """
        import math
        import numpy as np

        def weighted_sum(weights, V):
            return (weights[..., :, :, None] * V[..., None, :, :]).sum(axis=-2)

        def self_attention(X, W_Q, W_K, W_V):
            Q, K, V = X @ W_Q, X @ W_K, X @ W_V
            s = Q @ np.swapaxes(K, -1, -2) / math.sqrt(K.shape[-1])
            e = np.exp(s - s.max(axis=-1, keepdims=True))
            w = e / e.sum(axis=-1, keepdims=True)
            return weighted_sum(w, V), w
    """, "5.8", "broadcast-weighted-sum", "times the memory its results take"),
    "04-F-softmax": ("04_softmax", """
        import torch
        import torch.nn.functional as F

        def softmax(x, axis=-1):
            return F.softmax(torch.from_numpy(x), dim=axis).numpy()
    """, "4.10", "forbidden-api", "called torch.nn.functional.softmax"),
    "04-torch-softmax": ("04_softmax", """
        import torch as t

        def softmax(x, axis=-1):
            return t.softmax(t.from_numpy(x), axis).numpy()
    """, "4.10", "forbidden-api", "called torch.softmax"),
    "04-scipy-softmax": ("04_softmax", """
        from scipy import special

        def softmax(x, axis=-1):
            return special.softmax(x, axis=axis)
    """, "4.10", "forbidden-api", "called scipy.special.softmax"),
    "04-tampered": ("04_softmax", """
        import sys
        import numpy as np

        def softmax(x, axis=-1):
            sys.settrace(None)                 # switches the grader's line counter off
            e = np.exp(x - x.max(axis=axis, keepdims=True))
            return e / e.sum(axis=axis, keepdims=True)
    """, "4.9", None, "counters were switched off while your code ran (sys.settrace)"),
    "06-batch-loop": ("06_multi_head", """
        import math
        import torch

        def split_heads(x, num_heads):
            B, T, D = x.shape
            return x.view(B, T, num_heads, D // num_heads).transpose(1, 2)

        def merge_heads(x):
            B, h, T, hd = x.shape
            return x.transpose(1, 2).reshape(B, T, h * hd)

        def _one(x, W_Q, W_K, W_V, W_O, h):
            q, k, v = (split_heads((x @ W)[None], h)[0] for W in (W_Q, W_K, W_V))
            w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
            return merge_heads((w @ v)[None])[0] @ W_O, w

        def multi_head_attention(x, W_Q, W_K, W_V, W_O, num_heads):
            pairs = [_one(xb, W_Q, W_K, W_V, W_O, num_heads) for xb in x]     # one pass per batch entry
            return torch.stack([o for o, _ in pairs]), torch.stack([w for _, w in pairs])
    """, "6.11", "not-vectorized", "at batch sizes 2, 3, 4 your code"),
    "06-sdpa": ("06_multi_head", """
        import math
        import torch
        import torch.nn.functional as F

        def split_heads(x, num_heads):
            B, T, D = x.shape
            return x.view(B, T, num_heads, D // num_heads).transpose(1, 2)

        def merge_heads(x):
            B, h, T, hd = x.shape
            return x.transpose(1, 2).reshape(B, T, h * hd)

        def multi_head_attention(x, W_Q, W_K, W_V, W_O, num_heads):
            q, k, v = (split_heads(x @ W, num_heads) for W in (W_Q, W_K, W_V))
            w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
            return merge_heads(F.scaled_dot_product_attention(q, k, v)) @ W_O, w
    """, "6.12", "forbidden-api", "called torch.nn.functional.scaled_dot_product_attention"),
    # a loop over heads is free in step 6, but computing every head's projection in full is not
    "06-heads-recompute": ("06_multi_head", HEADS_LOOP_06.replace(
        "$project", "(x @ W_Q)[..., cols], (x @ W_K)[..., cols], (x @ W_V)[..., cols]"),
        "6.11", None, "times the multiply-adds of the reference"),
    "07-heads-loop": ("07_full_module", CORRECT["07-shared-attend"][1].replace(
        "                o, w = attend(q, k, v)\n",
        "                pairs = [attend(q[:, i], k[:, i], v[:, i]) for i in range(self.h)]   # one head at a time\n"
        "                o, w = torch.stack([p[0] for p in pairs], 1), torch.stack([p[1] for p in pairs], 1)\n"),
        "7.12", "not-vectorized", "heads your code"),
    "07-nn-multihead": ("07_full_module", CORRECT["07-shared-attend"][1].split("class MultiHeadSelfAttention")[0] + """
        class MultiHeadSelfAttention(nn.Module):
            def __init__(self, d_model, num_heads, bias=True):
                super().__init__()
                self.q_proj, self.k_proj, self.v_proj, self.out_proj = (
                    nn.Linear(d_model, d_model, bias=bias) for _ in range(4))
                # torch's own module, kept out of the parameters: it runs with ours (functional_call)
                self.library = [nn.MultiheadAttention(d_model, num_heads, bias=bias, batch_first=True)]

            def forward(self, x):
                mha = self.library[0].to(dtype=x.dtype, device=x.device)
                params = {"in_proj_weight": torch.cat([self.q_proj.weight, self.k_proj.weight, self.v_proj.weight]),
                          "out_proj.weight": self.out_proj.weight}
                if self.q_proj.bias is not None:
                    params["in_proj_bias"] = torch.cat([self.q_proj.bias, self.k_proj.bias, self.v_proj.bias])
                    params["out_proj.bias"] = self.out_proj.bias
                return torch.func.functional_call(mha, params, (x, x, x),
                                                  {"need_weights": True, "average_attn_weights": False})
    """, "7.13", "forbidden-api", "called torch.nn.MultiheadAttention"),
}

# ------------------------------------------------------------------ grading every case, once
@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """{label: [check dicts]} for every case above."""
    root = tmp_path_factory.mktemp("rules")
    cases = {label: (stem, code) for label, (stem, code) in CORRECT.items()}
    cases.update({label: (stem, code) for label, (stem, code, *_rest) in BROKEN.items()})
    jobs = []
    for label, (stem, code) in cases.items():
        (root / label).mkdir()
        (root / label / f"{stem}.py").write_text(textwrap.dedent(code).lstrip())
        jobs.append((root / label, stem))
    # numpy steps in one process, torch steps in another: the two cores grade side by side
    return dict(zip(cases, grade_many(jobs, processes=2)))


@pytest.mark.parametrize("label", sorted(CORRECT))
def test_correct_code_in_other_styles_loses_nothing(graded, label):
    checks = graded[label]
    stem = CORRECT[label][0]
    assert {c["kind"] for c in checks} >= {"complexity"}, "the complexity check ran"
    assert all(c["status"] == "passed" for c in checks), _summary(checks)
    assert sum(c["score"] for c in checks) == contract.step_for_stem(stem).points
    assert not any(c["misconceptions"] for c in checks)


@pytest.mark.parametrize("label", sorted(BROKEN))
def test_breaking_a_rule_costs_exactly_that_rule(graded, label):
    stem, _code, number, mid, phrase = BROKEN[label]
    checks = graded[label]
    failed = [c for c in checks if c["status"] != "passed"]
    assert [c["number"] for c in failed] == [number], _summary(checks)
    (bad,) = failed
    assert bad["kind"] in ("complexity", "api")
    assert phrase in bad["output"], bad["output"]
    assert bad["misconceptions"] == ([mid] if mid else [])
    # named there and nowhere else
    assert not any(c["misconceptions"] for c in checks if c is not bad)
    assert sum(c["score"] for c in checks) == contract.step_for_stem(stem).points - bad["max_score"]
    assert bad["max_score"] == 1


def test_a_loop_over_heads_is_a_note_in_step_6_and_costs_in_step_7(graded):
    step6 = {c["number"]: c for c in graded["06-heads-loop"]}
    assert step6["6.11"]["status"] == "passed"
    assert "it loops over the heads, as the lesson's demo does" in step6["6.11"]["output"]
    assert "with 2, 4, 8 heads your code" in step6["6.11"]["output"]
    step7 = {c["number"]: c for c in graded["07-heads-loop"]}
    assert step7["7.12"]["status"] == "failed" and "loops over them" in step7["7.12"]["output"]
    # a vectorised module gets no such note
    assert {c["number"]: c["output"] for c in graded["07-shared-attend"]}["7.12"] == "Passed."


def test_correct_but_slow_code_keeps_every_numbers_point(graded):
    for label in ("04-row-loop", "04-apply-along-axis", "01-batch-loop", "02-query-loop", "05-broadcast-weighted-sum",
                  "06-batch-loop", "07-heads-loop"):
        numbers = [c for c in graded[label] if c["kind"] == "numbers"]
        assert numbers and all(c["status"] == "passed" for c in numbers), (label, _summary(graded[label]))


def test_the_forbidden_call_is_named_and_the_list_shown(graded):
    out = next(c["output"] for c in graded["04-F-softmax"] if c["number"] == "4.10")
    # named once, by the API the code called (not again by the tensor op it ran on)
    assert "called torch.nn.functional.softmax, which" in out and "torch.ops.aten._softmax" in out.split("off-limits")[1]


# ------------------------------------------------------------------ the instructor's list
def test_the_shipped_list_names_the_issue_apis():
    assert {"torch.softmax", "torch.nn.functional.softmax", "scipy.special.softmax"} <= set(
        complexity.forbidden_apis("04_softmax"))
    for stem in ("06_multi_head", "07_full_module"):
        assert {"torch.nn.functional.scaled_dot_product_attention", "torch.nn.MultiheadAttention",
                "torch.nn.functional.multi_head_attention_forward"} <= set(complexity.forbidden_apis(stem))


def test_a_step_without_an_api_check_cannot_be_listed(tmp_path):
    bad = tmp_path / "forbidden.toml"
    bad.write_text('[03_scaling]\nforbidden = ["numpy.sqrt"]\n')
    with pytest.raises(ValueError, match=r"\[03_scaling\] is not a step with an api check; only 04_softmax"):
        complexity.forbidden_apis("04_softmax", bad)
    bad.write_text('[04_softmax]\nforbidden = ["softmax"]\n')
    with pytest.raises(ValueError, match="is not a dotted name"):
        complexity.forbidden_apis("04_softmax", bad)
    with pytest.raises(ValueError, match="has no api check"):
        complexity.forbidden_apis("05_weighted_sum")


# ------------------------------------------------------------------ deterministic
REPEAT = '''
import json, sys
from autograder.grading import run as grading; from autograder.sandbox import zygote
from autograder.reports.text import check_text      # the message, then its diagnosis (as reports write it)
from autograder.sandbox.limits import Limits
zygote.start()
grader = grading.Grader()
runs = []
for _ in range(20):
    report = grader.grade(sys.argv[1], Limits(call_seconds=float(sys.argv[3])), sys.argv[2].split(","))
    runs.append([(c.number, c.status, c.score, check_text(c, s.step.framework), c.misconceptions)
                 for s in report.steps for c in s.checks])
grader.close()
zygote.stop()
json.dump(runs, sys.stdout)
'''


def test_the_same_submission_graded_20_times_gets_identical_results(tmp_path):
    """Steps whose counters fire (a loop, a broadcast, a loop over heads told in a note), graded 20
    times by one warm grader: every check's outcome and message identical. (Step 7 runs the same
    meters as step 6; it is left out to keep this test short.)"""
    for label in ("04-row-loop", "05-broadcast-weighted-sum", "06-heads-loop"):
        cases = dict(CORRECT, **{k: v[:2] for k, v in BROKEN.items()})
        stem, code = cases[label]
        (tmp_path / f"{stem}.py").write_text(textwrap.dedent(code).lstrip())
    steps = "04_softmax,05_weighted_sum,06_multi_head"
    proc = subprocess.run([sys.executable, "-c", REPEAT, str(tmp_path), steps, str(ROOMY_SECONDS)], cwd=ROOT,
                          capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    runs = json.loads(proc.stdout)
    assert len(runs) == 20 and all(run == runs[0] for run in runs[1:])
    failed = {number for number, status, *_ in runs[0] if status != "passed"}
    assert failed == {"4.9", "5.8"}
    assert "it loops over the heads" in dict((n, out) for n, _, _, out, _ in runs[0])["6.11"]


# ------------------------------------------------------------------ half points, end to end
HALF_POINT_06 = """
    import math
    import torch

    def split_heads(x, num_heads):                     # no transpose: check 6.1 (half a point) fails
        B, T, D = x.shape
        return x.reshape(B, num_heads, T, D // num_heads)

    def merge_heads(x):
        B, h, T, hd = x.shape
        return x.transpose(1, 2).reshape(B, T, h * hd)

    def multi_head_attention(x, W_Q, W_K, W_V, W_O, num_heads):   # right, without split_heads
        B, T, D = x.shape
        q, k, v = ((x @ W).view(B, T, num_heads, -1).transpose(1, 2) for W in (W_Q, W_K, W_V))
        w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
        return merge_heads(w @ v) @ W_O, w
"""

HOOK = '''
import sys
from autograder.commands.notebook_hook import grade_step
points = grade_step("06_multi_head", sys.argv[1])
print("POINTS", repr(points))
'''


def test_half_points_reach_every_format(tmp_path, warm_cli):
    """Check 6.1 is worth half a point: failing it alone gives 9.5 in results.json, the table, JUnit,
    the CSV gradebook and the points nbgrader's hidden cell returns."""
    from autograder.commands import batch
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "06_multi_head.py").write_text(textwrap.dedent(HALF_POINT_06).lstrip())
    code, output = warm_cli.run(["grade", sub, "--results", tmp_path / "r.json", "--format", "junit", "--out",
                                 tmp_path / "j.xml"])
    assert code == 0, output
    results = json.loads((tmp_path / "r.json").read_text())
    step = results["extra_data"]["steps"]["06_multi_head"]
    assert step["score"] == 9.5 and step["max_score"] == 10
    assert [t["number"] for t in results["tests"] if t["status"] == "failed" and "step:06_multi_head" in t["tags"]] \
        == ["6.1"]
    assert "9.5/10" in output
    junit = (tmp_path / "j.xml").read_text()
    assert '<property name="score" value="9.5"' in junit and '<property name="points" value="0.5"' in junit
    batch.write_csv(tmp_path / "grades.csv", {"alice": results})
    row = (tmp_path / "grades.csv").read_text().splitlines()[1].split(",")
    assert row[1 + [s.stem for s in contract.STEPS].index("06_multi_head")] == "9.5"
    hook = subprocess.run([sys.executable, "-c", HOOK, str(sub)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert hook.returncode == 0, hook.stderr
    assert "POINTS 9.5" in hook.stdout and "Step 6: 9.5/10" in hook.stdout
