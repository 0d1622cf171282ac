"""The notebooks' visible test cells run against submissions (tests/suites/test_visible_agree.py), in English and in Chinese (tests/commands/test_notebook_translation.py)."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from autograder import contract
from conftest import ROOT
from harness import catalogue, leniency
from harness.grade_many import grade_many

FIRST = {s.stem for s in contract.STEPS}            # the first assignment's steps


def master_path(stem):
    return ROOT / "source" / contract.ASSIGNMENT_OF[stem] / f"{stem}.ipynb"


# ------------------------------------------------------------------ the notebook's cells
def notebook_cells(stem, path=None):
    """(imports code, [(grade_id, code)] of the locked test and demo cells, in notebook order,
    the solution cells' code) of a master notebook (of either assignment)."""
    nb = json.loads(Path(path or master_path(stem)).read_text())
    imports, locked, solutions = [], [], []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        meta = cell.get("metadata", {}).get("nbgrader", {})
        code, grade_id = "".join(cell["source"]), meta.get("grade_id", "")
        if meta.get("solution"):
            solutions.append(code)
        elif grade_id.endswith("_imports"):
            imports.append(code)
        elif meta.get("locked") and not meta.get("grade") and grade_id.endswith(("_tests", "_demo")):
            locked.append((grade_id, code))
    return "\n".join(imports), locked, "\n\n".join(solutions)


# ------------------------------------------------------------------ running them
RUN_VISIBLE = r'''
import io, json, os, sys
import numpy as np
if FRAMEWORK == "torch":
    import torch
    torch.set_num_threads(1)

def run(job):
    """Execute imports, candidate, then the locked cells; the first failing test cell and the demos' output."""
    ns = {"__name__": "__main__"}
    result = {"failed": None, "demo_output": {}, "demo_error": None}
    out = io.StringIO()
    sys.stdout = out
    os.chdir(job["cwd"])               # the notebook's folder, as a kernel opened there has it (data/corpus.txt)
    exec(compile(job["imports"], "<imports>", "exec"), ns)
    try:
        # like an error in a notebook cell of the student's: what was defined stays, the tests still run
        exec(compile(job["code"], "<candidate>", "exec"), ns)
    except BaseException as exc:
        result["candidate_error"] = [type(exc).__name__, str(exc)[:2000]]
    for grade_id, code in job["cells"]:
        demo = grade_id.endswith("_demo")
        if demo and not job["demos"]:
            continue
        out.seek(0); out.truncate()
        try:
            exec(compile(code, grade_id, "exec"), ns)
        except BaseException as exc:
            if demo and result["demo_error"] is None:      # the first: later demos may need what it defined
                result["demo_error"] = [grade_id, type(exc).__name__, str(exc)[:2000]]
            elif result["failed"] is None:
                result["failed"] = [grade_id, type(exc).__name__, str(exc)[:2000]]
                if not job["demos"]:
                    return result
        if demo:
            result["demo_output"][grade_id] = out.getvalue()
    return result

payload = json.load(sys.stdin)
# each step's master runs once here first, its output dropped: torch's one-off work (first calls of its
# operations, function modes) is done before the fork, not again in every child (a second or more each)
seeds = np.random.get_state(), (torch.get_rng_state() if FRAMEWORK == "torch" else None)
for job in payload["warm"]:
    run(job)
np.random.set_state(seeds[0])                  # the children start from the random state they had without it
if FRAMEWORK == "torch":
    torch.set_rng_state(seeds[1])
results = {}
for key, job in payload["jobs"].items():
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:                       # the candidate runs in a child: nothing it does reaches the next one
        os.close(read)
        try:
            text = json.dumps(run(job))
        except BaseException as exc:
            text = json.dumps({"failed": ["<runner>", type(exc).__name__, str(exc)[:2000]]})
        with os.fdopen(write, "w") as f:
            f.write(text)
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        text = f.read()
    os.waitpid(pid, 0)
    results[key] = json.loads(text) if text else {"failed": ["<runner>", "crash", "no result"]}
sys.stdout = sys.__stdout__
json.dump(results, sys.stdout)
'''


def run_visible(jobs, cells=None):
    """{key: (stem, code, demos)} -> {key: {"failed": None or [cell, error type, message], ...}}.

    cells: {stem: (imports, locked cells)} to run instead of the masters' (to test a broken cell)."""
    cells = cells or {}
    out = {}
    for framework in ("numpy", "torch"):
        payload = {}
        for key, (stem, code, demos) in jobs.items():
            if contract.step_for_stem(stem).framework != framework:
                continue
            imports, locked = cells.get(stem) or notebook_cells(stem)[:2]
            payload[key] = {"imports": imports, "code": code, "cells": locked, "demos": demos,
                            "cwd": str(master_path(stem).parent)}
        if not payload:
            continue
        warm = []                                                  # the warm-up: each step's master, as it is
        for stem in sorted({jobs[key][0] for key in payload}):
            imports, locked, solutions = notebook_cells(stem)
            warm.append({"imports": imports, "code": imports + "\n\n" + solutions, "cells": locked, "demos": True,
                         "cwd": str(master_path(stem).parent)})
        proc = subprocess.run([sys.executable, "-c", f"FRAMEWORK = {framework!r}\n" + RUN_VISIBLE],
                              input=json.dumps({"warm": warm, "jobs": payload}), capture_output=True, text=True,
                              timeout=600, cwd=ROOT,
                              env=dict(os.environ, OMP_NUM_THREADS="1"))
        assert proc.returncode == 0, proc.stderr
        out.update(json.loads(proc.stdout))
    return out


def grade_hidden(programs, root):
    """{key: (stem, code)} -> {key: (full marks?, the checks that lost points)}, graded by the real
    grader. Full marks by the points: a device check (no points) that fails on a GPU machine is no
    verdict on the step."""
    jobs = []
    for i, (stem, code) in enumerate(programs.values()):
        folder = Path(root) / f"{i:03d}"
        folder.mkdir()
        (folder / f"{stem}.py").write_text(code)
        jobs.append((folder, stem))
    out = {}
    # numpy steps in one process, torch steps in another: the two cores grade side by side
    for key, checks in zip(programs, grade_many(jobs, processes=2)):
        lost = [f"{c['number']}: {c['output'][:300]}" for c in checks if c["score"] < c["max_score"]]
        out[key] = (not lost, lost)
    return out


# ------------------------------------------------------------------ the candidates
def dedent(code):
    return textwrap.dedent(code).lstrip()


MHA_PARTS = """
import math
import torch

def split_heads(x, num_heads):
    B, T, D = x.shape
    return x.view(B, T, num_heads, D // num_heads).transpose(1, 2)

def merge_heads(x):
    B, h, T, hd = x.shape
    return x.transpose(1, 2).reshape(B, T, h * hd)
"""

MODULES = """
import math
import torch
from torch import nn

class SingleHeadSelfAttention(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.W_q, self.W_k, self.W_v = (nn.Linear(d_model, d_model, bias=False) for _ in range(3))

    def forward(self, x):
        q, k, v = $single_qkv
        w = torch.softmax($single_scores / math.sqrt(x.shape[-1]), dim=-1)
        return $single_out

class MultiHeadSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.h = num_heads$extra
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (
            nn.Linear(d_model, d_model, bias=bias) for _ in range(4))

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = (t.view(B, T, self.h, -1).transpose(1, 2) for t in $multi_qkv)
        w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(D // self.h), dim=-1)
        return self.out_proj((w @ v).transpose(1, 2).reshape(B, T, D)), w
"""
MODULE_SLOTS = dict(single_qkv="self.W_q(x), self.W_k(x), self.W_v(x)", single_scores="q @ k.transpose(-2, -1)",
                    single_out="w @ v, w", extra="", multi_qkv="(self.q_proj(x), self.k_proj(x), self.v_proj(x))")


def modules(**slots):
    from string import Template
    return Template(MODULES).substitute(dict(MODULE_SLOTS, **slots))


# label: (step, code). Their hidden verdict is graded; the visible one must be the same.
PROGRAMS = {
    # ---- step 1
    "01-list-instead-of-tuple": ("01_projection", """
        def project_qkv(X, W_Q, W_K, W_V):
            return [X @ W_Q, X @ W_K, X @ W_V]
    """),
    "01-returns-K-Q-V": ("01_projection", """
        def project_qkv(X, W_Q, W_K, W_V):
            return X @ W_K, X @ W_Q, X @ W_V
    """),
    "01-K-made-with-W_Q": ("01_projection", """
        def project_qkv(X, W_Q, W_K, W_V):
            return X @ W_Q, X @ W_Q, X @ W_V
    """),
    "01-transposed-weights": ("01_projection", """
        def project_qkv(X, W_Q, W_K, W_V):
            return X @ W_Q.T, X @ W_K.T, X @ W_V.T
    """),
    "01-np-dot": ("01_projection", """
        import numpy as np

        def project_qkv(X, W_Q, W_K, W_V):
            return np.dot(X, W_Q), np.dot(X, W_K), np.dot(X, W_V)
    """),
    "01-broadcast-memory": ("01_projection", """
        def project_qkv(X, W_Q, W_K, W_V):
            return tuple((X[..., :, :, None] * W).sum(axis=-2) for W in (W_Q, W_K, W_V))
    """),
    # ---- step 2
    "02-np-dot-batched": ("02_scores", """
        import numpy as np

        def attention_scores(Q, K):
            return np.dot(Q, np.swapaxes(K, -1, -2))
    """),
    "02-scaled-already": ("02_scores", """
        import math
        import numpy as np

        def attention_scores(Q, K):
            return Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    """),
    "02-K.T": ("02_scores", """
        def attention_scores(Q, K):
            return Q @ K.T
    """),
    "02-K-Q^T": ("02_scores", """
        import numpy as np

        def attention_scores(Q, K):
            return K @ np.swapaxes(Q, -1, -2)
    """),
    "02-widened-to-float64": ("02_scores", """
        import numpy as np

        def attention_scores(Q, K):
            return (Q @ np.swapaxes(K, -1, -2)).astype(np.float64)
    """),
    "02-broadcast-memory": ("02_scores", """
        def attention_scores(Q, K):
            return (Q[..., :, None, :] * K[..., None, :, :]).sum(axis=-1)
    """),
    # ---- step 3
    "03-in-place": ("03_scaling", """
        import math

        def scale_scores(scores, d_k):
            scores /= math.sqrt(d_k)
            return scores
    """),
    "03-d_k-from-the-shape": ("03_scaling", """
        import math

        def scale_scores(scores, d_k):
            return scores / math.sqrt(scores.shape[-1])
    """),
    "03-float32-constant": ("03_scaling", """
        import math
        import numpy as np

        def scale_scores(scores, d_k):
            return scores / np.float32(math.sqrt(d_k))
    """),
    "03-float64-before-dividing": ("03_scaling", """
        import math
        import numpy as np

        def scale_scores(scores, d_k):
            return scores.astype(np.float64) / math.sqrt(d_k)
    """),
    "03-widened-after-dividing": ("03_scaling", """
        import math
        import numpy as np

        def scale_scores(scores, d_k):
            return (scores / math.sqrt(d_k)).astype(np.float64)
    """),
    "03-times-inverse-sqrt": ("03_scaling", """
        def scale_scores(scores, d_k):
            return scores * d_k ** -0.5
    """),
    # ---- step 4
    "04-no-keepdims": ("04_softmax", """
        import numpy as np

        def softmax(x, axis=-1):
            e = np.exp(x - np.max(x, axis=axis))
            return e / np.sum(e, axis=axis)
    """),
    "04-whole-array-sum": ("04_softmax", """
        import numpy as np

        def softmax(x, axis=-1):
            e = np.exp(x - np.max(x, axis=axis, keepdims=True))
            return e / np.sum(e)
    """),
    "04-log-sum-exp": ("04_softmax", """
        import numpy as np

        def softmax(x, axis=-1):
            m = np.max(x, axis=axis, keepdims=True)
            return np.exp(x - m - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)))
    """),
    "04-widened-to-float64": ("04_softmax", """
        import numpy as np

        def softmax(x, axis=-1):
            e = np.exp(x.astype(np.float64) - np.max(x, axis=axis, keepdims=True))
            return e / np.sum(e, axis=axis, keepdims=True)
    """),
    # ---- step 5
    "05-V-at-weights": ("05_weighted_sum", """
        import numpy as np

        def weighted_sum(weights, V):
            return V @ weights

        def self_attention(X, W_Q, W_K, W_V):
            Q, K, V = X @ W_Q, X @ W_K, X @ W_V
            s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1], dtype=K.dtype)
            e = np.exp(s - s.max(axis=-1, keepdims=True))
            w = e / e.sum(axis=-1, keepdims=True)
            return w @ V, w
    """),
    "05-returns-weights-out": ("05_weighted_sum", """
        import math
        import numpy as np

        def weighted_sum(weights, V):
            return weights @ V

        def self_attention(X, W_Q, W_K, W_V):
            Q, K, V = X @ W_Q, X @ W_K, X @ W_V
            s = Q @ np.swapaxes(K, -1, -2) / math.sqrt(K.shape[-1])
            e = np.exp(s - s.max(axis=-1, keepdims=True))
            w = e / e.sum(axis=-1, keepdims=True)
            return w, w @ V
    """),
    "05-inline-with-stub-copies": ("05_weighted_sum", """
        import math
        import numpy as np

        def project_qkv(X, W_Q, W_K, W_V):
            raise NotImplementedError("Step 5: implement project_qkv")

        def softmax(x, axis=-1):
            raise NotImplementedError("Step 5: implement softmax")

        def weighted_sum(weights, V):
            return weights @ V

        def self_attention(X, W_Q, W_K, W_V):
            Q, K, V = X @ W_Q, X @ W_K, X @ W_V
            s = Q @ np.swapaxes(K, -1, -2) / math.sqrt(K.shape[-1])
            e = np.exp(s - s.max(axis=-1, keepdims=True))
            w = e / e.sum(axis=-1, keepdims=True)
            return [w @ V, w]
    """),
    # ---- step 6
    "06-list-instead-of-tuple": ("06_multi_head", MHA_PARTS + dedent("""
        def multi_head_attention(x, W_Q, W_K, W_V, W_O, num_heads):
            q, k, v = (split_heads(x @ W, num_heads) for W in (W_Q, W_K, W_V))
            w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
            return [merge_heads(w @ v) @ W_O, w]
    """)),
    "06-times-sqrt-head-dim": ("06_multi_head", MHA_PARTS + dedent("""
        def multi_head_attention(x, W_Q, W_K, W_V, W_O, num_heads):
            q, k, v = (split_heads(x @ W, num_heads) for W in (W_Q, W_K, W_V))
            w = torch.softmax(q @ k.transpose(-2, -1) * math.sqrt(q.shape[-1]), dim=-1)
            return merge_heads(w @ v) @ W_O, w
    """)),
    "06-heads-loop": ("06_multi_head", MHA_PARTS + dedent("""
        def multi_head_attention(x, W_Q, W_K, W_V, W_O, num_heads):
            q, k, v = (split_heads(x @ W, num_heads) for W in (W_Q, W_K, W_V))
            outs, ws = [], []
            for i in range(num_heads):                   # the lesson's way: one head at a time
                w = torch.softmax(q[:, i] @ k[:, i].transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
                outs.append(w @ v[:, i])
                ws.append(w)
            return merge_heads(torch.stack(outs, dim=1)) @ W_O, torch.stack(ws, dim=1)
    """)),
    "06-heads-loop-projecting-each-time": ("06_multi_head", MHA_PARTS + dedent("""
        def multi_head_attention(x, W_Q, W_K, W_V, W_O, num_heads):
            outs, ws = [], []
            for i in range(num_heads):                   # the full projections again for every head
                q, k, v = (split_heads(x @ W, num_heads)[:, i] for W in (W_Q, W_K, W_V))
                w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
                outs.append(w @ v)
                ws.append(w)
            return merge_heads(torch.stack(outs, dim=1)) @ W_O, torch.stack(ws, dim=1)
    """)),
    "06-weights-applied-as-W-x": ("06_multi_head", MHA_PARTS + dedent("""
        def multi_head_attention(x, W_Q, W_K, W_V, W_O, num_heads):
            q, k, v = (split_heads(x @ W.T, num_heads) for W in (W_Q, W_K, W_V))
            w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
            return merge_heads(w @ v) @ W_O.T, w
    """)),
    "06-float32-softmax": ("06_multi_head", MHA_PARTS + dedent("""
        def multi_head_attention(x, W_Q, W_K, W_V, W_O, num_heads):
            q, k, v = (split_heads(x @ W, num_heads) for W in (W_Q, W_K, W_V))
            w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1, dtype=torch.float32).to(x.dtype)
            return merge_heads(w @ v) @ W_O, w
    """)),
    "06-view-after-transpose": ("06_multi_head", MHA_PARTS.replace("x.transpose(1, 2).reshape(B, T, h * hd)",
                                                                   "x.transpose(1, 2).view(B, T, h * hd)") + dedent("""
        def multi_head_attention(x, W_Q, W_K, W_V, W_O, num_heads):
            q, k, v = (split_heads(x @ W, num_heads) for W in (W_Q, W_K, W_V))
            w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
            return merge_heads(w @ v) @ W_O, w
    """)),
    # ---- step 7
    "07-x-at-weight": ("07_full_module", modules(single_qkv="x @ self.W_q.weight, x @ self.W_k.weight, "
                                                            "x @ self.W_v.weight")),
    "07-weights-T-at-v": ("07_full_module", modules(single_out="w.transpose(-2, -1) @ v, w")),
    "07-weights-mT-at-v": ("07_full_module", modules(single_out="w.mT @ v, w")),
    "07-k-at-q-T": ("07_full_module", modules(single_scores="k @ q.transpose(-2, -1)")),
    "07-correct": ("07_full_module", modules()),
    "07-layers-in-another-order": ("07_full_module", modules().replace(
        "self.W_q, self.W_k, self.W_v = (", "self.W_v, self.W_k, self.W_q = (").replace(
        "self.q_proj, self.k_proj, self.v_proj, self.out_proj = (",
        "self.out_proj, self.v_proj, self.k_proj, self.q_proj = (")),
    "07-extra-parameter": ("07_full_module", modules(extra="\n        self.scale = nn.Parameter(torch.tensor(1.0))")),
    "07-dropout": ("07_full_module", modules(extra="\n        self.drop = nn.Dropout(0.1)").replace(
        "return self.out_proj((w @ v)", "return self.out_proj((self.drop(w) @ v)")),
    # no max subtracted: exp() overflows for large scores, which only the (pointless) GPU checks try in step 7
    "07-naive-softmax": ("07_full_module", modules().replace(
        "w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(x.shape[-1]), dim=-1)",
        "s = q @ k.transpose(-2, -1) / math.sqrt(x.shape[-1])\n        w = s.exp() / s.exp().sum(-1, keepdim=True)")),
    "07-list-instead-of-tuple": ("07_full_module", modules(single_out="[w @ v, w]")),
    "07-bias-ignored": ("07_full_module", modules(
        multi_qkv="(x @ self.q_proj.weight.T, x @ self.k_proj.weight.T, x @ self.v_proj.weight.T)")),
    # ---- the decoder (issue 31), step 1: the mean square taken over the whole tensor, not each row's last axis
    "decoder-01-mean-over-all-axes": ("01_rmsnorm", """
        import torch
        from torch import nn

        class RMSNorm(nn.Module):
            def __init__(self, dim, eps=1e-06):
                super().__init__()
                self.eps = eps
                self.weight = nn.Parameter(torch.ones(dim))

            def forward(self, x):
                h = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
                return (h * torch.rsqrt(h.pow(2).mean() + self.eps) * self.weight.to(h.dtype)).to(x.dtype)
    """),
}


# every catalogued mistake, of both assignments
CASES = catalogue.CASES


def case_key(case):
    """The verdicts' key of a catalogue case: "catalogue:06-not-vectorized" for the first assignment,
    "catalogue:modern_attention/06-not-vectorized" for the second (case ids name a step by its number)."""
    prefix = "" if case[1] in FIRST else contract.ASSIGNMENT_OF[case[1]] + "/"
    return f"catalogue:{prefix}{catalogue.case_id(case)}"


def _catalogue():
    """{key: (stem, code, hidden verdict)} from the catalogue: its mistakes fail hidden checks there
    (tests/reference/test_misconception_catalogue.py asserts which), its correct templates get full marks."""
    out = {f"catalogue:correct-{stem}": (stem, catalogue.source(stem), True) for stem in catalogue.TEMPLATES}
    out.update({case_key(case): (case[1], catalogue.source(case[1], case[2]), False) for case in CASES})
    assert len(out) == len(catalogue.TEMPLATES) + len(CASES), "two cases share a key"
    return out


def _correct_styles():
    """{key: (stem, code, True)}: samples/unusual_style (the first assignment's) and the masters' solutions
    (full marks: tests/suites/test_samples.py for the first assignment; the second's masters are its references,
    full marks in scripts/grade_samples.sh and the audit)."""
    out = {}
    for step in contract.ALL_STEPS:
        if step.stem in FIRST:
            out[f"unusual:{step.stem}"] = (step.stem, (ROOT / "samples" / "unusual_style" / f"{step.stem}.py")
                                           .read_text(), True)
        imports, _cells, solutions = notebook_cells(step.stem)
        out[f"master:{step.stem}"] = (step.stem, imports + "\n\n" + solutions, True)
    return out


def with_copies(stem, code):
    """A step 5 file without the copies of steps 1 to 4 (the grader grades only weighted_sum and
    self_attention) gets the master's before its own code, as the notebook it came from had them."""
    if stem != "05_weighted_sum" or "def project_qkv" in code:
        return code
    imports, _cells, solutions = notebook_cells(stem)
    return imports + "\n\n" + solutions + "\n\n" + code


def _graded_programs():
    """{key: (stem, code)} whose hidden verdict this test grades."""
    out = {f"program:{label}": (stem, dedent(code)) for label, (stem, code) in PROGRAMS.items()}
    out.update({f"leniency:{label}": (stem, dedent(code)) for label, (stem, code) in leniency.CASES.items()})
    out.update({f"lesson:{step.stem}": (step.stem, (ROOT / "samples" / "lesson" / f"{step.stem}.py").read_text())
                for step in contract.STEPS})
    return out


def _story(key, stem, hidden_ok, visible, failures):
    seen = "passed" if visible["failed"] is None else f"failed in {visible['failed'][0]}: " \
                                                      f"{visible['failed'][1]}: {visible['failed'][2][:400]}"
    hidden = "full marks" if hidden_ok else f"not full marks {failures[:3]}"
    return f"{key} ({stem}): hidden {hidden}; visible {seen}"


# what the first failing visible test must say about each catalogued mistake: its cause, in words
CAUSE = {"projection-swapped": r"in that order|are swapped", "scores-transposed": r"K Q\^T",
         "scale-multiplied": r"multiplied by sqrt", "scale-missing": r"not scaled|came back unchanged",
         "scale-by-d": r"divided by (d_k|head_dim)", "scale-by-d-model": r"sqrt\((d_model|D)\)",
         "softmax-wrong-axis": r"along axis \d|over the queries", "softmax-unstable": r"overflows",
         "softmax-global-max": r"far below", "weights-transposed": r"weights\^T|weights transposed|weights @ V fits",
         "heads-reshape-no-transpose": r"straight to \(B, h, T, head_dim\)",
         "heads-merge-no-transpose": r"straight to \(B, T, D\)", "missing-output-projection": r"was not applied",
         "detached-graph": r"graph is cut|cuts the graph", "not-vectorized": r"grows with|loops over",
         "forbidden-api": r"off-limits|write the attention yourself", "broadcast-weighted-sum": r"broadcasting",
         # the second assignment's
         "causal-upper-triangle": r"upper triangle", "mask-true-blocked": r"True where attention is blocked",
         "causal-aligned-at-start": r"aligned at the start", "causal-excludes-diagonal": r"not attend its own position",
         "padding-off-by-one": r"one True too many", "mask-after-softmax": r"after the softmax only",
         "mask-fill-zero": r"set to 0 instead of -inf", "mask-ignored": r"mask was not applied",
         "masked-row-nan": r"got NaN|NaN comes from", "mask-fill-finite": r"finite fill",
         "kv-from-x": r"come from context, not x", "key-padding-mask-convention": r"context mask the other way round",
         "gqa-heads-tiled": r"expanded with repeat", "gqa-kv-layout": r"columns were taken in the wrong layout",
         "causal-mask-missing": r"causal mask is missing|no causal mask",
         "causal-flag-ignored": r"although causal=False",
         "gqa-scale-by-kv-width": r"keys' full width", "rope-interleaved": r"are neighbours \(2i, 2i \+ 1\)",
         "rope-sign-flipped": r"turn the wrong way", "rope-sin-cos-swapped": r"cos and sin were swapped",
         "rope-exponent-i": r"exponent is -i / head_dim", "rope-positions-from-1": r"counted from 1",
         "rope-positions-ignored": r"positions given were ignored", "rope-freqs-reversed": r"run backwards",
         "rope-base-ignored": r"base given was ignored", "rope-angles-float32": r"computed in float32|must be float64",
         "kv-cache-wrong-axis": r"along the time axis", "kv-cache-no-causal-new": r"dropped when a cache is given",
         "kv-cache-reprojects": r"projected again", "online-no-rescale": r"not rescaled|nor the running sum was",
         "online-no-final-division": r"final division", "online-max-not-kept": r"running maximum kept",
         "lse-without-max": r"without the running maximum", "last-block-dropped": r"last, shorter block",
         "tiled-full-scores": r"score matrix takes",
         # the third assignment's (decoder, issue 31)
         "rmsnorm-eps-outside-root": r"eps inside the root", "rmsnorm-half-precision": r"computed in float32",
         "swiglu-gate-swapped": r"silu applied to gate_proj", "swiglu-wrong-activation": r"silu applied to gate_proj",
         "block-residual-around-norm": r"added to x as it was", "block-post-norm": r"\(pre-norm\)",
         "rope-on-values": r"RoPE turn q and k only", "rope-position-ignores-cache": r"continue at len\(cache\)",
         "block-causal-aligned-at-start": r"causal mask aligned at the end",
         "rope-keys-rotated-twice": r"turned once", "cache-all-query-heads": r"keeps num_kv_heads heads",
         "cache-keys-before-rope": r"not the keys after RoPE",
         "decoder-positions-restart": r"positions continue after the cache",
         "decoder-padding-unmasked": r"padding keys masked", "decoder-final-norm-missing": r"final norm",
         "decoder-head-not-tied": r"embedding's own Parameter", "sampling-no-temperature": r"temperature applied",
         "top-p-wrong-side": r"top-p keep the most likely", "top-p-crossing-dropped": r"the one crossing p included",
         "generate-padding-ignored": r"padding is masked", "generate-eos-not-kept": r"keeps getting eos_id",
         "generate-without-cache": r"only the new token", "loss-not-shifted": r"predicts token t \+ 1",
         "loss-shifted-wrong-way": r"predicts token t \+ 1", "loss-padding-counted": r"padding are not counted",
         "train-step-grad-not-zeroed": r"gradients zeroed", "train-step-loss-after": r"before the optimizer's step"}


BREAKS = {
    # the closeness test made to say "match" for everything: values no longer count
    "02_scores": ("    got, expected = np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64)",
                  ["program:02-scaled-already"]),
    "07_full_module": ("    got, expected = (torch.as_tensor(t).detach().cpu().to(torch.float64) "
                       "for t in (got, expected))",
                       ["program:07-x-at-weight", "program:07-weights-T-at-v", "program:07-k-at-q-T"]),
    # the second assignment: RoPE turned the wrong way keeps lengths and relative scores, only values show it
    "04_rope": ("    got, expected = (torch.as_tensor(t).detach().cpu().to(torch.float64) for t in (got, expected))",
                ["catalogue:modern_attention/04-rope-sign-flipped",
                 "catalogue:modern_attention/04-rope-sin-cos-swapped"]),
}
