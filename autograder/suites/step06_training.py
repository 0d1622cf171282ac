"""Hidden suite, decoder step 6: lm_loss and train_step (torch). 10 points.

lm_loss is called on logits and tokens the grader draws (float64 and float32, with and without an
attention_mask); train_step runs in the student's child three times on the notebook's DecoderLM
holding the grader's weights, with torch.optim.SGD(lr=0.1) made there (protocol model_calls_request):
the losses it returns and the parameters after the three steps must be the reference's. Its memory
is bounded: at batches of 32 x 32 tokens, the peak of the tensors alive during a step stays within a
small factor of the reference's own (the graph and the gradients of one step, nothing kept longer).
"""
import numpy as np
import torch

from autograder.checks import complexity
from autograder.checks.expect import check, expect_array, expect_close, expect_dtype, expect_seq, expect_shape, fail
from autograder.checks.inputs import randn, rng, rounded
from autograder.checks.memo import Remembering
from autograder.child import meters
from autograder.i18n import _, join
from autograder.reference.decoder import training as _known
from autograder.sandbox.protocol import Returned, Seq, ref
from solutions.decoder import step06_training as reference

known = Remembering(_known)     # the references' answers, remembered for the next submission

STEP = "06_training"
MODEL = "DecoderLM"
CONFIG = dict(vocab_size=29, dim=16, num_layers=2, num_heads=4, num_kv_heads=2, hidden_dim=24)
LR = 0.1


# ------------------------------------------------------------------ lm_loss
def _loss_case(key, b=3, t=7, vocab=11, padded=False):
    logits = randn((STEP, key, "logits"), (b, t, vocab), 1.5)
    tokens = rng(STEP, key, "tokens").integers(0, vocab, (b, t)).astype(np.int64)
    mask = None
    if padded:
        mask = np.ones((b, t), dtype=bool)
        for i in range(b):
            mask[i, :i * 2] = False
    return logits, tokens, mask


def _expect_loss(student, request, key, padded=False, dtype="float64"):
    logits, tokens, mask = _loss_case(key, padded=padded)
    low, logits64 = rounded(logits, dtype) if dtype != "float64" else (logits, logits)
    what = "lm_loss(logits, tokens" + (", attention_mask" if padded else "") + ")"
    got = student.call("lm_loss", low, tokens, *([mask] if padded else []))
    got = expect_array(got, what, "torch")
    expect_shape(got, (), what)
    expect_dtype(request, got, dtype, what, "torch")
    expected = np.array(known.loss(logits64, tokens, mask))
    variants = {mid: np.array(known.loss(logits64, tokens, mask, mid)) for mid in known.LOSS_MISTAKES
                if mask is not None or mid != "loss-padding-counted"}
    expect_close(got, expected, what, dtype, "composed", variants if dtype == "float64" else None)


@check("6.1", points=2.5, kind="numbers")
def test_loss(student, request):
    """lm_loss: the mean cross-entropy of logits[:, :-1] against the next tokens, tokens[:, 1:], float64"""
    _expect_loss(student, request, "6.1")
    _expect_loss(student, request, "6.1 b")


@check("6.2", points=2, kind="numbers")
def test_loss_padding(student, request):
    """lm_loss with an attention_mask: targets that are padding are not counted in the mean"""
    _expect_loss(student, request, "6.2", padded=True)


@check("6.3", points=1, kind="numbers")
def test_loss_float32(student, request):
    """lm_loss in float32: a float32 scalar, right to float32's precision"""
    _expect_loss(student, request, "6.3", dtype="float32")
    _expect_loss(student, request, "6.3 b", padded=True, dtype="float32")


# ------------------------------------------------------------------ train_step
def _params(key, config=CONFIG):
    out = {}
    for name, p in reference.DecoderLM(**config).named_parameters():
        shape = tuple(p.shape)
        scale = 0.1 if len(shape) == 1 else 1.0 if name == "embed.weight" else shape[-1] ** -0.5
        out[name] = rounded(randn((STEP, key, name), shape, scale) + (len(shape) == 1), "float32")[1]
    return out


def _batches(key, n=3, b=4, t=9, vocab=CONFIG["vocab_size"]):
    g = rng(STEP, key, "batches")
    return [g.integers(0, vocab, (b, t)).astype(np.int64) for _ in range(n)]


def _train_calls(batches):
    return [("train_step", [ref("model"), ref("optimizer"), batch], {}, False) for batch in batches]


@check("6.4", points=3, kind="numbers")
def test_train_step(student):
    """train_step, three times with SGD(lr=0.1): it returns the loss before each step as a float (to float64's precision), and the parameters after the three steps are the reference's (gradients zeroed, one backward, one step)"""
    params, batches = _params("6.4"), _batches("6.4")
    names = sorted(params)
    what = _("train_step(model, SGD(lr={lr}), tokens of shape {shape}), three times", lr=LR, shape=batches[0].shape)
    request = student.model_calls_request(MODEL, CONFIG, params, _train_calls(batches), lr=LR, grad=True,
                                          read=names)
    value, _shapes = student.model_calls(request, what)
    if value is None:
        fail(_("{what}: the grader could not load its weights into the notebook's DecoderLM (leave its given cell "
               "as it is).", what=what))
    outs, _lengths, read, _drawn = expect_seq(value, 4, what, ("outs", "lengths", "params", "drawn"))
    losses = outs.items if isinstance(outs, Seq) else []
    if len(losses) != len(batches) or not all(type(v) is float for v in losses):
        shown = join(", ", [type(v).__name__ for v in losses])
        fail(_("{what} returned {got}: train_step returns the loss as a Python float (loss.item()).", what=what,
               got=shown or _("nothing")))
    after = read.items if isinstance(read, Seq) else []
    if len(after) != len(names) or not all(isinstance(a, Returned) for a in after):
        fail(_("{what}: the grader could not read the model's parameters after the steps.", what=what))
    got = np.concatenate([np.array(losses)] + [a.array.astype(np.float64).ravel() for a in after])

    def flat(result):
        losses_, params_ = result
        return np.concatenate([np.array(losses_)] + [params_[n].ravel() for n in names])
    expected = flat(known.train(params, CONFIG, batches, LR))
    variants = {mid: flat(known.train(params, CONFIG, batches, LR, mid)) for mid in known.STEP_MISTAKES}
    expect_close(Returned(got, "tensor", "torch.Tensor", "float64"), expected,
                 _("{what}: the three losses, then every parameter after the steps", what=what), "float64",
                 "composed", variants)
    # The losses of a float64 model keep float64's digits. The model is the notebook's given one, so any
    # way of writing the loss agrees with the reference to about 1e-14; a loss rounded to float32 on the
    # way out (`.float()` before `.item()`) is off by about 1e-8, inside the "composed" band above.
    want = expected[:len(losses)]
    worst = float(np.max(np.abs(np.array(losses) - want) / np.abs(want)))
    if worst > LOSS_RTOL:
        fail(_("{what}: the losses agree with the reference's only to {digits} digits (relative difference "
               "{worst}); a float64 model's loss keeps float64's precision. Is the loss cast to float32 "
               "(.float()) before .item()?", what=what, digits=f"{-np.log10(worst):.0f}", worst=f"{worst:.1e}"))


# a float64 loss, relative: any order of the sums stays far below, float32's rounding (6e-8) far above
LOSS_RTOL = 1e-10


# ------------------------------------------------------------------ memory
MEMORY = dict(CONFIG, vocab_size=64)
MEMORY_FACTOR = 3


def _reference_peak(fn, *args):
    """The peak bytes of the tensors alive while trusted code runs, with gradients on, counted by the
    child's own dispatch mode (as meters.flops_of counts multiply-adds)."""
    meter = meters.Meter(())
    meter.owns_hooks = False
    meter._watch = meters.Forbidden(())
    mode = meters._torch_modes(meter, torch)[-1]
    try:
        with torch.enable_grad(), mode:
            fn(*args)
    finally:
        meter._tracked.clear()
    return meter.tensor_peak


@check("6.5", points=1, kind="complexity")
def test_memory(student):
    """train_step's memory is bounded: on batches of 32 x 32 tokens its peak stays within 3 times the reference's (one step's graph and gradients)"""
    params = _params("6.5", MEMORY)
    tokens = _batches("6.5", 1, 32, 32, MEMORY["vocab_size"])[0]
    what = _("train_step(model, SGD(lr={lr}), tokens of shape {shape})", lr=LR, shape=tokens.shape)
    request = student.model_calls_request(MODEL, MEMORY, params, _train_calls([tokens]), lr=LR, grad=True)
    m = student.measure(request, what)
    model = known.build(params, MEMORY)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    peak = _reference_peak(reference.train_step, model, optimizer, torch.from_numpy(tokens))
    if not m.ran or m.peak_bytes > MEMORY_FACTOR * peak + complexity.SLACK:
        fail(_("{what} held {got} bytes of tensors at its peak; the reference's step holds {reference}, and up to "
               "{factor} times that is allowed. Is a (B, T, vocab_size) tensor built several times (a one-hot of "
               "the targets, probabilities beside log-probabilities), or are graphs of earlier steps kept alive?",
               what=what, got=f"{m.peak_bytes:,}", reference=f"{peak:,}", factor=MEMORY_FACTOR))


# ------------------------------------------------------------------ float32
@check("6.6", points=0.5, kind="numbers")
def test_train_step_float32(student):
    """train_step on a float32 model, three times with SGD(lr=0.1): the losses it returns and the parameters after are the reference's, to float32's precision"""
    params, batches = _params("6.6"), _batches("6.6")
    names = sorted(params)
    what = _("{what} in {dtype}", what=_("train_step(model, SGD(lr={lr}), tokens of shape {shape}), three times",
                                         lr=LR, shape=batches[0].shape), dtype="float32")
    request = student.model_calls_request(MODEL, CONFIG, params, _train_calls(batches), "float32", lr=LR, grad=True,
                                          read=names)
    value, _shapes = student.model_calls(request, what)
    if value is None:
        fail(_("{what}: the grader could not load its weights into the notebook's DecoderLM (leave its given cell "
               "as it is).", what=what))
    outs, _lengths, read, _drawn = expect_seq(value, 4, what, ("outs", "lengths", "params", "drawn"))
    losses = outs.items if isinstance(outs, Seq) else []
    after = read.items if isinstance(read, Seq) else []
    if (len(losses) != len(batches) or not all(type(v) is float for v in losses) or len(after) != len(names)
            or not all(isinstance(a, Returned) for a in after)):
        fail(_("{what}: the grader could not read the model's parameters after the steps.", what=what))
    got = np.concatenate([np.array(losses)] + [a.array.astype(np.float64).ravel() for a in after])
    want_losses, want_params = known.train(params, CONFIG, batches, LR)
    expected = np.concatenate([np.array(want_losses)] + [want_params[n].ravel() for n in names])
    expect_close(Returned(got, "tensor", "torch.Tensor", "float32"), expected,
                 _("{what}: the three losses, then every parameter after the steps", what=what), "float32", "composed")
