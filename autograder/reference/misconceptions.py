"""The catalogue of mistakes the grader can name.

Each entry has a stable id (used in the `misconception:<id>` tag), the steps where it can occur,
a one-sentence diagnosis, a short explanation of the concept, and a hint toward the fix. The
suites recognise a mistake by applying it to the reference on the same inputs (see `variants.py`)
and comparing.

The texts are English msgids marked with `N_()`: they are translated where they are shown
(`text()`, `describe()`, the feedback page), in the language chosen then.
"""
import contextvars
from dataclasses import dataclass, field

from autograder.i18n import N_, _, join, translate

# the library the step being graded works with ("numpy" or "torch", contract.Step.framework): its
# hints are shown. The hidden suites' conftest sets it for every check; None reads as "numpy".
FRAMEWORK = contextvars.ContextVar("attention_kit_framework", default=None)


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
    hint: str                # in the names of numpy (the numpy steps), and the default
    # {framework: hint}: the hint in the names of another library (torch: dim, keepdim=True, torch.softmax)
    hints: dict = field(default_factory=dict, hash=False, compare=False)

    def hint_for(self, framework=None):
        """The hint (an N_() msgid) in the words of `framework` (default: the step being graded)."""
        framework = framework or FRAMEWORK.get() or "numpy"
        return self.hints.get(framework, self.hint)

    def text(self, framework=None):
        """Diagnosis, explanation and hint, in the current language and the step's library."""
        return _("Likely cause: {diagnosis} {why} Hint: {hint}", diagnosis=translate(self.diagnosis),
                 why=translate(self.why), hint=translate(self.hint_for(framework)))


CATALOGUE = {m.id: m for m in (
    Misconception(
        "scale-multiplied", (3, 5, 6, 7),
        N_("you multiplied the scores by sqrt(d_k) instead of dividing by it."),
        N_("Dividing by d_k ** -0.5 is the same as multiplying by sqrt(d_k); it makes the scores grow "
           "with the key dimension instead of keeping their spread near 1."),
        N_("divide by math.sqrt(d_k), or multiply by d_k ** -0.5, but not both.")),
    Misconception(
        "scale-missing", (3, 5, 6, 7),
        N_("your scores were not scaled at all."),
        N_("Without dividing by sqrt(d_k) the dot products grow with d_k and the softmax saturates."),
        N_("divide the scores by math.sqrt(d_k) before the softmax.")),
    Misconception(
        "scale-by-d", (3, 5, 6, 7),
        N_("you divided by d_k instead of sqrt(d_k)."),
        N_("The spread of q.k grows like sqrt(d_k), so sqrt(d_k) is the factor that brings it back to 1."),
        N_("use math.sqrt(d_k).")),
    Misconception(
        "scale-by-d-model", (5, 6, 7),
        N_("you scaled by sqrt(d_model) instead of sqrt(d_k)."),
        N_("The dot products run over the key dimension d_k (head_dim = d_model / num_heads in "
           "multi-head attention); the two are equal only when the projections are square."),
        N_("divide by math.sqrt(d_k): K.shape[-1], or d_model // num_heads for one head.")),
    Misconception(
        "softmax-wrong-axis", (4, 5, 6, 7),
        N_("you normalised over the wrong axis."),
        N_("Each query's weights over the keys must sum to 1, i.e. along the axis you were given "
           "(the last one for attention)."),
        N_("use the `axis` argument in both the max and the sum, with keepdims=True."),
        {"torch": N_("normalise over the last dimension: torch.softmax(scores, dim=-1), or dim=-1 with "
                     "keepdim=True in both the max and the sum.")}),
    Misconception(
        "softmax-unstable", (4, 5, 6, 7),
        N_("your softmax overflows on large scores: exp() of a large number is inf, and inf / inf is nan."),
        N_("Subtracting the row maximum before exp() changes nothing mathematically and keeps every "
           "exponent at most 0."),
        N_("subtract x.max(axis, keepdims=True) before calling exp."),
        {"torch": N_("use torch.softmax(scores, dim=-1), or subtract scores.amax(dim=-1, keepdim=True) before "
                     "exp().")}),
    Misconception(
        "softmax-global-max", (4, 5, 6, 7),
        N_("you subtracted the maximum of the whole array instead of each row's own: on rows far below that "
           "maximum every exp() underflows to 0, and 0 / 0 is nan."),
        N_("Subtracting a row's own maximum keeps its largest exponent at exactly 0, so the row's sum is at least "
           "1; one maximum for the whole array leaves rows whose exponents are all far below 0."),
        N_("take the maximum along the axis you normalise: x.max(axis=axis, keepdims=True)."),
        {"torch": N_("take the maximum along the softmax's dimension: scores.amax(dim=-1, keepdim=True), or use "
                     "torch.softmax(scores, dim=-1).")}),
    Misconception(
        "scores-transposed", (2, 5, 6, 7),
        N_("you computed K Q^T instead of Q K^T."),
        N_("Row i of the scores must belong to query i, so the queries go on the left."),
        N_("use Q @ K^T (swap the last two axes of K: np.swapaxes(K, -1, -2))."),
        {"torch": N_("use Q @ K^T (swap the last two dimensions of K: K.transpose(-2, -1)).")}),
    Misconception(
        "weights-transposed", (5, 6, 7),
        N_("you multiplied V by the transposed weights."),
        N_("Output row i mixes the values with query i's weights: row i of the weight matrix."),
        N_("use weights @ V, without transposing the weights.")),
    Misconception(
        "heads-reshape-no-transpose", (6, 7),
        N_("you split the heads with a reshape/view but no transpose."),
        N_("Reshaping (B, T, D) straight to (B, h, T, hd) mixes tokens across heads; the head axis "
           "must come from the last dimension."),
        N_("view as (B, T, h, hd), then transpose(1, 2).")),
    Misconception(
        "heads-merge-no-transpose", (6, 7),
        N_("you merged the heads with a reshape but no transpose back."),
        N_("(B, h, T, hd) must become (B, T, h, hd) before the last two axes are joined."),
        N_("transpose(1, 2), then reshape(B, T, D).")),
    Misconception(
        "missing-output-projection", (6, 7),
        N_("you concatenated the heads but did not apply the output projection W_O."),
        N_("Multi-head attention mixes the heads' outputs with one more learned matrix."),
        N_("multiply the merged heads by W_O (or apply out_proj).")),
    Misconception(
        "projection-swapped", (1, 6, 7),
        N_("you used the wrong weight matrix for Q, K or V."),
        N_("Q = X @ W_Q, K = X @ W_K and V = X @ W_V each have their own matrix."),
        N_("check which weight goes with which projection, and the order you return them in.")),
    Misconception(
        "detached-graph", (6, 7),
        N_("your forward values are right, but the autograd graph is cut: no gradient reaches some inputs or "
           "parameters."),
        N_(".detach(), .data, .item(), a round trip through numpy or a torch.no_grad() block give values without "
           "their history, so backward() stops there and training would never update what lies before it."),
        N_("keep every step a torch operation on the tensors themselves (x / math.sqrt(d), torch.softmax, @); "
           "use .detach() and .item() only for printing or plotting.")),
    # the complexity and api checks (complexity.py): named from the child's counts, not from values
    Misconception(
        "not-vectorized", (1, 2, 3, 4, 5, 6, 7),
        N_("your code loops in Python over positions, batch entries or heads."),
        N_("A Python loop runs the interpreter once per item; whole-array operations run the same "
           "arithmetic in compiled code for all items at once, which is what keeps attention fast on "
           "long sequences and large batches."),
        N_("replace the loop by operations on whole arrays: @ (matmul) and broadcasting over the leading "
           "axes, reductions with axis=... and keepdims=True."),
        {"torch": N_("replace the loop by operations on whole tensors: @ (matmul) and broadcasting over the "
                     "leading dimensions, reductions with dim=... and keepdim=True, view/transpose for the "
                     "heads.")}),
    Misconception(
        "broadcast-weighted-sum", (5,),
        N_("you formed the weighted sum by broadcasting the weights against V and summing, which builds "
           "a (..., T_q, T_k, d_v) array."),
        N_("weights[..., :, :, None] * V[..., None, :, :] holds every product before the sum: T_k times "
           "the memory of the result, for what one matrix product computes without it."),
        N_("use weights @ V.")),
    Misconception(
        "forbidden-api", (4, 6, 7),
        N_("your code calls a library function that this step asks you to write yourself."),
        N_("The step is there for you to build it from the operations underneath; the library call skips "
           "what the exercise teaches."),
        N_("write it with the basic operations the notebook uses (exp, max, sum, @, transpose); the message "
           "names the call to replace.")),
)}


def describe(ids, framework=None):
    """Student-facing text for the recognised mistakes, one paragraph each, with the hints of
    `framework` (default: the step being graded, FRAMEWORK): a message, rendered where it is written."""
    return join("\n", [CATALOGUE[i].text(framework) for i in ids])
