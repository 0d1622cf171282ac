"""memo.remembered: a reference's answer is reused for the same question only, always as a copy."""
import numpy as np
import pytest
import torch

from autograder.checks import memo
from harness.suites import load_suite


def counting(fn):
    calls = []

    def wrapped(*args, **kwargs):
        calls.append(1)
        return fn(*args, **kwargs)
    return memo.remembered(wrapped), calls


def test_the_same_question_is_answered_once_and_always_as_a_fresh_copy():
    f, calls = counting(lambda x, scale=1.0: (x * scale, {"sum": x.sum() * scale}))
    x = np.arange(6.0).reshape(2, 3)
    first = f(x, scale=2.0)
    first[0][0, 0] = 99.0                       # the caller changes what it got
    second = f(x.copy(), scale=2.0)             # same bytes, another array
    assert len(calls) == 1
    assert second[0][0, 0] == 0.0 and second[1]["sum"] == 30.0
    second[0][:] = -1
    assert f(x, scale=2.0)[0][1, 2] == 10.0


def test_a_different_question_is_computed():
    f, calls = counting(lambda x, scale=1.0: x * scale)
    x = np.arange(6.0)
    f(x)
    f(x, scale=3.0)                             # other keyword
    f(x.astype(np.float32))                     # other dtype, same values
    f(x.reshape(2, 3))                          # other shape, same bytes
    y = x.copy()
    y[5] = 7.0
    f(y)                                        # other bytes
    assert len(calls) == 5
    f(x.reshape(2, 3))
    assert len(calls) == 5


def test_what_is_not_plain_data_is_never_remembered():
    f, calls = counting(lambda x, g=None: x * 2)
    t = torch.ones(3, requires_grad=True)
    f(t)
    f(t)                                        # a tensor in a graph: not a key
    f(torch.ones(3), g=lambda: 0)               # a lambda: not a key
    f(torch.ones(3), g=lambda: 0)
    assert len(calls) == 4
    out = f(torch.ones(3))
    assert torch.equal(out, torch.full((3,), 2.0)) and len(calls) == 5
    f(torch.ones(3))
    assert len(calls) == 5                      # a plain tensor is a key, and its result a clone
    g, g_calls = counting(lambda x: x * torch.ones(3, requires_grad=True))
    g(torch.ones(3))
    g(torch.ones(3))                            # a result in a graph is not kept
    assert len(g_calls) == 2


def test_a_reference_module_remembers_its_functions_and_leaves_its_classes():
    from solutions import step04_softmax, step07_full_module
    ref = memo.Remembering(step04_softmax)
    x = np.random.default_rng(0).standard_normal((3, 4))
    assert np.array_equal(ref.softmax(x), step04_softmax.softmax(x))
    assert ref.softmax is ref.softmax and ref.softmax is not step04_softmax.softmax
    mods = memo.Remembering(step07_full_module)
    assert mods.SingleHeadSelfAttention is step07_full_module.SingleHeadSelfAttention


def test_the_reference_flops_are_counted_even_through_a_remembering_wrapper():
    from autograder.checks import complexity
    from solutions import step06_multi_head
    ref = memo.Remembering(step06_multi_head)
    x, Ws = torch.randn(2, 5, 8, dtype=torch.float64), [torch.randn(8, 8, dtype=torch.float64) for _ in range(4)]
    ref.multi_head_attention(x, *Ws, 2)                 # now in memory
    assert complexity.reference_flops(ref.multi_head_attention, x, *Ws, 2) == \
        complexity.reference_flops.__wrapped__(step06_multi_head.multi_head_attention, x, *Ws, 2) > 0


# ------------------------------------------------------------------ the suites that ask through memory
# the decoder's suites and RoPE's (issue 27): their known mistakes (reference/decoder/, reference/modern/rope.py)
# and the reference's counted costs were computed afresh for every submission, some 1.5 s of a decoder's 9
REMEMBERING = {"01_rmsnorm": (), "02_swiglu": (), "03_decoder_block": ("_reference_decode_flops", "_one_token_flops"),
               "04_model": ("_reference_decode_flops",), "05_generation": ("_reference_generate_flops",),
               "06_training": (), "04_rope": ()}


@pytest.mark.parametrize("stem", sorted(REMEMBERING))
def test_the_suite_asks_its_known_mistakes_and_costs_through_memory(stem):
    suite = load_suite(stem, "memo_suite")
    assert isinstance(suite.known, memo.Remembering)
    assert suite.known._module.__name__.startswith("autograder.reference.")
    for name in REMEMBERING[stem]:
        assert hasattr(getattr(suite, name), "__wrapped__"), f"{stem}: {name} is not remembered"


def test_a_second_submission_of_the_decoder_gets_the_references_answers_from_memory(monkeypatch):
    """Step 5's generate: the reference runs for the first question only; the answer is the same array."""
    suite = load_suite("05_generation", "memo_suite")
    calls = []
    real = suite.known._module.generate
    monkeypatch.setattr(suite.known._module, "generate", lambda *a, **k: calls.append(1) or real(*a, **k))
    suite.known.__dict__.pop("generate", None)          # wrapped afresh, around the counter
    prompts = suite._prompts("5.5")[0]
    first = suite.known.generate(suite._params("5.5"), suite.CONFIG, prompts, max_new_tokens=3)
    again = suite.known.generate(suite._params("5.5"), suite.CONFIG, prompts.copy(), max_new_tokens=3)
    assert len(calls) == 1 and np.array_equal(first, again) and first is not again
    suite.known.generate(suite._params("5.5"), suite.CONFIG, prompts, max_new_tokens=4)     # another question
    assert len(calls) == 2
    flops = suite._reference_generate_flops(4)
    assert flops > 0 and suite._reference_generate_flops(4) == flops
