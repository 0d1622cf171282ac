"""The catalogue of mistakes the grader can name.

Each entry has a stable id (used in the `misconception:<id>` tag), the steps where it can occur,
a one-sentence diagnosis, a short explanation of the concept, and a hint toward the fix. The
suites recognise a mistake by applying it to the reference on the same inputs (see `variants.py`)
and comparing.
"""
from dataclasses import dataclass


@dataclass(frozen=True)
class Misconception:
    id: str
    # the steps whose hidden suite can name it (a test grades the mistake at each of them).
    # softmax-unstable: step 7 has no stability check; projection-swapped: at step 5 d_v != d_k,
    # so any swap involving V fails on shapes before values, and a Q/K swap in steps 5-7 is
    # indistinguishable from scores-transposed (K Q^T), which is what it is named there.
    steps: tuple
    diagnosis: str
    why: str
    hint: str

    def text(self):
        return f"Likely cause: {self.diagnosis} {self.why} Hint: {self.hint}"


CATALOGUE = {m.id: m for m in (
    Misconception(
        "scale-multiplied", (3, 5, 6, 7),
        "you multiplied the scores by sqrt(d_k) instead of dividing by it.",
        "Dividing by d_k ** -0.5 is the same as multiplying by sqrt(d_k); it makes the scores grow "
        "with the key dimension instead of keeping their spread near 1.",
        "divide by math.sqrt(d_k), or multiply by d_k ** -0.5, but not both."),
    Misconception(
        "scale-missing", (3, 5, 6, 7),
        "your scores were not scaled at all.",
        "Without dividing by sqrt(d_k) the dot products grow with d_k and the softmax saturates.",
        "divide the scores by math.sqrt(d_k) before the softmax."),
    Misconception(
        "scale-by-d", (3, 5, 6, 7),
        "you divided by d_k instead of sqrt(d_k).",
        "The spread of q.k grows like sqrt(d_k), so sqrt(d_k) is the factor that brings it back to 1.",
        "use math.sqrt(d_k)."),
    Misconception(
        "scale-by-d-model", (5, 6, 7),
        "you scaled by sqrt(d_model) instead of sqrt(d_k).",
        "The dot products run over the key dimension d_k (head_dim = d_model / num_heads in "
        "multi-head attention); the two are equal only when the projections are square.",
        "divide by math.sqrt(d_k): K.shape[-1], or d_model // num_heads for one head."),
    Misconception(
        "softmax-wrong-axis", (4, 5, 6, 7),
        "you normalised over the wrong axis.",
        "Each query's weights over the keys must sum to 1, i.e. along the axis you were given "
        "(the last one for attention).",
        "use the `axis` argument in both the max and the sum, with keepdims=True."),
    Misconception(
        "softmax-unstable", (4, 5, 6),
        "your softmax overflows on large scores: exp() of a large number is inf, and inf / inf is nan.",
        "Subtracting the row maximum before exp() changes nothing mathematically and keeps every "
        "exponent at most 0.",
        "subtract x.max(axis, keepdims=True) before calling exp."),
    Misconception(
        "scores-transposed", (2, 5, 6, 7),
        "you computed K Q^T instead of Q K^T.",
        "Row i of the scores must belong to query i, so the queries go on the left.",
        "use Q @ K^T (swap the last two axes of K)."),
    Misconception(
        "weights-transposed", (5, 6, 7),
        "you multiplied V by the transposed weights.",
        "Output row i mixes the values with query i's weights: row i of the weight matrix.",
        "use weights @ V, without transposing the weights."),
    Misconception(
        "heads-reshape-no-transpose", (6, 7),
        "you split the heads with a reshape/view but no transpose.",
        "Reshaping (B, T, D) straight to (B, h, T, hd) mixes tokens across heads; the head axis "
        "must come from the last dimension.",
        "view as (B, T, h, hd), then transpose(1, 2)."),
    Misconception(
        "heads-merge-no-transpose", (6, 7),
        "you merged the heads with a reshape but no transpose back.",
        "(B, h, T, hd) must become (B, T, h, hd) before the last two axes are joined.",
        "transpose(1, 2), then reshape(B, T, D)."),
    Misconception(
        "missing-output-projection", (6, 7),
        "you concatenated the heads but did not apply the output projection W_O.",
        "Multi-head attention mixes the heads' outputs with one more learned matrix.",
        "multiply the merged heads by W_O (or apply out_proj)."),
    Misconception(
        "projection-swapped", (1, 6, 7),
        "you used the wrong weight matrix for Q, K or V.",
        "Q = X @ W_Q, K = X @ W_K and V = X @ W_V each have their own matrix.",
        "check which weight goes with which projection, and the order you return them in."),
)}


def describe(ids):
    """Student-facing text for the recognised mistakes, one paragraph each."""
    return "\n".join(CATALOGUE[i].text() for i in ids)
