"""The contract's domain, region by region, and the checks that probe each (issue 28).

Wrong code keeps full marks when no check uses the part of the domain where it is wrong (positions
that do not start at 0, a query with no allowed key, a block size that does not divide T_k...).
`regions(step)` derives each step's regions from its contract (autograder/contract.py): the argument
names and shapes say which regions exist (a `mask` argument has rows with no allowed key; shapes
with `T_q` and `T_k` have T_q < T_k, = and >; a torch step has gradients...). `PROBES` says, per step
and region, which checks probe it, for the values and (torch steps) for the gradients: written from
the checks' own titles (each title names its inputs). tests/reference/test_domain_coverage.py fails when a
region has no check, when a check listed is not in the step's suite, and when
docs/domain_coverage.md is not what `python -m autograder.reference.domain` writes.

`NEEDS` corrects those rules, as data with each reason, where a step's own code has less than its names
suggest (the decoder: no attention scores in a norm, no gradients of drawn integer tokens).

    regions(step)      [(argument, region, needs)], needs: ("values",) or ("values", "gradients")
    table()            the Markdown of docs/domain_coverage.md
"""
import re
from pathlib import Path

from autograder import contract

DOC = Path(__file__).resolve().parents[2] / "docs" / "domain_coverage.md"
V, VG = ("values",), ("values", "gradients")


def _arguments(step):
    """[(owner, Value)] of every argument of the step's functions, methods and forward()s."""
    out = []
    for item in step.api:
        if isinstance(item, contract.Function):
            out += [(item.name, a) for a in item.args]
        elif isinstance(item, contract.Module):
            out += [(f"{item.name}.forward", a) for a in item.forward.args]
        elif isinstance(item, contract.Class):
            out += [(f"{item.name}.{m.name}", a) for m in item.methods for a in m.args]
    return out


def regions(step):
    """The step's domain regions from its contract: [(argument, region, needs)]."""
    torch = step.framework == "torch"
    grads = VG if torch else V
    found = [("dtype", "float64", grads), ("dtype", "float32", V)]
    names = set()
    for owner, arg in _arguments(step):
        name = arg.name.split("=")[0]
        names.add(name)
        if arg.shape.startswith("(...") and ("leading", name) not in [(r[1][:7], r[0]) for r in found]:
            found += [(name, "no leading dimension", V), (name, "leading batch dimensions", V)]
        if name in ("mask", "context_mask"):
            found += [(name, "None", grads), (name, "some keys masked", grads),
                      (name, "a query with no allowed key", grads)]
        if name == "causal":
            found += [(name, "False", V), (name, "True", grads)]
        if name == "positions":
            found += [(name, "starting at 0", grads), (name, "not starting at 0", grads), (name, "int32", V)]
        if name == "block_size":
            found += [(name, "dividing T_k", V), (name, "not dividing T_k", V), (name, "larger than T_k", V),
                      (name, "1", V), (name, "the default", V)]
        if name == "num_kv_heads":
            found += [(name, "1 (multi-query)", V), (name, "between 1 and num_heads", grads),
                      (name, "num_heads (multi-head)", V)]
        if name == "cache":
            found += [(name, "None", grads), (name, "a prefill, then new tokens", grads),
                      (name, "one token at a time", V), (name, "several new tokens at once", V)]
        if name == "d_k":
            found += [(name, "a square", V), (name, "not a square", V)]
        if name == "axis":
            found += [(name, "the default", V), (name, "another axis", V)]
        if name == "base":
            found += [(name, "the default", V), (name, "another base", V)]
        if name == "lengths":
            found += [(name, "0 and T", V), (name, "int32", V)]
        if name == "T_k" and owner == "causal_mask":
            found += [(name, "left out", V), (name, "T_q < T_k", V), (name, "T_q > T_k", V)]
    # T_q against T_k matters where one argument holds the queries' length and another the keys'
    # (a product between them), not for an elementwise step whose one argument holds both
    with_q = {a.name for _o, a in _arguments(step) if re.search(r"\bT_q\b", a.shape)}
    with_k = {a.name for _o, a in _arguments(step) if re.search(r"\bT_k\b", a.shape)}
    if with_q and with_k and with_q != with_k and "T_k" not in names:
        found += [("T_q, T_k", "T_q < T_k", V), ("T_q, T_k", "T_q = T_k", V), ("T_q, T_k", "T_q > T_k", V)]
    if step.stem not in ("01_projection", "02_scores", "03_scaling") and step.stem != "04_rope":
        found += [("scores", "in the thousands", V)]
    seen, out = set(), []
    for r in found:
        if (r[0], r[1]) not in seen:
            seen.add((r[0], r[1]))
            out.append(r)
    adjusted = NEEDS.get(step.stem, {})
    return [(a, r, adjusted[(a, r)][0]) if (a, r) in adjusted else (a, r, n) for a, r, n in out
            if adjusted.get((a, r), (n,))[0]]


# ------------------------------------------------------------------ where a step's code is not what its names say
# {stem: {(argument, region): (needs, why)}}: the needs a step's own code has in a region its names bring,
# where the rules above ask for more (needs () when the region is not in the step's domain at all). Data,
# each with its reason, read by regions(): the region's other needs still ask for their checks.
NEEDS = {
    # the decoder (issue 31): a norm and a feed-forward compute no attention scores, nor an exp
    "01_rmsnorm": {("scores", "in the thousands"): ((), "no scores: a norm (its overflow region, squares past "
                                                        "float16, is check 1.4's)")},
    "02_swiglu": {("scores", "in the thousands"): ((), "no scores: three products and a silu")},
    # sample_next and generate return integer tokens, drawn without a graph (generate runs under no_grad):
    # there is nothing to differentiate; the values are the tokens drawn
    "05_generation": {("dtype", "float64"): (V, "integer tokens drawn: no gradients")},
    # steps 4-6 compute no attention scores of their own: the blocks are given, locked, in their notebooks
    "04_model": {("scores", "in the thousands"): ((), "the attention is the given block's (step 3)")},
    "06_training": {("scores", "in the thousands"): ((), "the attention is the given block's (step 3); "
                                                         "the loss is F.cross_entropy's")},
}


# ------------------------------------------------------------------ the checks that probe each region
# {stem: {(argument, region): {"values": [check numbers], "gradients": [...]}}}, from the checks' titles.
def _p(values=(), gradients=()):
    return {"values": list(values), "gradients": list(gradients)}


PROBES = {
    "self_attention": {
        "01_projection": {("dtype", "float64"): _p(["1.2"]), ("dtype", "float32"): _p(["1.3"]),
                          ("X", "no leading dimension"): _p(["1.4"]), ("X", "leading batch dimensions"): _p(["1.2"])},
        "02_scores": {("dtype", "float64"): _p(["2.2"]), ("dtype", "float32"): _p(["2.3"]),
                      ("Q", "no leading dimension"): _p(["2.4"]), ("Q", "leading batch dimensions"): _p(["2.2"]),
                      ("K", "no leading dimension"): _p(["2.4"]), ("K", "leading batch dimensions"): _p(["2.2"]),
                      ("T_q, T_k", "T_q < T_k"): _p(["2.1", "2.2"]), ("T_q, T_k", "T_q = T_k"): _p(["2.5", "2.6"]),
                      ("T_q, T_k", "T_q > T_k"): _p(["2.4"])},       # 7 queries, 5 keys
        "03_scaling": {("dtype", "float64"): _p(["3.2"]), ("dtype", "float32"): _p(["3.3"]),
                       ("scores", "no leading dimension"): _p(["3.6"]),
                       ("scores", "leading batch dimensions"): _p(["3.2"]),
                       ("d_k", "a square"): _p(["3.2", "3.6"]), ("d_k", "not a square"): _p(["3.3", "3.4"])},
        "04_softmax": {("dtype", "float64"): _p(["4.2"]), ("dtype", "float32"): _p(["4.3"]),
                       ("axis", "the default"): _p(["4.2"]), ("axis", "another axis"): _p(["4.4"]),
                       ("scores", "in the thousands"): _p(["4.7", "4.8"])},
        "05_weighted_sum": {("dtype", "float64"): _p(["5.2", "5.4"]), ("dtype", "float32"): _p(["5.2", "5.5"]),
                            ("weights", "no leading dimension"): _p(["5.1"]),
                            ("weights", "leading batch dimensions"): _p(["5.2"]),
                            ("V", "no leading dimension"): _p(["5.1"]), ("V", "leading batch dimensions"): _p(["5.2"]),
                            ("X", "no leading dimension"): _p(["5.3"]), ("X", "leading batch dimensions"): _p(["5.4"]),
                            ("T_q, T_k", "T_q < T_k"): _p(["5.1"]), ("T_q, T_k", "T_q = T_k"): _p(["5.2", "5.4"]),
                            ("T_q, T_k", "T_q > T_k"): _p(["5.1"]),   # (7, 5)
                            ("scores", "in the thousands"): _p(["5.7"])},
        "06_multi_head": {("dtype", "float64"): _p(["6.1", "6.2", "6.4"], ["6.13"]), ("dtype", "float32"): _p(["6.5"]),
                          ("scores", "in the thousands"): _p(["6.7"])},
        "07_full_module": {("dtype", "float64"): _p(["7.2", "7.5", "7.6"], ["7.14"]),
                           ("dtype", "float32"): _p(["7.3", "7.7"]), ("scores", "in the thousands"): _p(["7.8"])},
    },
    "modern_attention": {
        "01_masks": {("dtype", "float64"): _p(["1.4"], ["1.9"]), ("dtype", "float32"): _p(["1.5"]),
                     ("T_k", "left out"): _p(["1.1"]), ("T_k", "T_q < T_k"): _p(["1.1", "1.7"]),
                     ("T_k", "T_q > T_k"): _p(["1.1"]), ("lengths", "0 and T"): _p(["1.2"]),
                     ("lengths", "int32"): _p(["1.2"]),
                     ("q", "no leading dimension"): _p(["1.3", "1.4"]), ("q", "leading batch dimensions"): _p(["1.4"]),
                     ("k", "no leading dimension"): _p(["1.3", "1.4"]), ("k", "leading batch dimensions"): _p(["1.4"]),
                     ("v", "no leading dimension"): _p(["1.3", "1.4"]), ("v", "leading batch dimensions"): _p(["1.4"]),
                     ("mask", "None"): _p(["1.4", "1.5"], ["1.9"]), ("mask", "some keys masked"): _p(["1.4", "1.5"], ["1.9"]),
                     ("mask", "a query with no allowed key"): _p(["1.4", "1.5", "1.6"], ["1.9"]),
                     ("scores", "in the thousands"): _p(["1.10"])},
        "02_cross_attention": {("dtype", "float64"): _p(["2.2"], ["2.8"]), ("dtype", "float32"): _p(["2.3"]),
                               ("context_mask", "None"): _p(["2.2", "2.3"], ["2.8"]),
                               ("context_mask", "some keys masked"): _p(["2.2", "2.3", "2.6"], ["2.8"]),
                               ("context_mask", "a query with no allowed key"): _p(["2.2", "2.7"], ["2.8"]),  # (7, 0)
                               ("T_q, T_k", "T_q < T_k"): _p(["2.1", "2.2"]), ("T_q, T_k", "T_q = T_k"): _p(["2.4"]),
                               ("T_q, T_k", "T_q > T_k"): _p(["2.2"]),   # "2.2 long x": 7 against 5
                               ("scores", "in the thousands"): _p(["2.9"])},
        "03_grouped_query": {("dtype", "float64"): _p(["3.2"], ["3.7"]), ("dtype", "float32"): _p(["3.3"]),
                             ("num_kv_heads", "1 (multi-query)"): _p(["3.5"]),
                             ("num_kv_heads", "between 1 and num_heads"): _p(["3.2", "3.3"], ["3.7"]),
                             ("num_kv_heads", "num_heads (multi-head)"): _p(["3.5"]),
                             ("causal", "False"): _p(["3.4", "3.5"]), ("causal", "True"): _p(["3.2", "3.6"], ["3.7"]),
                             ("scores", "in the thousands"): _p(["3.13"])},
        "04_rope": {("dtype", "float64"): _p(["4.2", "4.3"], ["4.7"]), ("dtype", "float32"): _p(["4.4"]),
                    ("positions", "starting at 0"): _p(["4.2", "4.3", "4.5"], ["4.7"]),
                    ("positions", "not starting at 0"): _p(["4.3", "4.6"], ["4.7"]),   # OFFSET_POSITIONS
                    ("positions", "int32"): _p(["4.1"]),
                    ("base", "the default"): _p(["4.2", "4.3"]), ("base", "another base"): _p(["4.2", "4.3"]),
                    ("x", "no leading dimension"): _p(["4.3"]), ("x", "leading batch dimensions"): _p(["4.3"])},
        "05_kv_cache": {("dtype", "float64"): _p(["5.3", "5.5", "5.6"], ["5.12"]), ("dtype", "float32"): _p(["5.4"]),
                        ("cache", "None"): _p(["5.3", "5.4"], ["5.12"]),
                        ("cache", "a prefill, then new tokens"): _p(["5.4", "5.6"], ["5.12"]),
                        ("cache", "one token at a time"): _p(["5.5"]),
                        ("cache", "several new tokens at once"): _p(["5.6"]),
                        ("scores", "in the thousands"): _p(["5.13"])},
        "06_flash_attention": {("dtype", "float64"): _p(["6.2"], ["6.7"]), ("dtype", "float32"): _p(["6.3"]),
                               ("block_size", "dividing T_k"): _p(["6.4"]), ("block_size", "not dividing T_k"): _p(["6.2", "6.4"]),
                               ("block_size", "larger than T_k"): _p(["6.4"]), ("block_size", "1"): _p(["6.4"]),
                               ("block_size", "the default"): _p(["6.4"]),
                               ("causal", "False"): _p(["6.2", "6.4"]), ("causal", "True"): _p(["6.2", "6.3", "6.5"], ["6.7"]),
                               ("T_q, T_k", "T_q < T_k"): _p(["6.2"]), ("T_q, T_k", "T_q = T_k"): _p(["6.2"]),
                               ("T_q, T_k", "T_q > T_k"): _p(["6.5"], ["6.7"]),   # 9 against 5, causal
                               ("scores", "in the thousands"): _p(["6.6"])},
    },
    "decoder": {
        "01_rmsnorm": {("dtype", "float64"): _p(["1.2"], ["1.5"]), ("dtype", "float32"): _p(["1.3"]),
                       ("x", "no leading dimension"): _p(["1.2"]), ("x", "leading batch dimensions"): _p(["1.2"])},
        "02_swiglu": {("dtype", "float64"): _p(["2.2"], ["2.4"]), ("dtype", "float32"): _p(["2.3"]),
                      ("x", "no leading dimension"): _p(["2.2"]), ("x", "leading batch dimensions"): _p(["2.2"])},
        "03_decoder_block": {("dtype", "float64"): _p(["3.3", "3.5"], ["3.9"]), ("dtype", "float32"): _p(["3.4"]),
                             ("scores", "in the thousands"): _p(["3.11"]),
                             ("cache", "None"): _p(["3.3", "3.4"], ["3.9"]),
                             ("cache", "a prefill, then new tokens"): _p(["3.4", "3.5"], ["3.9"]),
                             ("cache", "one token at a time"): _p(["3.5"]),
                             ("cache", "several new tokens at once"): _p(["3.5"]),
                             ("positions", "starting at 0"): _p(["3.3", "3.5"], ["3.9"]),   # positions=None: 0, 1, ...
                             ("positions", "not starting at 0"): _p(["3.7"], ["3.9"]),   # from 4093 on
                             ("positions", "int32"): _p(["3.7"])},
        "04_model": {("dtype", "float64"): _p(["4.2", "4.4", "4.5"], ["4.8"]), ("dtype", "float32"): _p(["4.6"]),
                     ("cache", "None"): _p(["4.2", "4.3"], ["4.8"]),
                     ("cache", "a prefill, then new tokens"): _p(["4.4", "4.6"], ["4.8"]),
                     ("cache", "one token at a time"): _p(["4.4"]), ("cache", "several new tokens at once"): _p(["4.4"])},
        "05_generation": {("dtype", "float64"): _p(["5.1", "5.2", "5.3", "5.4"]), ("dtype", "float32"): _p(["5.10"]),
                          ("scores", "in the thousands"): _p(["5.11"])},     # logits: 3000 plus a few units
        # train_step's gradients are checked by their effect: the parameters after three SGD steps (6.4)
        "06_training": {("dtype", "float64"): _p(["6.1", "6.2"], ["6.4"]), ("dtype", "float32"): _p(["6.3", "6.6"])},
    },
}


def probes(step):
    return PROBES[contract.ASSIGNMENT_OF[step.stem]].get(step.stem, {})


def uncovered(step):
    """'argument: region (values|gradients)' of each region of the step that no check probes."""
    table = probes(step)
    return [f"{arg}: {region} ({need})" for arg, region, needs in regions(step) for need in needs
            if not table.get((arg, region), {}).get(need)]


def table():
    """docs/domain_coverage.md: per assignment and step, each region and its checks."""
    lines = ["# Domain coverage", "",
             "Generated by `python -m autograder.reference.domain` from `autograder/reference/domain.py`: "
             "each step's regions come from its contract (argument names and shapes), the checks from the "
             "suites' titles. tests/reference/test_domain_coverage.py fails when a region has no check, or when this "
             "file is out of date. A gradients column is shown for torch steps; \"-\" means the region needs "
             "no gradient check (an integer or a dtype the gradient check does not use).", ""]
    for assignment, steps in contract.ASSIGNMENTS.items():
        lines += [f"## {assignment}", ""]
        for step in steps:
            torch = step.framework == "torch"
            lines += [f"### {step.stem}", "",
                      "| argument | region | values (or shapes) | gradients |" if torch else "| argument | region | values (or shapes) |",
                      "|---|---|---|---|" if torch else "|---|---|---|"]
            table_ = probes(step)
            for arg, region, needs in regions(step):
                probe = table_.get((arg, region), {})
                cells = [", ".join(str(name) for name in probe.get("values", [])) or "**none**"]
                if torch:
                    cells.append((", ".join(str(name) for name in probe.get("gradients", [])) or "**none**") if "gradients" in needs else "-")
                lines.append(f"| `{arg}` | {region} | " + " | ".join(cells) + " |")
            lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    DOC.write_text(table(), encoding="utf-8")
    print(f"wrote {DOC}")
