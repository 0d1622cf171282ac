"""Domain coverage is a table, and a test (issue 28): every region of every step's contract has a
check, values and (torch steps) gradients; the checks named exist; docs/domain_coverage.md is current."""
import ast

import pytest

from autograder import contract
from autograder.reference import domain
from conftest import ROOT


def _check_numbers(step):
    tree = ast.parse((ROOT / "autograder" / "suites" / f"step{step.stem}.py").read_text())
    return {d.args[0].value for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef) for d in fn.decorator_list
            if isinstance(d, ast.Call) and getattr(d.func, "id", "") == "check"}


@pytest.mark.parametrize("step", contract.ALL_STEPS, ids=lambda s: f"{contract.ASSIGNMENT_OF[s.stem]}-{s.stem}")
def test_every_region_of_the_contract_has_a_check(step):
    assert domain.uncovered(step) == []


@pytest.mark.parametrize("step", contract.ALL_STEPS, ids=lambda s: f"{contract.ASSIGNMENT_OF[s.stem]}-{s.stem}")
def test_the_checks_named_exist_and_every_probe_is_a_region(step):
    numbers = _check_numbers(step)
    keys = {(arg, region) for arg, region, _needs in domain.regions(step)}
    for key, probe in domain.probes(step).items():
        assert key in keys, f"{step.stem}: {key} is no region of the contract"
        for need, checks in probe.items():
            assert set(checks) <= numbers, (step.stem, key, need, set(checks) - numbers)


def test_the_regions_come_from_the_contract():
    """A mask argument brings rows with no allowed key, with their gradients; positions an offset; a
    torch step gradients: remove a probe and its region is uncovered."""
    step = contract.step_for_stem("06_flash_attention")
    regions = {(a, r): needs for a, r, needs in domain.regions(step)}
    assert regions[("T_q, T_k", "T_q > T_k")] == ("values",)
    assert regions[("causal", "True")] == ("values", "gradients")
    rope = contract.step_for_stem("04_rope")
    assert ("positions", "not starting at 0") in {(a, r) for a, r, _n in domain.regions(rope)}
    saved = domain.PROBES["modern_attention"]["04_rope"].pop(("positions", "not starting at 0"))
    try:
        assert domain.uncovered(rope) == ["positions: not starting at 0 (values)",
                                          "positions: not starting at 0 (gradients)"]
    finally:
        domain.PROBES["modern_attention"]["04_rope"][("positions", "not starting at 0")] = saved


def test_the_table_is_current():
    """docs/domain_coverage.md is what `python -m autograder.reference.domain` writes."""
    assert domain.DOC.read_text(encoding="utf-8") == domain.table()
