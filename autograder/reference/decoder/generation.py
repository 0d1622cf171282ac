"""decoder step 5 (sample_next, generate): the reference's draws and generations, and its known mistakes
applied to it (torch float64)."""
import functools

import numpy as np
import torch

from solutions.decoder import step05_generation as ref

SAMPLING_MISTAKES = ("sampling-no-temperature", "top-p-wrong-side", "top-p-crossing-dropped")
GENERATE_MISTAKES = ("generate-padding-ignored", "generate-eos-not-kept")


def sample(logits, temperature=0.0, top_k=None, top_p=None, seed=None, mistake=None):
    """(next tokens, 4 numbers the generator draws afterwards) of the reference's sample_next, or with
    `mistake`: the temperature ignored, top-p keeping the wrong side (the tail from the crossing token
    on: the comparison flipped), or dropping the token that crosses top_p (the first token always kept)."""
    logits = torch.from_numpy(np.asarray(logits))
    g = None if seed is None else torch.Generator().manual_seed(seed)
    if mistake is None:
        got = ref.sample_next(logits, temperature, top_k, top_p, g)
    else:
        scaled = logits if mistake == "sampling-no-temperature" else logits / temperature
        if top_k is not None:
            kth = torch.topk(scaled, min(top_k, scaled.shape[-1]), dim=-1).values[..., -1:]
            scaled = scaled.masked_fill(scaled < kth, float("-inf"))
        if top_p is not None:
            ranked, order = scaled.sort(dim=-1, descending=True)
            probs = torch.softmax(ranked, dim=-1)
            cum = probs.cumsum(-1)
            if mistake == "top-p-wrong-side":
                drop = cum < top_p
            elif mistake == "top-p-crossing-dropped":
                drop = cum > top_p
                drop[..., 0] = False
            else:
                drop = cum - probs >= top_p
            scaled = scaled.masked_fill(drop.scatter(-1, order, drop), float("-inf"))
        got = torch.multinomial(torch.softmax(scaled, dim=-1), 1, generator=g).squeeze(-1)
    drawn = None if g is None else torch.randint(0, 1 << 30, (4,), generator=g)
    return got.numpy(), None if drawn is None else drawn.numpy()


def sampling_mistakes(logits, temperature, top_k=None, top_p=None, seed=0):
    """{id: next tokens} of the sampling mistakes that draw other tokens than the reference here."""
    right = sample(logits, temperature, top_k, top_p, seed)[0]
    out = {}
    for mid in SAMPLING_MISTAKES:
        if mid.startswith("top-p") and top_p is None:
            continue
        got = sample(logits, temperature, top_k, top_p, seed, mid)[0]
        if not np.array_equal(got, right):
            out[mid] = got
    return out


def build(params, config, dtype=torch.float64):
    model = ref.DecoderLM(**config).to(dtype)
    own = dict(model.named_parameters())
    with torch.no_grad():
        for name, value in params.items():
            own[name].copy_(torch.from_numpy(np.asarray(value)))
    return model.eval()


def generate(params, config, prompts, mask=None, seed=None, mistake=None, dtype=torch.float64, **options):
    """The reference's generate on the model holding `params` (numpy int64), or with `mistake`: the
    attention_mask not given to the model, or a finished row not kept at eos_id."""
    model = build(params, config, dtype)
    prompts = torch.from_numpy(np.asarray(prompts))
    mask = None if mask is None else torch.from_numpy(np.asarray(mask))
    g = None if seed is None else torch.Generator().manual_seed(seed)
    if mistake == "generate-padding-ignored":
        return ref.generate(model, prompts, None, generator=g, **options).numpy()
    if mistake == "generate-eos-not-kept" and options.get("eos_id") is not None:      # without eos_id: the fix's
        eos = options.pop("eos_id")
        n = options.pop("max_new_tokens", 16)
        full = ref.generate(model, prompts, mask, max_new_tokens=n, generator=g, **options)
        done = (full[:, prompts.shape[1]:] == eos).any(-1)
        # a row's tokens after its eos_id go on; generation stops when every row has produced one
        stop = n
        for t in range(n):
            if bool((full[:, prompts.shape[1]:prompts.shape[1] + t + 1] == eos).any(-1).all()):
                stop = t + 1
                break
        del done
        return full[:, :prompts.shape[1] + stop].numpy()
    return ref.generate(model, prompts, mask, generator=g, **options).numpy()


# ------------------------------------------------------------------ the audit's equivalence probes
def _sample(module, logits, seed=None, **options):
    """The module's sample_next on logits with a generator seeded `seed` (None: none): the tokens, then 4
    numbers the generator draws afterwards (how many numbers sample_next consumed shows there)."""
    g = None if seed is None else torch.Generator().manual_seed(seed)
    got = module.sample_next(logits, generator=g, **options)
    return (got,) if g is None else (got, torch.randint(0, 1 << 30, (4,), generator=g))


def _generate(module, *flat, names=(), seed=None, masked=False, **options):
    """The module's generate on its DecoderLM holding these weights (flat: weights, prompts[, mask])."""
    from autograder.reference.decoder import model as lm
    if masked:
        *values, prompts, mask = flat
    else:
        (*values, prompts), mask = flat, None
    model, _call = lm.model_of(module, dict(zip(names, values)))
    with torch.no_grad():
        own = dict(model.named_parameters())
        for name, value in zip(names, values):
            own[name].copy_(value)
    g = None if seed is None else torch.Generator().manual_seed(seed)
    return module.generate(model, prompts, mask, generator=g, **options)


def probes(rng, dtype, scale):
    """[(callable, args, kwargs)] for the mutation audit's equivalence check: sample_next greedy, at two
    temperatures, with top_k, top_p (a small and a large one) and both, one row and three; generate greedy and
    sampled, with left padding, with an eos_id that stops rows at different steps, on a 2-layer model."""
    from autograder.reference.decoder import model as lm
    calls = []
    for options in (dict(), dict(temperature=1.0), dict(temperature=0.5), dict(temperature=1.3, top_k=3),
                    dict(temperature=1.0, top_p=0.3), dict(temperature=0.8, top_p=0.9),
                    dict(temperature=1.0, top_k=4, top_p=0.6), dict(temperature=1.0, top_k=20)):
        for rows in (1, 3):
            logits = torch.tensor((rng.standard_normal((rows, 11)) * 2 * scale).astype(dtype))
            seed = None if not options else int(rng.integers(1 << 20))
            calls.append((functools.partial(_sample, seed=seed, **options), [logits], {}))
    # logits in the thousands, as check 5.11 gives: a softmax that takes exp() before subtracting the max
    # overflows here (the reference's probabilities do not change when a constant is added)
    for options in (dict(temperature=1.0), dict(temperature=0.8, top_p=0.9)):
        logits = torch.tensor((3000.0 + rng.standard_normal((3, 11)) * 2).astype(dtype))
        calls.append((functools.partial(_sample, seed=int(rng.integers(1 << 20)), **options), [logits], {}))
    mask = torch.tensor([[False, False, True, True], [True] * 4, [False, True, True, True]])
    for masked, options in ((False, dict(max_new_tokens=5)), (True, dict(max_new_tokens=6)),
                            (True, dict(max_new_tokens=6, temperature=1.0, top_k=5, top_p=0.9)),
                            (False, dict(max_new_tokens=8, temperature=1.5, eos_id=3)),
                            (True, dict(max_new_tokens=8, temperature=1.5, eos_id=2))):
        params = lm.weights(rng, dtype, scale)
        prompts = torch.tensor(rng.integers(0, lm.CONFIG["vocab_size"], (3, 4)))
        seed = int(rng.integers(1 << 20)) if options.get("temperature") else None
        args = list(params.values()) + [prompts] + ([mask] if masked else [])
        calls.append((functools.partial(_generate, names=tuple(params), seed=seed, masked=masked, **options), args, {}))
    return calls
