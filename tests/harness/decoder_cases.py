"""The decoder's steps 4-6 (issue 31): each named mistake as a change to the master's own code
(id, step, replacements, the checks that fail). Graded once, with the misconception catalogue's cases
(tests/harness/catalogue.py); tests/suites/test_decoder_steps_4_6.py checks that each is there."""
from autograder.submitted_files import notebook_code
from conftest import ROOT

STEMS = ("04_model", "05_generation", "06_training")


def master_code(stem):
    return notebook_code((ROOT / "source" / "decoder" / f"{stem}.ipynb").read_bytes())


# (id, stem, [(text of the master, replacement)], the checks that fail)
CASES = [
    ("decoder-positions-restart", "04_model",
     [("past = 0 if cache is None else len(cache[0])", "past = 0")], "4.4 4.6 4.8"),
    ("decoder-padding-unmasked", "04_model",
     [("x = block(x, None if cache is None else cache[i], positions, attention_mask)",
       "x = block(x, None if cache is None else cache[i], positions)")], "4.5"),
    ("decoder-final-norm-missing", "04_model",
     [("return self.lm_head(self.norm(x))", "return self.lm_head(x)")], "4.2 4.3 4.4 4.5 4.6 4.8"),
    ("decoder-head-not-tied", "04_model",
     [("self.lm_head.weight = self.embed.weight         # one Parameter, two uses",
       "self.lm_head.weight = nn.Parameter(self.embed.weight.detach().clone())")], "4.1 4.3 4.8"),
    ("sampling-no-temperature", "05_generation",
     [("    logits = logits / temperature\n    if top_k", "    if top_k")], "5.2 5.3 5.4 5.8 5.10 5.11"),
    ("top-p-wrong-side", "05_generation",
     [("drop_ranked = probs.cumsum(-1) - probs >= top_p", "drop_ranked = probs.cumsum(-1) < top_p")], "5.4 5.8 5.10 5.11"),
    ("top-p-crossing-dropped", "05_generation",
     [("drop_ranked = probs.cumsum(-1) - probs >= top_p",
       "drop_ranked = probs.cumsum(-1) > top_p; drop_ranked[..., 0] = False")], "5.4 5.8 5.10 5.11"),
    ("generate-padding-ignored", "05_generation",
     [("logits = model(step_input, cache, mask)[:, -1]", "logits = model(step_input, cache)[:, -1]")], "5.6 5.8 5.10"),
    ("generate-eos-not-kept", "05_generation",
     [("                nxt = torch.where(done, torch.full_like(nxt, eos_id), nxt)\n", "")], "5.7"),
    ("generate-without-cache", "05_generation",
     [("logits = model(step_input, cache, mask)[:, -1]", "logits = model(tokens, None, mask)[:, -1]")], "5.9"),
    ("loss-not-shifted", "06_training",
     [("logits, targets = logits[:, :-1], tokens[:, 1:]", "logits, targets = logits, tokens")], "6.1 6.2 6.3 6.4 6.6"),
    ("loss-shifted-wrong-way", "06_training",
     [("logits, targets = logits[:, :-1], tokens[:, 1:]", "logits, targets = logits[:, 1:], tokens[:, :-1]")],
     "6.1 6.2 6.3 6.4 6.6"),
    ("loss-padding-counted", "06_training",
     [("        targets = targets.masked_fill(~attention_mask.bool()[:, 1:], -100)", "        pass")], "6.2 6.3"),
    ("train-step-grad-not-zeroed", "06_training",
     [("    optimizer.zero_grad()\n    loss = lm_loss", "    loss = lm_loss")], "6.4 6.6"),
    ("train-step-loss-after", "06_training",
     [("    optimizer.step()\n    return loss.item()",
       "    optimizer.step()\n    return lm_loss(model(tokens), tokens).item()")], "6.4 6.6"),
]
# the memory bound, with no catalogued mistake: a loss that keeps 64 one-hot copies of the targets
HEAVY = ("06_training", [("    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), "
                          "ignore_index=-100)",
                          "    kept = [F.one_hot(targets.clamp(min=0), logits.shape[-1]).to(logits.dtype) for _ in "
                          "range(64)]\n    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), "
                          "targets.reshape(-1), ignore_index=-100)")], "6.5")


def case_id(case):
    return f"{case[1][:2]}-{case[0]}"


def mutated(stem, replacements):
    code = master_code(stem)
    for old, new in replacements:
        assert code.count(old) == 1, old
        code = code.replace(old, new)
    return code
