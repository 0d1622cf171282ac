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

from autograder import contract
from autograder.i18n import N_, _, join, translate

# the library the step being graded works with ("numpy" or "torch", contract.Step.framework): its
# hints are shown. The hidden suites' conftest sets it for every check; None reads as "numpy".
FRAMEWORK = contextvars.ContextVar("attention_kit_framework", default=None)


@dataclass(frozen=True)
class Misconception:
    id: str
    # the steps whose hidden suite can name it (a test grades the mistake at each of them): numbers
    # for the first assignment's steps, stems ("01_masks") for any other's (see `stems`).
    # softmax-unstable: step 7 has no stability check; projection-swapped: at step 5 d_v != d_k,
    # so any swap involving V fails on shapes before values, and a Q/K swap in steps 5-7 is
    # indistinguishable from scores-transposed (K Q^T), which is what it is named there.
    steps: tuple
    diagnosis: str
    why: str
    hint: str                # in the names of numpy (the numpy steps), and the default
    # {framework: hint}: the hint in the names of another library (torch: dim, keepdim=True, torch.softmax)
    hints: dict = field(default_factory=dict, hash=False, compare=False)

    @property
    def stems(self):
        """The steps as contract stems: a number names a step of the first assignment (its entries
        predate the second), a stem ("01_masks") a step of any assignment."""
        first = {s.number: s.stem for s in contract.STEPS}
        return tuple(first[s] if isinstance(s, int) else s for s in self.steps)

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
        N_("divide the scores by math.sqrt(d_k) (or multiply them by d_k ** -0.5); multiplying by "
           "math.sqrt(d_k) scales the wrong way.")),
    Misconception(
        "scale-missing", (3, 5, 6, 7, "06_flash_attention"),
        N_("your scores were not scaled at all."),
        N_("Without dividing by sqrt(d_k) the dot products grow with d_k and the softmax saturates."),
        N_("divide the scores by math.sqrt(d_k) before the softmax.")),
    Misconception(
        "scale-by-d", (3, 5, 6, 7),
        N_("you divided by d_k instead of sqrt(d_k)."),
        N_("The spread of q.k grows like sqrt(d_k), so sqrt(d_k) is the factor that brings it back to 1."),
        N_("use math.sqrt(d_k).")),
    Misconception(
        "scale-by-d-model", (5, 6, 7, "03_grouped_query", "05_kv_cache"),
        N_("you scaled by sqrt(d_model) instead of sqrt(d_k)."),
        N_("The dot products run over the key dimension d_k (head_dim = d_model / num_heads in "
           "multi-head attention); the two are equal only when the projections are square."),
        N_("divide by math.sqrt(d_k): K.shape[-1], or d_model // num_heads for one head.")),
    Misconception(
        "softmax-wrong-axis", (4, 5, 6, 7, "03_grouped_query"),
        N_("you normalised over the wrong axis."),
        N_("Each query's weights over the keys must sum to 1, i.e. along the axis you were given "
           "(the last one for attention)."),
        N_("normalise along the axis you are given (axis=-1, the keys, for attention scores): pass "
           "that `axis` to both the max and the sum, with keepdims=True."),
        {"torch": N_("normalise over the last dimension: torch.softmax(scores, dim=-1), or dim=-1 with "
                     "keepdim=True in both the max and the sum.")}),
    Misconception(
        "softmax-unstable", (4, 5, 6, 7, "03_grouped_query", "05_kv_cache"),
        N_("your softmax overflows on large scores: exp() of a large number is inf, and inf / inf is nan."),
        N_("Subtracting the row maximum before exp() changes nothing mathematically and keeps every "
           "exponent at most 0."),
        N_("subtract x.max(axis, keepdims=True) before calling exp."),
        {"torch": N_("use torch.softmax(scores, dim=-1), or subtract scores.amax(dim=-1, keepdim=True) before "
                     "exp().")}),
    Misconception(
        "softmax-global-max", (4, 5, 6, 7, "03_grouped_query"),
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
        "missing-output-projection", (6, 7, "03_grouped_query"),
        N_("you concatenated the heads but did not apply the output projection W_O."),
        N_("Multi-head attention mixes the heads' outputs with one more learned matrix."),
        N_("multiply the merged heads by W_O (or apply out_proj).")),
    Misconception(
        "projection-swapped", (1, 6, 7),
        N_("you used the wrong weight matrix for Q, K or V."),
        N_("Q = X @ W_Q, K = X @ W_K and V = X @ W_V each have their own matrix."),
        N_("check which weight goes with which projection, and the order you return them in.")),
    Misconception(
        "detached-graph", (6, 7, "03_grouped_query", "04_rope", "05_kv_cache", "06_flash_attention"),
        N_("your forward values are right, but the autograd graph is cut: no gradient reaches some inputs or "
           "parameters."),
        N_(".detach(), .data, .item(), a round trip through numpy or a torch.no_grad() block give values without "
           "their history, so backward() stops there and training would never update what lies before it."),
        N_("keep every step a torch operation on the tensors themselves (x / math.sqrt(d), torch.softmax, @); "
           "use .detach() and .item() only for printing or plotting.")),
    # the complexity and api checks (complexity.py): named from the child's counts, not from values
    Misconception(
        "not-vectorized", (1, 2, 3, 4, 5, 6, 7, "01_masks", "02_cross_attention", "03_grouped_query", "04_rope",
                           "05_kv_cache", "06_flash_attention"),
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
        "forbidden-api", (4, 6, 7, "01_masks", "02_cross_attention", "03_grouped_query", "05_kv_cache",
                          "06_flash_attention"),
        N_("your code calls a library function that this step asks you to write yourself."),
        N_("The step is there for you to build it from the operations underneath; the library call skips "
           "what the exercise teaches."),
        N_("write it with the basic operations the notebook uses (exp, max, sum, @, transpose); the message "
           "names the call to replace.")),
    # ---- modern_attention: 01_masks, 02_cross_attention
    # masks: True = may attend. Named by applying each mistake to the references (reference/modern/masks.py,
    # cross_attention.py); a causal-mask mistake shows only with T_q != T_k (alignment) or on the diagonal
    Misconception(
        "mask-after-softmax", ("01_masks", "02_cross_attention"),
        N_("you applied the mask after the softmax: the blocked weights were set to 0, but the softmax had already "
           "shared each row's weight among every key, so the allowed ones no longer sum to 1."),
        N_("A mask acts on the scores: a blocked score of -inf makes exp() exactly 0 before the weights are "
           "normalised, so the allowed keys share all of the weight."),
        N_("fill the blocked scores with float('-inf') before torch.softmax (scores.masked_fill(~mask, "
           "float('-inf'))); after it, only set the weights of blocked keys to 0 again.")),
    Misconception(
        "mask-fill-zero", ("01_masks", "02_cross_attention", "03_grouped_query"),
        N_("you set the blocked scores to 0 instead of -inf: exp(0) = 1, so blocked keys still get weight."),
        N_("A softmax weight is exp(score) / sum: only a score of -inf gives a weight of exactly 0. A score of 0 is an "
           "ordinary score (scores * mask gives it too), often larger than the allowed ones."),
        N_("scores.masked_fill(~mask, float('-inf')), not masked_fill(~mask, 0) and not scores * mask.")),
    Misconception(
        "mask-fill-finite", ("01_masks", "02_cross_attention"),
        N_("you filled the blocked scores with a large finite number (such as -1e9 or torch.finfo(dtype).min) "
           "instead of -inf: right wherever a query has an allowed key, but a query with none gets equal weights "
           "1/T_k on keys it may not attend."),
        N_("When every score of a row is the same fill value, the softmax spreads the weight evenly over them: the "
           "query reads keys it must not see (padding, the future), and nothing tells you."),
        N_("fill with float('-inf') and set the blocked weights to 0 after the softmax "
           "(weights.masked_fill(~mask, 0.0)); with a finite fill, zeroing the blocked weights afterwards is "
           "needed too.")),
    Misconception(
        "masked-row-nan", ("01_masks", "02_cross_attention", "06_flash_attention"),
        N_("a query with no allowed key got NaN: the softmax of a row of -inf is 0 / 0."),
        N_("A query can have nothing to attend (a sequence of padding only, a context without a real token, more "
           "queries than keys under the causal rule). Its weights and output must be 0, or the NaN spreads to "
           "everything computed from it, gradients included."),
        N_("after the softmax, set the blocked weights to 0: weights.masked_fill(~mask, 0.0) turns "
           "such a row into zeros (and so its output). In tiled attention, where there is no softmax "
           "call, divide by the running sum l only where l > 0 (torch.where(l > 0, l, 1)) and give "
           "such a query lse -inf.")),
    Misconception(
        "mask-ignored", ("01_masks", "02_cross_attention"),
        N_("your result is the one without any mask: the mask was never applied."),
        N_("Two ways to lose it: masked_fill returns a new tensor and leaves its input as it was, so "
           "scores.masked_fill(...) on a line of its own is lost (masked_fill_, with the underscore, "
           "works in place); or the mask argument never reaches the scores (a default used instead, "
           "or a name that holds another mask)."),
        N_("apply the mask given to the scores and keep the result: scores = "
           "scores.masked_fill(~mask, float('-inf')) (masked_fill returns a new tensor), with the "
           "mask argument you were given, not a default.")),
    Misconception(
        "mask-true-blocked", ("01_masks",),
        N_("your masks use True for a blocked position (or your code reads True as blocked); in this assignment "
           "True means may attend."),
        N_("Conventions differ: nn.MultiheadAttention's key_padding_mask and attn_mask take True as blocked, "
           "F.scaled_dot_product_attention and this assignment True as allowed. Each function is checked on its own, "
           "so a convention flipped in all three alike still shows."),
        N_("causal_mask is True where key j <= the query's position, padding_mask True on the real tokens, and "
           "masked_attention blocks where the mask is False: masked_fill(~mask, float('-inf')).")),
    Misconception(
        "causal-upper-triangle", ("01_masks", "03_grouped_query"),
        N_("your causal mask is the upper triangle: each query may attend the keys after it (the future) instead of "
           "those before it."),
        N_("A decoder predicts the next token from the ones before it: the query at position p may see keys j <= p, "
           "the lower triangle; triu keeps the future."),
        N_("use tril (or key_position <= query_position), with diagonal=T_k - T_q.")),
    Misconception(
        "causal-aligned-at-start", ("01_masks", "05_kv_cache", "06_flash_attention"),
        N_("your causal mask puts query i at position i; the queries are the last T_q positions: query i stands at "
           "position T_k - T_q + i."),
        N_("When new tokens meet a cache of earlier ones (T_q < T_k), the queries are the newest positions and the "
           "last one sees every key. Aligned at the start, they would not see most of what came before them."),
        N_("shift the queries' positions by T_k - T_q: torch.arange(T_q) + (T_k - T_q), or "
           "tril(diagonal=T_k - T_q).")),
    Misconception(
        "causal-excludes-diagonal", ("01_masks",),
        N_("your causal mask does not let a query attend its own position (j < its position instead of j <= it)."),
        N_("Causal means no future: the token at position t may use positions 0 to t, itself included. Without the "
           "diagonal the first query has nothing to attend at all."),
        N_("keep the diagonal: key j <= the query's position (<=, not <; tril(diagonal=T_k - T_q), not "
           "T_k - T_q - 1).")),
    Misconception(
        "padding-off-by-one", ("01_masks",),
        N_("your padding mask has one real token too many in each row: position t is real when t < lengths[b]."),
        N_("Positions count from 0: a sequence of length n holds positions 0 to n - 1."),
        N_("compare torch.arange(T) < lengths[:, None], not <=.")),
    Misconception(
        "key-padding-mask-convention", ("02_cross_attention",),
        N_("you read context_mask as nn.MultiheadAttention's key_padding_mask, where True marks padding; here True "
           "marks a real context token."),
        N_("The two conventions are each other's complement: with the wrong one the padded tokens get all the weight "
           "and the real ones none."),
        N_("block where context_mask is False: scores.masked_fill(~context_mask[:, None, None, :], float('-inf')) "
           "(a library that takes True as padding needs ~context_mask).")),
    Misconception(
        "kv-from-x", ("02_cross_attention",),
        N_("you took the keys and values from x; in cross-attention they come from context, only the queries from x."),
        N_("Cross-attention lets each token of x read another sequence, the context (an encoder's output): "
           "q = x @ W_Q, k = context @ W_K, v = context @ W_V. With keys and values from x it is self-attention "
           "again."),
        N_("project context with W_K and W_V, and split it into heads with its own length T_k.")),
    # ---- modern_attention: 03_grouped_query, 04_rope
    # grouped-query attention: named by applying each mistake to the reference (reference/modern/grouped_query.py);
    # the grouping mistakes show only with 1 < num_kv_heads < num_heads, so the suite's groups are of 3 and 2
    Misconception(
        "gqa-heads-tiled", ("03_grouped_query",),
        N_("your query heads read the wrong key/value heads: query head i read key/value head i % num_kv_heads (the "
           "heads tiled, as repeat does), not key/value head i // (num_heads // num_kv_heads)."),
        N_("A key/value head is shared by a group of consecutive query heads: heads 0 to group - 1 read key/value head "
           "0, the next group head 1, and so on. repeat tiles the key/value heads (0, 1, 0, 1, ...) and hands most "
           "query heads another group's keys: the shapes fit, but it is another model."),
        N_("repeat each key/value head in place: k.repeat_interleave(num_heads // num_kv_heads, dim=1), or view the "
           "queries as (B, num_kv_heads, group, T, head_dim) against keys of shape (B, num_kv_heads, 1, T, head_dim).")),
    Misconception(
        "gqa-kv-layout", ("03_grouped_query",),
        N_("you took the key/value heads' columns in the wrong layout: key/value head j is columns j * head_dim to "
           "(j + 1) * head_dim - 1 of W_K and W_V, not every num_kv_heads-th column."),
        N_("Viewing the projected keys as (B, T, head_dim, num_kv_heads) builds head j from the columns j, "
           "j + num_kv_heads, j + 2 * num_kv_heads, ...; the contract keeps each head's columns together, as the "
           "queries' split into heads does."),
        N_("view the projected keys and values as (B, T, num_kv_heads, head_dim), then transpose(1, 2).")),
    Misconception(
        "causal-mask-missing", ("03_grouped_query", "05_kv_cache"),
        N_("with causal=True your queries also attended the keys after them: no causal mask was applied."),
        N_("A decoder predicts each token from the ones before it. If query i sees key j > i, training learns to read "
           "the answer from the future, and generation, which has no future tokens, breaks."),
        N_("before the softmax, fill the scores of keys after each query's position with -inf; with "
           "T_q queries and T_k keys (a cache: T_q < T_k) query i stands at position T_k - T_q + i: "
           "scores.masked_fill(~torch.ones(T_q, T_k, dtype=torch.bool, "
           "device=x.device).tril(diagonal=T_k - T_q), float('-inf')).")),
    Misconception(
        "causal-flag-ignored", ("03_grouped_query",),
        N_("with causal=False your function still applied the causal mask."),
        N_("causal=False asks for attention over every key (an encoder, or a layer that reads the whole sequence); "
           "the mask belongs to causal=True only."),
        N_("apply the mask inside `if causal:` only.")),
    Misconception(
        "gqa-scale-by-kv-width", ("03_grouped_query",),
        N_("you scaled the scores by sqrt(num_kv_heads * head_dim), the keys' width before they were split into heads, "
           "instead of sqrt(head_dim)."),
        N_("Each head's dot products run over head_dim numbers, whatever the number of heads; W_K's width, "
           "num_kv_heads * head_dim, is what all key/value heads hold together."),
        N_("divide each head's scores by math.sqrt(head_dim), head_dim = D // num_heads (q.shape[-1] after the "
           "split).")),
    # RoPE: named by applying each mistake to the reference (reference/modern/rope.py); angle mistakes made in
    # rope_angles show in apply_rope too, when it uses them
    Misconception(
        "rope-interleaved", ("04_rope",),
        N_("you paired neighbouring elements (2i, 2i + 1), RoFormer's layout; this step's contract is rotate half: "
           "element i pairs with element i + head_dim / 2."),
        N_("Both layouts turn pairs by the same angles, but they pair different numbers: weights trained for one "
           "give wrong results with the other (Hugging Face permutes Meta's LLaMA weights to convert them)."),
        N_("x1, x2 = x[..., :head_dim // 2], x[..., head_dim // 2:]; return torch.cat([x1 * cos - x2 * sin, "
           "x2 * cos + x1 * sin], dim=-1).")),
    Misconception(
        "rope-sign-flipped", ("04_rope",),
        N_("your pairs turn the wrong way, by -angle instead of +angle (sin's sign flipped, or rotate_half written "
           "as cat(x2, -x1))."),
        N_("The scores still depend on m - n only, but with the sign flipped the query at m and the key at n get the "
           "score the contract gives to the distance n - m: earlier and later are exchanged."),
        N_("the first half is x1 * cos - x2 * sin, the second x2 * cos + x1 * sin (rotate_half(x) = cat(-x2, x1)).")),
    Misconception(
        "rope-sin-cos-swapped", ("04_rope",),
        N_("you swapped cos and sin: each pair turned by pi/2 - angle instead of by angle."),
        N_("With sin where cos belongs, position 0 is turned by a quarter turn instead of not at all, and the pairs "
           "turn backwards as the position grows."),
        N_("x1 * cos - x2 * sin and x2 * cos + x1 * sin, with cos = angles.cos() and sin = angles.sin().")),
    Misconception(
        "rope-exponent-i", ("04_rope",),
        N_("your frequencies are base ** (-i / head_dim) instead of base ** (-2i / head_dim)."),
        N_("i counts pairs, so 2i runs over the even dimensions 0, 2, 4, ...: the exponent nearly reaches -1 at the "
           "last pair, which then turns by about 1 / base per position. With -i / head_dim it stops near -1/2, and "
           "the slowest pairs turn far too fast to tell distant positions apart."),
        N_("freqs = base ** (-2 * i / head_dim) with i = torch.arange(head_dim // 2, dtype=torch.float64).")),
    Misconception(
        "rope-positions-from-1", ("04_rope",),
        N_("your positions start at 1: every token was turned by one position too many."),
        N_("The first token is at position 0 and is not turned at all. Shifted by one, the scores still depend on "
           "m - n only, but the angles, and every value built on them, are not the contract's."),
        N_("use the positions as given, without + 1.")),
    Misconception(
        "rope-positions-ignored", ("04_rope",),
        N_("you ignored the positions given and turned token t by position t (torch.arange(T))."),
        N_("Positions need not start at 0 or follow each other: with a KV cache the new tokens stand after the cached "
           "ones, and a sequence may start at any offset."),
        N_("compute the angles from the positions argument: positions.to(torch.float64)[:, None] * freqs[None, :].")),
    Misconception(
        "rope-freqs-reversed", ("04_rope",),
        N_("your frequencies run backwards: pair 0 turned slowest and the last pair fastest."),
        N_("theta_i = base ** (-2i / head_dim) falls as i grows: pair 0 turns by one radian per position, the last "
           "pair by about 1 / base. Reversed, every pair turns at another pair's frequency."),
        N_("take i = torch.arange(head_dim // 2) in increasing order: freqs = base ** (-2 * i / head_dim).")),
    Misconception(
        "rope-base-ignored", ("04_rope",),
        N_("you ignored the base argument: your angles are those of base 10000 whatever base was given."),
        N_("A model chooses its base (larger bases slow every pair down, for longer contexts); the function must use "
           "the one it is given."),
        N_("use the base parameter in base ** (-2 * i / head_dim), not a literal 10000.")),
    Misconception(
        "rope-angles-float32", ("04_rope",),
        N_("your angles were computed in float32 (in the input's dtype, or from a float32 arange or frequency) instead "
           "of float64."),
        N_("This kit asks for float64 angles, stricter than the float32 angles of Hugging Face's and Meta's Llama "
           "code (enough for a bfloat16 model; the real hazard there is angles, or cos and sin, in bfloat16 or "
           "float16). Angles reach thousands of radians at large positions, where float32's 7 digits are off by "
           "far more than a float64 input allows, and cos and sin pass the error on to every turned value: the "
           "04_rope notebook prints how much. Computed in float64, and cast to x's dtype only as cos and sin, "
           "they are as exact as x's dtype allows."),
        N_("make the pair indices with dtype=torch.float64, convert the positions with .to(torch.float64), and cast "
           "only cos and sin: angles.cos().to(x.dtype).")),
    # ---- modern_attention: 05_kv_cache, 06_flash_attention
    # the KV cache: named by applying each mistake to the reference (reference/modern/kv_cache.py); a mask dropped
    # for the cache shows only with several new tokens at once, a re-projection only in the counted multiply-adds
    Misconception(
        "kv-cache-no-causal-new", ("05_kv_cache",),
        N_("with a cache your new tokens attended every position, each other's future included: the causal mask "
           "was applied only without a cache."),
        N_("One new token may see everything cached and itself, so no mask seems needed; but a prefill, or several "
           "new tokens at once, are a sequence of their own: new token i stands at position T_k - T_new + i and may "
           "not see the new tokens after it."),
        N_("always mask key j > the query's position, with the queries at positions T_k - T_new + i: "
           "torch.arange(T_new)[:, None] + (T_k - T_new) >= torch.arange(T_k)[None, :].")),
    Misconception(
        "kv-cache-wrong-axis", ("05_kv_cache",),
        N_("your KVCache appended the new keys and values along another axis than time."),
        N_("The cache holds (B, h, T_cached, head_dim): each new position adds a row along dim -2. Concatenated "
           "along the heads (dim 1), the batch or head_dim, the tensor grows in the wrong direction and the "
           "attention that reads it no longer fits."),
        N_("torch.cat([self.k, k], dim=-2) (and the same for v).")),
    Misconception(
        "kv-cache-reprojects", ("05_kv_cache",),
        N_("your decode step re-projected the whole sequence: its multiply-adds grow with the cached length far "
           "beyond the attention's own."),
        N_("What a KV cache saves is exactly this work: the cached keys and values were computed once, when their "
           "tokens were new. A decode step projects only the new token and reads the cached ones as they are; "
           "re-projecting the sequence costs about 2 * T * d_model^2 multiply-adds per generated token."),
        N_("project x (the new tokens only) with k_proj and v_proj, and cache.append those; never keep and "
           "re-project the earlier inputs.")),
    # tiled attention: named by applying each mistake to the reference (reference/modern/flash_attention.py); a
    # missing rescale shows only when a query's maximum changes between blocks, a dropped last block only with a
    # block that does not divide T_k
    Misconception(
        "online-no-rescale", ("06_flash_attention",),
        N_("your online softmax did not rescale what was already summed when the running maximum grew (or took the "
           "factor exp(m_old - m_new) after updating the maximum, which makes it 1)."),
        N_("Each block's exponentials are taken relative to the running maximum m. When a later block raises m, "
           "the sum l and the accumulator hold terms measured against the old m: both must be multiplied by "
           "exp(m_old - m_new) before the new block's terms are added, or the blocks are weighted inconsistently."),
        N_("m_new = torch.maximum(m, s.amax(dim=-1)); correction = torch.exp(m - m_new); l = l * correction + "
           "p.sum(dim=-1); acc = acc * correction[..., None] + p @ v_block; and only then m = m_new.")),
    Misconception(
        "online-no-final-division", ("06_flash_attention",),
        N_("your output is the accumulator itself: it was never divided by the running sum of the exponentials."),
        N_("The accumulator holds sum_j exp(s_j - m) v_j; the softmax weights are those exponentials divided by "
           "their sum l, so the output is acc / l, divided once at the end."),
        N_("after the loop: out = acc / l[..., None] (where l > 0; a query with no allowed key keeps 0).")),
    Misconception(
        "online-max-not-kept", ("06_flash_attention",),
        N_("your running maximum was never kept from one block to the next (m_new computed, m not assigned), so "
           "every block started the sums again and only the last one counted."),
        N_("The running maximum is the state that lets the blocks be combined: the next block's rescale factor "
           "exp(m - m_new) needs the maximum of everything seen so far. If m stays at -inf the factor is 0 and what "
           "was summed is lost; the lse built from it is -inf."),
        N_("at the end of each block, after rescaling l and acc: m = m_new.")),
    Misconception(
        "lse-without-max", ("06_flash_attention",),
        N_("your lse is log(l) without the running maximum: the log-sum-exp is m + log(l)."),
        N_("l sums exp(s_j - m), not exp(s_j): log(l) = logsumexp(s) - m. Adding m back gives the log of the real "
           "softmax denominator, what a backward pass or a merge of two tiles needs."),
        N_("lse = m + torch.log(l) (and -inf where l is 0).")),
    Misconception(
        "last-block-dropped", ("06_flash_attention",),
        N_("your loop skipped the last, shorter block of keys: when block_size does not divide T_k, the keys after "
           "the last whole block were never attended."),
        N_("range(T_k // block_size) or range(0, T_k - block_size + 1, block_size) visits whole blocks only; the "
           "keys left over (and every key, when the block is larger than T_k) must be a block of their own."),
        N_("for start in range(0, T_k, block_size): k[..., start:start + block_size, :] (slicing past the end is "
           "fine: the last block is simply shorter).")),
    Misconception(
        "tiled-full-scores", ("06_flash_attention",),
        N_("your tiled attention built the whole (T_q, T_k) score matrix (a softmax over all of it), which is what "
           "tiling exists to avoid."),
        N_("The point of the online softmax is that one (T_q, block_size) tile of scores is enough at a time: the "
           "memory grows like T * (d + block_size), not T^2, and on a GPU the tiles stay in fast on-chip memory."),
        N_("loop over the key blocks: scores of one block, fold them into the running max, sum and accumulator, "
           "then move on; never torch.softmax over all the keys.")),
    # ---- the third assignment, decoder (issue 31): named by applying each mistake to the reference
    # (reference/decoder/); the two cache-* entries by the keys the block hands to cache.append
    Misconception(
        "rmsnorm-eps-outside-root", ("01_rmsnorm",),
        N_("you added eps after the square root (x / (sqrt(mean(x**2)) + eps)) instead of inside it."),
        N_("RMSNorm divides by sqrt(mean(x**2) + eps): eps keeps the root away from 0 and belongs to the mean of "
           "the squares. Outside the root it is compared with the root mean square itself, so vectors whose "
           "mean square is small next to eps come out at another size, and weights trained with one "
           "convention do not fit the other."),
        N_("x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps).")),
    Misconception(
        "rmsnorm-half-precision", ("01_rmsnorm",),
        N_("your norm computed a float16 input in float16: the squares of values above 256 overflow (inf), and the "
           "row comes out as zeros."),
        N_("float16 stops at 65,504, so x**2 overflows for |x| > 256, and its 11 bits lose the small squares. "
           "Libraries compute the norm of half-precision inputs in float32 and cast the result back: the "
           "arithmetic is cheap, the range and digits are not."),
        N_("dtype = x.dtype; h = x.float() for float16 and bfloat16; normalise h; return the result .to(dtype).")),
    Misconception(
        "swiglu-gate-swapped", ("02_swiglu",),
        N_("your SwiGLU applied silu to up_proj(x) instead of gate_proj(x)."),
        N_("The two projections play different parts: gate_proj's output goes through the activation and gates "
           "up_proj's, element by element. Swapped, the formula looks the same but trained weights loaded by "
           "name (gate_proj, up_proj) compute something else."),
        N_("self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x)).")),
    Misconception(
        "swiglu-wrong-activation", ("02_swiglu",),
        N_("your SwiGLU used another activation than SiLU (ReLU, GELU or the sigmoid alone)."),
        N_("SwiGLU is the gated linear unit with the Swish activation, silu(a) = a * sigmoid(a); ReLU belongs to "
           "the original transformer's feed-forward network, GELU to GPT-2's, and the sigmoid alone to the "
           "first GLU."),
        N_("F.silu(self.gate_proj(x)) (or a * torch.sigmoid(a)).")),
    Misconception(
        "block-residual-around-norm", ("03_decoder_block",),
        N_("your residual adds the normalised input (h = norm(x) + attention(norm(x))) instead of the block's "
           "input x."),
        N_("In a pre-norm block the residual stream is never normalised: each sublayer reads a normalised copy "
           "and adds its result to the stream as it was. Adding to the norm replaces the stream by its "
           "normalised copy in every block, so what earlier blocks wrote loses its size."),
        N_("h = x + self.attention(self.attn_norm(x)); out = h + self.ffn(self.ffn_norm(h)).")),
    Misconception(
        "block-post-norm", ("03_decoder_block",),
        N_("your block normalises after the residual addition (post-norm: norm(x + attention(x))) instead of "
           "before each sublayer (pre-norm)."),
        N_("The original transformer normalised after the addition; Llama and most models since normalise the "
           "sublayer's input and leave the sum as it is, which trains deep stacks more stably. The weights of "
           "one arrangement do not fit the other."),
        N_("h = x + self.attention(self.attn_norm(x)); out = h + self.ffn(self.ffn_norm(h)).")),
    Misconception(
        "rope-on-values", ("03_decoder_block",),
        N_("your block applied RoPE to the values too; it turns queries and keys only."),
        N_("RoPE makes the score q . k depend on the distance between two positions. The values are what the "
           "weights average: turning them mixes each value's features by its position and changes the "
           "output, with nothing gained in the scores."),
        N_("q, k = rope(q, positions), rope(k, positions); leave v as v_proj gives it.")),
    Misconception(
        "rope-position-ignores-cache", ("03_decoder_block",),
        N_("your block turned the new tokens at positions 0, 1, ... at every call: with a cache they continue "
           "where the cache ends, at len(cache) + arange(T)."),
        N_("Every decoded token then gets the angle of position 0, so its query and key carry the wrong "
           "distance to every cached key: right for the prefill (the cache is empty), wrong from the first "
           "generated token on."),
        N_("past = len(cache) before appending; positions = past + torch.arange(T, device=x.device).")),
    Misconception(
        "block-causal-aligned-at-start", ("03_decoder_block",),
        N_("your causal mask is aligned at the start after a prefill: new query i sees keys j <= i instead of "
           "j <= T_cached + i."),
        N_("With T_cached positions already in the cache, the new tokens stand at positions T_cached, "
           "T_cached + 1, ...: the mask over (T_new, T_k) is the lower triangle shifted by T_cached, aligned at "
           "the end. Aligned at the start, a decoded token sees only the first keys of the prompt."),
        N_("allowed = torch.arange(T_k)[None, :] <= (T_k - T + torch.arange(T))[:, None].")),
    Misconception(
        "rope-keys-rotated-twice", ("03_decoder_block",),
        N_("your block turned the keys it read back from the cache by RoPE again, although they were stored "
           "already turned: cached keys are rotated twice."),
        N_("The cache holds keys after RoPE, each at its own position; turning k_all again at arange(T_k) "
           "doubles every key's angle, so the scores no longer depend on the distance between query and key."),
        N_("k = rope(k, positions); k, v = cache.append(k, v); then use k as it is.")),
    Misconception(
        "cache-all-query-heads", ("03_decoder_block",),
        N_("your block stores keys and values repeated to num_heads heads in the cache, instead of the "
           "num_kv_heads heads k_proj and v_proj give."),
        N_("Grouped-query attention exists to make the cache smaller: num_heads // num_kv_heads query heads "
           "share each key/value head. Repeating before storing gives the same numbers and gives that saving "
           "back: the cache is num_heads // num_kv_heads times larger."),
        N_("k, v = cache.append(k, v) with k, v (B, num_kv_heads, T, head_dim); repeat_interleave only the "
           "tensors the product uses.")),
    Misconception(
        "cache-keys-before-rope", ("03_decoder_block",),
        N_("your block stores the keys in the cache before RoPE, and turns every cached key again at each call."),
        N_("A key's angle depends only on its own position, so it can be turned once, when its token is new, "
           "and stored turned. Storing it unturned makes every decode step rotate the whole cache again: work "
           "that grows with the cached length, for the same numbers."),
        N_("k = rope(k, positions) first, then k, v = cache.append(k, v).")),
    # the decoder, steps 4-6 (issue 31): named by applying each mistake to the reference
    # (reference/decoder/model.py, generation.py, training.py)
    Misconception(
        "decoder-positions-restart", ("04_model",),
        N_("your model's positions start at 0 at every call: after a prefill, the new tokens are rotated as if they "
           "stood at the start of the text."),
        N_("RoPE rotates each query and key by its position in the sequence. A cached call holds the tokens after "
           "those already in the cache, so its positions are len(cache[0]) + arange(T); without a cache the two "
           "agree, which is why the mistake shows only when generating."),
        N_("positions = len(cache[0]) + torch.arange(T) when a cache is given (0 + arange(T) without one), passed "
           "to every block.")),
    Misconception(
        "decoder-padding-unmasked", ("04_model",),
        N_("your model did not give the attention_mask to its blocks: the real tokens attend the padding."),
        N_("Left padding puts filler tokens before a row's prompt; they are keys like any other unless the blocks "
           "mask them, and their embeddings then leak into every real token's attention."),
        N_("pass the attention_mask to every block as its key_mask: block(x, cache[i], positions, attention_mask).")),
    Misconception(
        "decoder-final-norm-missing", ("04_model",),
        N_("your model sends the last block's output to the head without the final norm."),
        N_("The blocks are pre-norm: each normalises its own inputs, and the residual stream they add to is never "
           "normalised. The final RMSNorm is what normalises it before the head; without it the logits scale with "
           "the stream's size."),
        N_("logits = self.lm_head(self.norm(x)) after the loop over the blocks.")),
    Misconception(
        "decoder-head-not-tied", ("04_model",),
        N_("with tie_embeddings=True your model's head has a matrix of its own (a copy, or a new one) instead of the "
           "embedding's."),
        N_("Tied embeddings mean one Parameter used twice: the embedding looks its rows up, the head multiplies by "
           "it. A copy starts equal and is then trained apart; a new nn.Linear is not even equal."),
        N_("self.lm_head.weight = self.embed.weight (the Parameter itself, no .clone(), no .data).")),
    Misconception(
        "sampling-no-temperature", ("05_generation",),
        N_("your sampling ignores the temperature: it draws from softmax(logits), not softmax(logits / temperature)."),
        N_("The temperature reshapes the distribution before the draw: below 1 it sharpens it towards the likeliest "
           "tokens, above 1 it flattens it. Only temperature 0 (greedy) skips the division."),
        N_("logits = logits / temperature before top-k, top-p and the softmax.")),
    Misconception(
        "top-p-wrong-side", ("05_generation",),
        N_("your top-p keeps the wrong side: the unlikely tail from the token that crosses top_p on, instead of the "
           "likeliest tokens up to it."),
        N_("Nucleus sampling keeps the smallest set of most likely tokens whose probability reaches top_p. Sorted "
           "from the likeliest, a token is dropped when the tokens ranked above it already hold top_p; flipping "
           "the comparison drops the nucleus and keeps the tail."),
        N_("drop where probs.cumsum(-1) - probs >= top_p (sorted in descending order), then scatter the decision "
           "back to vocabulary order.")),
    Misconception(
        "top-p-crossing-dropped", ("05_generation",),
        N_("your top-p drops the token that crosses top_p: the tokens kept hold less than top_p."),
        N_("Dropping where the cumulative probability exceeds top_p removes the very token that makes the set reach "
           "top_p (and, when the likeliest token alone exceeds it, everything). The contract keeps it: the set's "
           "probability reaches top_p."),
        N_("compare the probability of the tokens ranked above: drop where cumsum - probs >= top_p, so the first "
           "token is always kept.")),
    Misconception(
        "generate-padding-ignored", ("05_generation",),
        N_("your generate does not give the attention_mask to the model: left-padded rows attend their padding and "
           "count it in their positions."),
        N_("A batch of prompts of different lengths is padded on the left; only the mask tells the model which "
           "tokens are filler. It must be given at the prefill and at every step after, one True column longer "
           "each time (the new token is real)."),
        N_("mask = attention_mask (all True when None); model(step_input, cache, mask), then mask = torch.cat([mask, "
           "ones (B, 1)], dim=1) after each new token.")),
    Misconception(
        "generate-eos-not-kept", ("05_generation",),
        N_("after a row produced eos_id, your generate goes on writing tokens in it instead of eos_id."),
        N_("A row is finished once it has produced the stop token; the batch goes on for the other rows, and the "
           "finished row must keep eos_id in every later column so that its text ends where it stopped."),
        N_("keep a (B,) bool `done`; next = torch.where(done, eos_id, next); done |= next == eos_id; stop when "
           "done.all().")),
    Misconception(
        "generate-without-cache", ("05_generation",),
        N_("your generate runs the whole sequence through the model at every step instead of the new token with "
           "the cache: each token costs as much as the prompt and everything generated so far."),
        N_("After the prefill, the cache holds every earlier token's keys and values in every block: a step needs "
           "only the newest token. Re-running the sequence gives the same tokens at a cost that grows with its "
           "length, so a generation costs the square of it."),
        N_("prefill once with a new cache: logits = model(prompts, cache, mask); then feed next[:, None] alone, "
           "with the same cache, at every step.")),
    Misconception(
        "loss-not-shifted", ("06_training",),
        N_("your loss compares each position's logits with the token at the same position, not the next one."),
        N_("The logits at position t are the model's guess of token t + 1. Scored against token t, which the model "
           "has just read, the loss teaches it to copy its input."),
        N_("F.cross_entropy over logits[:, :-1] against tokens[:, 1:], both flattened.")),
    Misconception(
        "loss-shifted-wrong-way", ("06_training",),
        N_("your loss is shifted the wrong way: logits[:, 1:] against tokens[:, :-1] (each position scored on the "
           "token before it)."),
        N_("Position t predicts t + 1: its logits are the first of the pair and the targets start one later. The "
           "other way round, the model is asked to guess a token it has already read."),
        N_("logits[:, :-1] (drop the last position) against tokens[:, 1:] (drop the first token).")),
    Misconception(
        "loss-padding-counted", ("06_training",),
        N_("your loss counts the targets that are padding."),
        N_("Padding tokens are filler: predicting them is no part of the task, and counting them changes the mean "
           "by how much padding each batch happens to hold."),
        N_("targets = tokens[:, 1:].masked_fill(~attention_mask[:, 1:], -100) and F.cross_entropy(..., "
           "ignore_index=-100) (or a mean over the real targets only).")),
    Misconception(
        "train-step-grad-not-zeroed", ("06_training",),
        N_("your train_step never zeroes the gradients: each backward adds to what the earlier steps left."),
        N_("PyTorch accumulates gradients in .grad on every backward. Without optimizer.zero_grad() (or "
           "model.zero_grad()) before it, step n moves the parameters by the sum of n steps' gradients."),
        N_("optimizer.zero_grad() first, then the loss, loss.backward(), optimizer.step().")),
    Misconception(
        "train-step-loss-after", ("06_training",),
        N_("your train_step returns the loss computed after the optimizer's step, not the loss it stepped on."),
        N_("The loss a training step reports is the one its gradients came from: the batch's loss before the "
           "update. Computing it again afterwards costs a second forward and reports a number no step used."),
        N_("loss = lm_loss(model(tokens), tokens); loss.backward(); optimizer.step(); return loss.item().")),
)}


def describe(ids, framework=None):
    """Student-facing text for the recognised mistakes, one paragraph each, with the hints of
    `framework` (default: the step being graded, FRAMEWORK): a message, rendered where it is written."""
    return join("\n", [CATALOGUE[i].text(framework) for i in ids])
