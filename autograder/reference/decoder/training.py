"""decoder step 6 (lm_loss, train_step): the reference's loss and training steps, and its known mistakes
applied to it (torch float64)."""
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
