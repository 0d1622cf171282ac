"""decoder step 6 (lm_loss, train_step): the reference's loss and training steps, and its known mistakes
applied to it (torch float64)."""
import functools

import numpy as np
import torch
import torch.nn.functional as F

from solutions.decoder import step06_training as ref

LOSS_MISTAKES = ("loss-not-shifted", "loss-shifted-wrong-way", "loss-padding-counted")
STEP_MISTAKES = ("train-step-grad-not-zeroed", "train-step-loss-after")


def loss(logits, tokens, mask=None, mistake=None):
    """The reference's lm_loss (a float), or with `mistake`: every position against its own token, the
    shift the wrong way round (logits[:, 1:] against tokens[:, :-1]), or the padding targets counted."""
    logits, tokens = torch.from_numpy(np.asarray(logits)), torch.from_numpy(np.asarray(tokens))
    mask = None if mask is None else torch.from_numpy(np.asarray(mask))
    if mistake is None:
        return float(ref.lm_loss(logits, tokens, mask))
    if mistake == "loss-padding-counted":
        return float(ref.lm_loss(logits, tokens))
    if mistake == "loss-not-shifted":
        lg, tg, m = logits, tokens, mask
    else:
        lg, tg, m = logits[:, 1:], tokens[:, :-1], None if mask is None else mask[:, :-1]
    if m is not None:
        tg = tg.masked_fill(~m.bool(), -100)
    return float(F.cross_entropy(lg.reshape(-1, lg.shape[-1]), tg.reshape(-1), ignore_index=-100))


def build(params, config, dtype=torch.float64):
    model = ref.DecoderLM(**config).to(dtype)
    own = dict(model.named_parameters())
    with torch.no_grad():
        for name, value in params.items():
            own[name].copy_(torch.from_numpy(np.asarray(value)))
    return model.eval()


def train(params, config, batches, lr, mistake=None):
    """([the loss train_step returned for each batch], {name: parameter after}) of the reference's
    train_step with SGD(lr), or with `mistake`: the gradients never zeroed (they add up across steps),
    or the loss returned computed after the step."""
    model = build(params, config)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for batch in batches:
        tokens = torch.from_numpy(np.asarray(batch))
        if mistake is None:
            losses.append(ref.train_step(model, optimizer, tokens))
            continue
        if mistake != "train-step-grad-not-zeroed":
            optimizer.zero_grad()
        value = ref.lm_loss(model(tokens), tokens)
        value.backward()
        optimizer.step()
        if mistake == "train-step-loss-after":
            with torch.no_grad():
                value = ref.lm_loss(model(tokens), tokens)
        losses.append(value.item())
    return losses, {n: p.detach().numpy().copy() for n, p in model.named_parameters()}


# ------------------------------------------------------------------ the audit's equivalence probes
def _loss(module, logits, tokens, mask=None):
    """The module's lm_loss (a scalar tensor; its gradient reaches the logits in float64)."""
    return module.lm_loss(logits, tokens) if mask is None else module.lm_loss(logits, tokens, mask)


def _train(module, *flat, names=(), lr=0.1, steps=3):
    """The module's train_step with SGD(lr) on its DecoderLM holding these weights, `steps` batches (flat's
    last item, (steps, B, T)): the losses it returned (a tensor), then every parameter after, by name."""
    from autograder.reference.decoder import model as lm
    *values, batches = flat
    model, _call = lm.model_of(module, dict(zip(names, values)))
    own = dict(model.named_parameters())
    with torch.no_grad():
        for name, value in zip(names, values):
            own[name].copy_(value.detach())
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    losses = [module.train_step(model, optimizer, batch) for batch in batches]
    return (torch.tensor(losses, dtype=torch.float64),) + tuple(own[n].detach().clone() for n in names)


def probes(rng, dtype, scale):
    """[(callable, args, kwargs)] for the mutation audit's equivalence check: lm_loss without and with a mask
    (left padding, a row all real), over logits of order 1 and `scale`; train_step three times on a 2-layer
    model with SGD (the losses it returns and the parameters after)."""
    from autograder.reference.decoder import model as lm
    grad = dtype == "float64"
    V = lm.CONFIG["vocab_size"]
    calls = []
    mask = torch.tensor([[False, False, True, True, True, True], [True] * 6, [False, True, True, True, True, True]])
    for masked in (False, True):
        logits = torch.tensor((rng.standard_normal((3, 6, V)) * scale).astype(dtype), requires_grad=grad)
        tokens = torch.tensor(rng.integers(0, V, (3, 6)))
        calls.append((_loss, [logits, tokens] + ([mask] if masked else []), {}))
    params = lm.weights(rng, dtype, min(scale, 2.0))
    batches = torch.tensor(rng.integers(0, V, (3, 2, 6)))
    calls.append((functools.partial(_train, names=tuple(params)), list(params.values()) + [batches], {}))
    return calls
