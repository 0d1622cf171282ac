"""Hidden suite, decoder step 5: sample_next and generate (torch). 10 points.

sample_next is called in the student's child with a torch.Generator seeded by the grader (protocol
model_calls_request: the generator lives in the child); its draws must be the reference's, exactly:
the contract fixes the order (temperature, top-k, top-p) and the draw (one torch.multinomial per
row). generate runs on the DecoderLM of the step's notebook (its given cell), holding the grader's
weights: greedy and sampled generations, left-padded batches and a stop token, compared token for
token with the reference's. The cost of a generated token is counted (multiply-adds): with the cache
it does not grow with the length generated.
"""
import numpy as np
import torch

from autograder.checks import complexity
from autograder.checks.expect import check, expect_array, expect_seq, fail, inputs_changed, named_on_evidence
from autograder.checks.inputs import randn, rng, rounded
from autograder.checks.memo import Remembering, remembered
from autograder.child import meters
from autograder.i18n import _
from autograder.reference.decoder import generation as _known
from autograder.sandbox.protocol import Seq, ref
from solutions.decoder import step05_generation as reference

known = Remembering(_known)     # the references' answers, remembered for the next submission

STEP = "05_generation"
MODEL = "DecoderLM"
CONFIG = dict(vocab_size=29, dim=16, num_layers=2, num_heads=4, num_kv_heads=2, hidden_dim=24)
V = CONFIG["vocab_size"]


# ------------------------------------------------------------------ inputs
def _params(key):
    out = {}
    for name, p in reference.DecoderLM(**CONFIG).named_parameters():
        shape = tuple(p.shape)
        scale = 0.1 if len(shape) == 1 else 1.0 if name == "embed.weight" else shape[-1] ** -0.5
        values = randn((STEP, key, name), shape, scale) + (len(shape) == 1)
        out[name] = rounded(values, "float32")[1]
    return out


def _logits(key, rows=256, vocab=12, scale=2.0):
    return randn((STEP, key, "logits"), (rows, vocab), scale)


def _prompts(key, b=2, t=5, pads=None):
    tokens = rng(STEP, key, "prompts", b, t).integers(0, V, (b, t)).astype(np.int64)
    if pads is None:
        return tokens, None
    mask = np.ones((b, t), dtype=bool)
    for i, p in enumerate(pads):
        mask[i, :p] = False
    return np.where(mask, tokens, 0), mask


# ------------------------------------------------------------------ comparing tokens
def _expect_tokens(got, expected, what, variants=None):
    """The student's tokens (a Returned) equal the reference's, exactly; a variant that gives them, on most
    of the step's inputs, is named."""
    got = expect_array(got, what, "torch")
    if got.dtype != "int64":
        fail(_("{what} has dtype {got}; token ids are int64.", what=what, got=got.dtype))
    candidates = {mid: (np.asarray(v),) for mid, v in (variants or {}).items()}
    found = named_on_evidence((got.array,), candidates, (0.0, 0.0))
    if got.shape == expected.shape and np.array_equal(got.array, expected):
        return
    if got.shape != expected.shape:
        fail(_("{what} has shape {got}; expected {shape}.", what=what, got=got.shape, shape=expected.shape), found)
    wrong = np.argwhere(got.array != expected)
    index = tuple(int(i) for i in wrong[0])
    fail(_("{what}: {bad} of {n} tokens differ from the expected ones; the first at index {index}: expected "
           "{expected}, got {got}.", what=what, bad=len(wrong), n=expected.size, index=index,
           expected=int(expected[index]), got=int(got.array[index])), found)


# ------------------------------------------------------------------ sample_next
def _sample(student, logits, seed=0, **options):
    """(next tokens, the 4 numbers the generator drew afterwards) of the student's sample_next."""
    shown = ", ".join(f"{k}={v}" for k, v in options.items())
    what = f"sample_next(logits of shape {logits.shape}" + (f", {shown}" if shown else "") + ", generator)"
    request = student.model_calls_request(None, {}, {}, [("sample_next", [logits],
                                                          dict(options, generator=ref("generator")), False)],
                                          seed=seed)
    value, _shapes = student.model_calls(request, what)
    outs, _lengths, _read, drawn = expect_seq(value, 4, what, ("outs", "lengths", "params", "drawn"))
    items = outs.items if isinstance(outs, Seq) else []
    if len(items) != 1:
        fail(_("{what} returned nothing the grader could read.", what=what))
    return items[0], drawn, what


def _expect_sample(student, key, seed, **options):
    logits = _logits(key)
    got, _drawn, what = _sample(student, logits, seed, **options)
    expected, _after = known.sample(logits, seed=seed, **options)
    variants = known.sampling_mistakes(logits, options.get("temperature", 0.0), options.get("top_k"),
                                       options.get("top_p"), seed)
    _expect_tokens(got, expected, what, variants)


@check("5.1", points=1, kind="numbers")
def test_greedy(student):
    """sample_next with temperature 0 is the argmax of each row, and draws no random number"""
    logits = _logits("5.1")
    got, drawn, what = _sample(student, logits, seed=3)
    expected, after = known.sample(logits, seed=3)
    _expect_tokens(got, expected, what)
    drawn = expect_array(drawn, what, "torch")
    if not np.array_equal(drawn.array, after):
        fail(_("{what}: with temperature 0 the generator was used (what it draws next is not what an unused "
               "generator draws). Greedy decoding takes the argmax and draws nothing.", what=what))


@check("5.2", points=1.25, kind="numbers")
def test_temperature(student):
    """sample_next with a temperature draws from softmax(logits / temperature) with the generator given, one torch.multinomial draw per row"""
    _expect_sample(student, "5.2", 1, temperature=0.7)
    _expect_sample(student, "5.2 b", 2, temperature=1.6)


@check("5.3", points=1, kind="numbers")
def test_top_k(student):
    """top_k keeps the k largest logits (after the temperature), the rest never drawn"""
    _expect_sample(student, "5.3", 4, temperature=1.3, top_k=4)


@check("5.4", points=1.5, kind="numbers")
def test_top_p(student):
    """top_p keeps the most likely tokens until their probability reaches top_p (the token that crosses it kept), alone and after top_k"""
    _expect_sample(student, "5.4", 5, temperature=0.9, top_p=0.7)
    _expect_sample(student, "5.4 b", 6, temperature=1.2, top_p=0.5)
    _expect_sample(student, "5.4 c", 7, temperature=1.0, top_k=6, top_p=0.8)


# ------------------------------------------------------------------ generate
def _generate(student, key, prompts, mask=None, seed=None, **options):
    params = _params(key)
    shown = ", ".join(f"{k}={v}" for k, v in options.items())
    what = (f"generate(model, prompts of shape {prompts.shape}" + (", attention_mask" if mask is not None else "")
            + (f", {shown}" if shown else "") + (", generator" if seed is not None else "") + ")")
    kwargs = dict(options)
    if mask is not None:
        kwargs["attention_mask"] = mask
    if seed is not None:
        kwargs["generator"] = ref("generator")
    request = student.model_calls_request(MODEL, CONFIG, params, [("generate", [ref("model"), prompts], kwargs,
                                                                    False)], seed=seed)
    value, _shapes = student.model_calls(request, what)
    if value is None:
        fail(_("{what}: the grader could not load its weights into the notebook's DecoderLM (leave its given cell "
               "as it is).", what=what))
    outs, _lengths, _read, _drawn = expect_seq(value, 4, what, ("outs", "lengths", "params", "drawn"))
    items = outs.items if isinstance(outs, Seq) else []
    if len(items) != 1:
        fail(_("{what} returned nothing the grader could read.", what=what))
    return items[0], params, what


def _expect_generate(student, key, prompts, mask=None, seed=None, mistakes=(), **options):
    got, params, what = _generate(student, key, prompts, mask, seed, **options)
    expected = known.generate(params, CONFIG, prompts, mask, seed, **options)
    variants = {}
    for mid in mistakes:
        v = known.generate(params, CONFIG, prompts, mask, seed, mid, **options)
        if v.shape != expected.shape or not np.array_equal(v, expected):
            variants[mid] = v
    _expect_tokens(got, expected, what, variants)


@check("5.5", points=1, kind="numbers")
def test_generate_greedy(student):
    """Greedy generate: a prefill, then one token a call with the cache, max_new_tokens tokens appended"""
    _expect_generate(student, "5.5", _prompts("5.5")[0], max_new_tokens=6)
    _expect_generate(student, "5.5 b", _prompts("5.5 b", 1, 3)[0], max_new_tokens=9)


@check("5.6", points=1.5, kind="property")
def test_generate_padded(student):
    """A left-padded batch with its attention_mask: each row generates what it generates alone (the mask given and grown by one column a step)"""
    prompts, mask = _prompts("5.6", 3, 7, pads=(0, 2, 4))
    _expect_generate(student, "5.6", prompts, mask, mistakes=known.GENERATE_MISTAKES, max_new_tokens=6)


@check("5.7", points=0.5, kind="property")
def test_generate_eos(student):
    """With eos_id, a row that produced it keeps eos_id, and generation stops once every row has"""
    prompts = _prompts("5.7", 3, 4)[0]
    free = known.generate(_params("5.7"), CONFIG, prompts, max_new_tokens=10)
    for eos in (int(free[0, 6]), int(free[1, 5])):
        _expect_generate(student, "5.7", prompts, mistakes=known.GENERATE_MISTAKES, max_new_tokens=10, eos_id=eos)


@check("5.8", points=0.5, kind="numbers")
def test_generate_sampled(student):
    """Sampled generate with a seeded generator draws the reference's tokens (temperature, top-k, top-p), left padding included"""
    prompts, mask = _prompts("5.8", 2, 5, pads=(0, 3))
    _expect_generate(student, "5.8", prompts, mask, seed=11, max_new_tokens=8, temperature=0.8, top_k=10, top_p=0.9)


# ------------------------------------------------------------------ counted cost
LENGTHS = (4, 12)             # tokens generated after a prompt of PROMPT: the cost of the 8 between


PROMPT = 8


def _generate_flops(student, what, n):
    params, prompts = _params("5.9"), _prompts("5.9", 1, PROMPT)[0]
    request = student.model_calls_request(MODEL, CONFIG, params, [("generate", [ref("model"), prompts],
                                                                    {"max_new_tokens": n}, False)])
    m = student.measure(request, what)
    complexity.expect_flops(m, 0, what)
    return m.flops


@remembered          # a count of the reference's, the same for every submission
def _reference_generate_flops(n):
    import torch
    model = known.build(_params("5.9"), CONFIG)
    prompts = torch.from_numpy(_prompts("5.9", 1, PROMPT)[0])
    return meters.flops_of(reference.generate, model, prompts, max_new_tokens=n)


@check("5.9", points=1, kind="complexity")
def test_generate_cost(student):
    """A generated token costs what the reference's costs (multiply-adds counted): the new token alone through the model with the cache, not the whole sequence again"""
    what = _("generate(model, a prompt of {n} tokens, max_new_tokens=...)", n=PROMPT)
    got = [_generate_flops(student, what, n) for n in LENGTHS]
    expected = [_reference_generate_flops(n) for n in LENGTHS]
    per_token, reference_per_token = (got[1] - got[0]) // 8, (expected[1] - expected[0]) // 8
    if per_token > complexity.FLOP_FACTOR * reference_per_token:
        fail(_("{what}: each of the tokens {first} to {last} cost {flops} multiply-adds on average; the reference's "
               "cost {reference}.", what=what, first=LENGTHS[0] + 1, last=LENGTHS[1], flops=f"{per_token:,}",
               reference=f"{reference_per_token:,}"), ["generate-without-cache"])


# ------------------------------------------------------------------ float32
@check("5.10", points=0.5, kind="numbers")
def test_float32(student):
    """In float32: sample_next on float32 logits and generate on a float32 model draw the reference's tokens, and sample_next leaves the caller's logits as they were"""
    logits = _logits("5.10").astype(np.float32)
    options = dict(temperature=0.9, top_k=8, top_p=0.8)
    got, _drawn, what = _sample(student, logits, 9, **options)
    _expect_tokens(got, known.sample(logits, seed=9, **options)[0], _("{what} in {dtype}", what=what, dtype="float32"))
    argmax = student.call("sample_next", logits, 0.7, 1)        # top_k=1: the argmax whatever is drawn
    what = f"sample_next(logits of shape {logits.shape}, temperature=0.7, top_k=1)"
    if student.mutated:
        fail(inputs_changed(what, student.mutated, "torch"))
    _expect_tokens(argmax, logits.argmax(-1), what)
    prompts, mask = _prompts("5.10", 2, 5, pads=(0, 2))
    params = _params("5.10")
    what = f"generate(model in float32, prompts of shape {prompts.shape}, attention_mask, max_new_tokens=6)"
    request = student.model_calls_request(MODEL, CONFIG, params, [("generate", [ref("model"), prompts],
                                                                    dict(attention_mask=mask, max_new_tokens=6), False)],
                                          "float32")
    value, _shapes = student.model_calls(request, what)
    if value is None:
        fail(_("{what}: the grader could not load its weights into the notebook's DecoderLM (leave its given cell "
               "as it is).", what=what))
    outs, _lengths, _read, _d = expect_seq(value, 4, what, ("outs", "lengths", "params", "drawn"))
    items = outs.items if isinstance(outs, Seq) else []
    if len(items) != 1:
        fail(_("{what} returned nothing the grader could read.", what=what))
    _expect_tokens(items[0], known.generate(params, CONFIG, prompts, mask, max_new_tokens=6, dtype=torch.float32),
                   what)


@check("5.11", points=0.25, kind="numbers")
def test_large_logits(student):
    """sample_next on logits in the thousands (3000 plus a spread of a few units): the reference's tokens, with a temperature and with top_p (softmax's exp taken after subtracting the max)"""
    logits = 3000.0 + _logits("5.11")
    for seed, options in ((12, dict(temperature=1.0)), (13, dict(temperature=0.8, top_p=0.9))):
        got, _drawn, what = _sample(student, logits, seed, **options)
        _expect_tokens(got, known.sample(logits, seed=seed, **options)[0], what)
