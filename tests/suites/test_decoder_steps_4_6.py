"""The decoder's steps 4-6 (issue 31) through the grader: the masters' notebooks get full marks, the
released stubs 0 with each check naming the step still to write, and a training step that keeps too much
fails the memory bound only. Graded in one subprocess (zygote-forked children), once.

Each named mistake of these steps (harness.decoder_cases), applied to the master's own code, is graded
once, by tests/reference/test_misconception_catalogue.py with every other step's mistakes (exactly its id,
exactly the checks listed failing, in English and in Chinese); this file checks that it is there."""
import pytest

from autograder import contract
from autograder.reference import misconceptions
from conftest import ROOT
from harness.decoder_cases import CASES, HEAVY, STEMS, case_id, master_code, mutated  # noqa: F401
from harness.grade_many import grade_many, summary as _summary


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("decoder")
    jobs = {}
    for stem in STEMS:
        jobs[f"master-{stem}"] = (ROOT / "source" / "decoder" / f"{stem}.ipynb", stem)
        jobs[f"stub-{stem}"] = (ROOT / "assignments" / "decoder" / f"{stem}.ipynb", stem)
    stem, replacements = HEAVY[:2]
    (root / "heavy").mkdir()
    (root / "heavy" / f"{stem}.py").write_text(mutated(stem, replacements))
    jobs["heavy"] = (root / "heavy" / f"{stem}.py", stem)
    return dict(zip(jobs, grade_many(list(jobs.values()))))


@pytest.mark.parametrize("stem", STEMS)
def test_the_master_gets_full_marks(graded, stem):
    checks = graded[f"master-{stem}"]
    assert checks and all(c["status"] == "passed" for c in checks), _summary(checks)
    assert sum(c["score"] for c in checks) == contract.step_for_stem(stem).points == 10
    assert not any(c["misconceptions"] for c in checks)


@pytest.mark.parametrize("stem", STEMS)
def test_the_stub_scores_0_naming_its_step(graded, stem):
    checks = graded[f"stub-{stem}"]
    step = contract.step_for_stem(stem)
    assert checks and sum(c["score"] for c in checks) == 0, _summary(checks)
    assert all(f"Step {step.number}: implement" in c["output"] for c in checks), _summary(checks)
    assert not any(c["misconceptions"] for c in checks)


def test_each_mistake_is_graded_by_the_catalogue_as_written_here():
    """The catalogue grades these cases (the same code, the same failing checks), not this file."""
    from harness.catalogue import CASES as CATALOGUE_CASES
    graded_there = {(mid, stem, slots.get("body"), failing) for mid, stem, slots, failing in CATALOGUE_CASES}
    for mid, stem, replacements, failing in CASES:
        assert (mid, stem, mutated(stem, replacements), failing) in graded_there, case_id((mid, stem, replacements,
                                                                                           failing))


def test_training_memory_is_bounded(graded):
    checks = graded["heavy"]
    assert {c["number"] for c in checks if c["status"] != "passed"} == {"6.5"}, _summary(checks)
    assert "bytes of tensors at its peak" in next(c["output"] for c in checks if c["number"] == "6.5")


def test_every_catalogued_mistake_of_steps_4_to_6_has_a_case():
    wanted = {(mid, stem) for mid, m in misconceptions.CATALOGUE.items() for stem in m.stems if stem in STEMS}
    assert {(c[0], c[1]) for c in CASES} == wanted


def test_the_blocks_the_notebooks_give_are_step_3s_reference():
    """Steps 4-6 give students a copy of steps 1-3's pieces (a locked cell): it must compute what step 3's
    reference computes (the other half of issue 31), with and without a cache, left padding included."""
    import torch
    step3 = pytest.importorskip("solutions.decoder.step03_decoder_block",
                                reason="steps 1-3 of the decoder (the other half of issue 31) are not here yet")
    from solutions.decoder import step04_model as step4
    g = torch.Generator().manual_seed(0)
    for heads, kv_heads in ((4, 2), (4, 1), (2, 2)):
        mine = step4.DecoderBlock(16, heads, kv_heads, 24, 1e-5, 500.0).double()
        theirs = step3.DecoderBlock(16, heads, kv_heads, 24, 1e-5, 500.0).double()
        with torch.no_grad():
            for p in mine.parameters():
                p.copy_(torch.randn(p.shape, dtype=torch.float64, generator=g) * 0.3 + (p.dim() == 1))
        theirs.load_state_dict(mine.state_dict())
        x = torch.randn(2, 7, 16, dtype=torch.float64, generator=g)
        mask = torch.ones(2, 7, dtype=torch.bool)
        mask[1, :3] = False
        positions = (mask.long().cumsum(-1) - 1).clamp(min=0)
        with torch.no_grad():
            assert torch.allclose(mine(x), theirs(x), rtol=1e-12, atol=1e-12)
            a, b = mine(x, None, positions, mask), theirs(x, None, positions, mask)
            assert torch.allclose(a[mask], b[mask], rtol=1e-12, atol=1e-12)
            caches, outs = (step4.LayerCache(), step3.LayerCache()), ([], [])
            start = 0
            for n in (4, 2, 1):
                for block, cache, out in zip((mine, theirs), caches, outs):
                    out.append(block(x[:, start:start + n], cache))
                start += n
            assert torch.allclose(torch.cat(outs[0], 1), torch.cat(outs[1], 1), rtol=1e-12, atol=1e-12)
