"""The third assignment, decoder (issue 31), steps 1-3: RMSNorm, SwiGLU, the decoder block.

- the known mistakes (reference/decoder/) without a mistake are the references (solutions/decoder/),
  with and without a cache, with positions and a key mask; every mistake changes the values the
  suites compare (or, for the cache-* ones, only the keys handed to cache.append);
- one grading run: the masters get full marks, the released stubs 0 with every check naming its
  step ("Step N: implement ..."); every catalogued mistake of these steps, written into correct code
  of another idiom (tests/harness/catalogue_decoder.py), is graded once, by
  test_misconception_catalogue.py with every other step's (exactly its id, exactly the checks listed
  failing, in English and Chinese): this file checks that each is there;
- the counted cost: the reference's decode step costs one block's work on one token plus the
  attention over the cached keys (multiply-adds counted, never timed).
"""

import numpy as np
import pytest
import torch

from autograder import contract
from autograder.child import meters
from autograder.reference.decoder import decoder_block, rmsnorm, swiglu
from harness.catalogue_decoder import CASES
from conftest import ROOT
from harness.grade_many import grade_many, summary as _summary
from solutions.decoder import step01_rmsnorm, step02_swiglu, step03_decoder_block as step03

STEMS = ("01_rmsnorm", "02_swiglu", "03_decoder_block")
D, H, KV, HID = 24, 4, 2, 40


def _block_params(seed, d=D, h=H, kv=KV, hid=HID):
    g = torch.Generator().manual_seed(seed)
    hd = d // h
    shapes = {"attn_norm.weight": (d,), "q_proj.weight": (d, d), "k_proj.weight": (kv * hd, d),
              "v_proj.weight": (kv * hd, d), "o_proj.weight": (d, d), "ffn_norm.weight": (d,),
              "ffn.gate_proj.weight": (hid, d), "ffn.up_proj.weight": (hid, d), "ffn.down_proj.weight": (d, hid)}
    return {n: (1 + 0.2 * torch.randn(s, dtype=torch.float64, generator=g)) if len(s) == 1 else
            torch.randn(s, dtype=torch.float64, generator=g) / s[1] ** 0.5 for n, s in shapes.items()}


def _reference_block(params, d=D, h=H, kv=KV, hid=HID):
    mod = step03.DecoderBlock(d, h, kv, hid).double()
    with torch.no_grad():
        for n, p in mod.named_parameters():
            p.copy_(params[n])
    return mod


def test_the_registry_holds_the_steps_written_so_far():
    names = [s.stem for s in contract.ASSIGNMENTS["decoder"]]
    assert names[:3] == list(STEMS)
    assert contract.REGISTRY["decoder"].variants == "autograder.reference.decoder"


# ------------------------------------------------------------------ the variants are the references
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
def test_the_written_out_norm_is_the_reference(dtype):
    g = torch.Generator().manual_seed(0)
    x = (300 * torch.randn(3, 8, generator=g)).to(dtype)
    w = (1 + 0.3 * torch.randn(8, generator=g)).to(dtype)
    mod = step01_rmsnorm.RMSNorm(8).to(dtype)
    with torch.no_grad():
        mod.weight.copy_(w)
        expected = mod(x).double().numpy()
    if dtype == torch.float32:          # the written-out norm computes float32 inputs in float64
        assert np.allclose(rmsnorm.norm(x, w), expected, rtol=1e-5, atol=1e-6)
    else:
        assert np.array_equal(rmsnorm.norm(x, w), expected)
    small = torch.randn(2, 8, dtype=torch.float64, generator=g) * 1e-3
    assert set(rmsnorm.mistakes(small, torch.ones(8, dtype=torch.float64))) == {"rmsnorm-eps-outside-root"}
    if dtype == torch.float16:          # the squares overflow: every row of zeros
        assert not rmsnorm.norm(x, w, mistake="rmsnorm-half-precision").any()


def test_the_written_out_feed_forward_is_the_reference():
    g = torch.Generator().manual_seed(1)
    params = {"gate_proj.weight": torch.randn(10, 6, dtype=torch.float64, generator=g),
              "up_proj.weight": torch.randn(10, 6, dtype=torch.float64, generator=g),
              "down_proj.weight": torch.randn(6, 10, dtype=torch.float64, generator=g)}
    x = torch.randn(2, 3, 6, dtype=torch.float64, generator=g)
    mod = step02_swiglu.SwiGLU(6, 10).double()
    with torch.no_grad():
        for n, p in mod.named_parameters():
            p.copy_(params[n])
        assert torch.allclose(swiglu.ffn(params, x), mod(x), rtol=1e-12, atol=1e-12)
    right = mod(x).detach().numpy()
    for mid, ways in swiglu.mistakes(params, x).items():
        assert all(not np.allclose(w[0], right, rtol=1e-3, atol=1e-3) for w in ways), mid


@pytest.mark.parametrize("kv", [1, 2, 4])
def test_the_written_out_block_is_the_reference(kv):
    params = _block_params(kv, kv=kv)
    x = torch.randn(2, 6, D, dtype=torch.float64, generator=torch.Generator().manual_seed(10 + kv))
    mod = _reference_block(params, kv=kv)
    mask = torch.tensor([[False, False, True, True, True, True], [True] * 6])
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        full = mod(x)
        assert torch.allclose(decoder_block.block(params, x, H, kv)[0][0], full, rtol=1e-12, atol=1e-12)
        assert torch.allclose(decoder_block.block(params, x, H, kv, positions=pos, key_mask=mask)[0][0],
                              mod(x, positions=pos, key_mask=mask), rtol=1e-12, atol=1e-12)
        for chunks in ([1] * 6, [3, 2, 1], [4, 2]):
            cache, outs, start = step03.LayerCache(), [], 0
            for n in chunks:
                outs.append(mod(x[:, start:start + n], cache))
                start += n
            mine, keys = decoder_block.block(params, x, H, kv, chunks)
            assert all(torch.allclose(a, b, rtol=1e-12, atol=1e-12) for a, b in zip(mine, outs))
            assert torch.allclose(torch.cat(outs, 1), full, rtol=1e-10, atol=1e-10)    # the cache changes nothing
            assert torch.equal(torch.cat(keys, -2), cache.k)                           # rotated, num_kv_heads heads
        cache = step03.LayerCache()
        outs = [mod(x[:, :3], cache, positions=pos[:, :3], key_mask=mask[:, :3]),
                mod(x[:, 3:], cache, positions=pos[:, 3:], key_mask=mask)]
        mine, _k = decoder_block.block(params, x, H, kv, [3, 3], positions=pos, key_mask=mask)
        assert all(torch.allclose(a, b, rtol=1e-12, atol=1e-12) for a, b in zip(mine, outs))


def test_every_block_mistake_changes_what_the_suite_compares():
    params = _block_params(3)
    x = torch.randn(2, 6, D, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    right = decoder_block.block(params, x, H, KV)[0][0].numpy()
    uncached = decoder_block.block_mistakes(params, x, H, KV)
    assert set(uncached) == set(decoder_block.MISTAKES) - set(decoder_block.CACHED_ONLY)
    for chunks in ([1] * 6, [3, 2, 1]):
        cached = decoder_block.block_mistakes(params, x, H, KV, chunks)
        assert set(cached) == set(decoder_block.MISTAKES), chunks
        for mid, outs in cached.items():
            assert not np.allclose(np.concatenate(outs, 1), right, rtol=1e-3, atol=1e-3), (mid, chunks)
    keys = decoder_block.stored_keys(params, x, H, KV, [3, 2, 1])
    for mid in decoder_block.STORED:           # the outputs right, the keys handed to the cache not
        theirs = decoder_block.stored_keys(params, x, H, KV, [3, 2, 1], mid)
        assert any(a.shape != b.shape or not np.allclose(a, b) for a, b in zip(theirs, keys)), mid


# ------------------------------------------------------------------ the counted cost
def test_a_decode_step_costs_one_blocks_work_on_one_token_plus_the_attention():
    """The reference's work decoding one token after n cached ones, counted as the child's meters count it
    (two operations a multiply-add): a block on one token (its projections, its feed-forward and the
    attention over its own key, constant) plus 2 * n * D multiply-adds for the scores and the weighted sum
    over the n cached keys."""
    d, h, kv, hid = 32, 4, 2, 64
    mod = _reference_block(_block_params(0, d, h, kv, hid), d, h, kv, hid)
    one = meters.flops_of(lambda: mod(torch.zeros(1, 1, d, dtype=torch.float64)))
    for n in (16, 32, 64):
        x = torch.randn(1, n + 1, d, dtype=torch.float64, generator=torch.Generator().manual_seed(n))

        def run(chunks):
            cache, start = step03.LayerCache(), 0
            for c in chunks:
                mod(x[:, start:start + c], cache)
                start += c
        step = meters.flops_of(run, [n, 1]) - meters.flops_of(run, [n])
        assert step == one + 2 * (2 * n * d), (n, step, one)


# ------------------------------------------------------------------ grading: masters, stubs
@pytest.fixture(scope="module")
def graded():
    jobs = {f"master:{s}": (ROOT / "source" / "decoder" / f"{s}.ipynb", s) for s in STEMS}
    jobs.update({f"stub:{s}": (ROOT / "assignments" / "decoder" / f"{s}.ipynb", s) for s in STEMS})
    return dict(zip(jobs, grade_many(list(jobs.values()))))


@pytest.mark.parametrize("stem", STEMS)
def test_the_master_gets_full_marks(graded, stem):
    checks = graded[f"master:{stem}"]
    assert all(c["status"] in ("passed", "skipped") for c in checks), _summary(checks)
    assert sum(c["score"] for c in checks) == contract.step_for_stem(stem).points
    assert not any(c["misconceptions"] for c in checks)


@pytest.mark.parametrize("stem", STEMS)
def test_the_stub_scores_zero_naming_its_step(graded, stem):
    checks = graded[f"stub:{stem}"]
    number = contract.step_for_stem(stem).number
    assert sum(c["score"] for c in checks) == 0, _summary(checks)
    for c in checks:
        if c["status"] != "skipped":
            assert c["status"] != "passed" and f"Step {number}: implement" in c["output"] \
                or "(same message as" in c["output"], _summary([c])


def test_each_mistake_is_graded_by_the_catalogue():
    """The catalogue grades these cases (the same slots, the same failing checks), not this file."""
    from harness.catalogue import CASES as CATALOGUE_CASES
    missing = [f"{c[1][:2]}-{c[0]}" for c in CASES if c not in CATALOGUE_CASES]
    assert not missing and len(CASES) > 0


# ------------------------------------------------------------------ the notebooks in Chinese
def test_the_decoder_catalogue_is_complete_and_keeps_what_must_stay():
    """notebooks_decoder.po against the masters' messages: every one translated, none fuzzy or left
    over, each keeping its `code`, $math$, tags, {fields} and escapes."""
    from autograder.commands import notebook_i18n, notebook_text, release
    entries = notebook_i18n.extract(release.master_notebooks("decoder"), ROOT)
    catalogue = notebook_i18n.read_catalogue(notebook_i18n.catalogue_path("zh", "decoder"))
    table = {(m.context, m.id): m for m in catalogue if m.id}
    missing = [e.msgid for e in entries if not getattr(table.get((e.context, e.msgid)), "string", "")]
    wrong = [e.msgid for e in entries if (e.context, e.msgid) in table and table[(e.context, e.msgid)].string
             and notebook_text.invariants(e.msgid, e.kind)
             != notebook_text.invariants(table[(e.context, e.msgid)].string, e.kind)]
    extracted = {(e.context, e.msgid) for e in entries}
    assert not missing and not wrong, (missing[:10], wrong[:10])
    assert not [m.id for m in catalogue if m.id and ((m.context, m.id) not in extracted or m.fuzzy)]


def _run_cells(nb, skip_graded=True):
    """Run a notebook's code cells in one namespace: ({grade_id: the NotImplementedError's message}, printed)."""
    import contextlib
    import io
    namespace, failed, printed = {"__name__": "__main__"}, {}, io.StringIO()
    for cell in nb.cells:
        if cell.cell_type != "code" or (skip_graded and cell.metadata.get("nbgrader", {}).get("grade")):
            continue
        try:
            with contextlib.redirect_stdout(printed):
                exec(compile(cell.source, cell.metadata["nbgrader"]["grade_id"], "exec"), namespace)
        except NotImplementedError as err:
            failed[cell.metadata["nbgrader"]["grade_id"]] = str(err)
    return failed, printed.getvalue()


@pytest.mark.parametrize("stem", STEMS)
def test_the_chinese_masters_pass_their_visible_tests_in_chinese(stem):
    import nbformat
    from autograder.commands import notebook_i18n
    master = nbformat.read(str(ROOT / "source" / "decoder" / f"{stem}.ipynb"), as_version=4)
    failed, printed = _run_cells(notebook_i18n.translate_notebook(master, "zh", "decoder"))
    assert not failed
    assert f"第 {int(stem[:2])} 步的可见测试全部通过" in printed and "tests passed" not in printed, printed[-500:]


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("stem", STEMS)
def test_a_released_stub_fails_its_visible_tests_naming_its_step(stem, lang):
    import nbformat
    from autograder.commands import release
    nb = nbformat.read(str(ROOT / release.release_folder(lang) / "decoder" / f"{stem}.ipynb"), as_version=4)
    number = int(stem[:2])
    failed, _printed = _run_cells(nb)
    tests = [c.metadata["nbgrader"]["grade_id"] for c in nb.cells if c.cell_type == "code"
             and c.metadata["nbgrader"]["grade_id"].endswith("_tests") and not c.metadata["nbgrader"]["grade"]
             and not c.metadata["nbgrader"]["grade_id"].endswith("_test_tools_tests")]
    prefix = f"Step {number}: implement" if lang == "en" else f"第 {number} 步：请实现"
    assert tests and set(tests) <= set(failed), set(tests) - set(failed)
    assert all(m.startswith(prefix) for m in failed.values()), failed
