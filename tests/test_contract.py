"""The contract (autograder/contract.py) is typed code, and what shows it reads it or is checked
against it: docs/contract.md's table is rendered from it, the references and the released stubs define
exactly its names with its parameters, and the notebooks' step metadata names its steps."""
import ast
import inspect
import json

import pytest

from autograder import contract
from autograder.commands import release
from conftest import ROOT

# (assignment, step) for every step the kit releases; ids like "modern_attention/01_masks"
ALL_STEPS = [(a, step) for a, steps in contract.ASSIGNMENTS.items() for step in steps]
ALL_IDS = [f"{a}/{step.stem}" for a, step in ALL_STEPS]


@pytest.mark.parametrize("assignment", contract.ASSIGNMENTS)
def test_the_readme_table_is_the_contract(assignment):
    readme = (ROOT / contract.CONTRACT_PAGE).read_text(encoding="utf-8")
    begin, end = contract.readme_markers(assignment)
    assert readme.count(begin) == 1, f"{contract.CONTRACT_PAGE} has no table for {assignment}: paste contract.readme_table({assignment!r})"
    a, b = readme.index(begin), readme.index(end) + len(end)
    assert readme[a:b] == contract.readme_table(assignment), \
        f"{contract.CONTRACT_PAGE}'s contract table of {assignment} is stale: paste contract.readme_table({assignment!r})"


def test_the_assignments_of_the_contract():
    """STEPS is the first assignment's; every step of every assignment has a stem of its own, and the
    second assignment's are numbered from 1, in PyTorch."""
    assert list(contract.ASSIGNMENTS)[0] == contract.ASSIGNMENT
    assert contract.ASSIGNMENTS[contract.ASSIGNMENT] is contract.STEPS
    stems = [step.stem for _a, step in ALL_STEPS]
    assert len(stems) == len(set(stems)), "a file stem must say which assignment and step it is"
    numbers = [s.number for s in contract.STEPS_OF_MODERN_ATTENTION]
    assert numbers == list(range(1, len(numbers) + 1))
    assert {s.framework for s in contract.STEPS_OF_MODERN_ATTENTION} == {"torch"}


# the sizes a module of the contract is built with, by argument name (its arguments without a default)
SIZES = {"d_model": 12, "dim": 12, "num_heads": 3, "num_kv_heads": 1, "hidden_dim": 8, "vocab_size": 20,
         "num_layers": 2}


def _parameters(fn, skip_self=False):
    params = list(inspect.signature(fn).parameters.values())
    if skip_self:
        params = params[1:]
    return tuple(p.name if p.default is inspect.Parameter.empty else f"{p.name}={p.default!r}" for p in params)


@pytest.mark.parametrize("assignment, step", ALL_STEPS, ids=ALL_IDS)
def test_the_reference_defines_the_contract(assignment, step):
    import importlib
    ref = importlib.import_module(release.reference_module_name(assignment, step.stem))
    for item in step.api:
        obj = getattr(ref, item.name)
        if isinstance(item, contract.Class):
            assert _parameters(obj.__init__, skip_self=True) == tuple(a.name for a in item.init), item.name
            for method in item.methods:
                assert _parameters(getattr(obj, method.name), skip_self=True) == tuple(a.name for a in method.args)
        elif isinstance(item, contract.Module):
            assert _parameters(obj.__init__, skip_self=True) == tuple(a.name for a in item.init), item.name
            assert _parameters(obj.forward, skip_self=True) == tuple(a.name for a in item.forward.args)
            import torch
            layer = obj(*[SIZES[a.name] for a in item.init if "=" not in a.name])
            for name in item.layers:
                # projections are nn.Linear; a norm's scale is a Parameter, a sublayer a Module (the decoder's)
                kinds = (torch.nn.Linear,) if name.endswith("_proj") or name.startswith("W_") else \
                    (torch.nn.Module, torch.nn.Parameter)
                assert isinstance(getattr(layer, name), kinds), (item.name, name)
        else:
            assert _parameters(obj) == tuple(a.name for a in item.args), item.name


def _defined(nb_path):
    """{name: parameter names} of the functions and classes (their __init__ and forward) the
    notebook's code cells define."""
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    found = {}
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        try:
            tree = ast.parse("".join(cell["source"]))
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                found[node.name] = _args(node)
            elif isinstance(node, ast.ClassDef):
                found[node.name] = {m.name: _args(m)[1:] for m in node.body if isinstance(m, ast.FunctionDef)}
    return found, nb["metadata"].get("attention_kit", {})


def _args(fn):
    a = fn.args
    defaults = [None] * (len(a.args) - len(a.defaults)) + [ast.unparse(d) for d in a.defaults]
    return tuple(x.arg if d is None else f"{x.arg}={d}" for x, d in zip(a.args, defaults))


@pytest.mark.parametrize("folder", ["source", "assignments"])
@pytest.mark.parametrize("assignment, step", ALL_STEPS, ids=ALL_IDS)
def test_master_and_stub_define_the_contract_and_name_their_step(folder, assignment, step):
    folder = f"{folder}/{assignment}"
    found, meta = _defined(ROOT / folder / f"{step.stem}.ipynb")
    assert meta.get("stem") == step.stem and meta.get("step") == step.number, meta
    # the title is the contract's (reports show it): the notebook's metadata does not say otherwise
    assert meta.get("title") == step.title, (folder, meta.get("title"), step.title)
    for item in step.api:
        assert item.name in found, (folder, step.stem, item.name)
        if isinstance(item, contract.Module):
            assert found[item.name]["__init__"] == tuple(a.name for a in item.init)
            assert found[item.name]["forward"] == tuple(a.name for a in item.forward.args)
        elif isinstance(item, contract.Class):
            assert found[item.name].get("__init__", ()) == tuple(a.name for a in item.init), (folder, item.name)
            for method in item.methods:
                assert found[item.name].get(method.name) == tuple(a.name for a in method.args), (folder, method.name)
        else:
            assert found[item.name] == tuple(a.name for a in item.args), (folder, item.name)


# ------------------------------------------------------------------ one registry (issue 26)
# Modules that must still name an assignment, with why: none (the first assignment's file names, its
# top-level solutions package, notebooks.pot and docs/mutation_audit.json, are its `file_tag` in the
# registry; defaults read contract.DEFAULT_ASSIGNMENT). The list only shrinks; nothing may join it.
NOT_YET_CONVERTED = set()
# An assignment's own content: its suites, references' variants, probes, mutants and catalogue.
ASSIGNMENT_CONTENT = ("autograder/suites/", "autograder/reference/")
FIRST_ONLY = {"ASSIGNMENT", "STEPS", "STEPS_OF_MODERN_ATTENTION"}


def assignment_specific_uses(source):
    """(line, what) of each use in a module of one named assignment: contract.ASSIGNMENT /
    contract.STEPS (the first assignment's), or an assignment's name as a string."""
    uses = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "contract" \
                and node.attr in FIRST_ONLY:
            uses.append((node.lineno, f"contract.{node.attr}"))
        elif isinstance(node, ast.ImportFrom) and node.module == "autograder.contract":
            uses += [(node.lineno, f"import {a.name}") for a in node.names if a.name in FIRST_ONLY]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in contract.REGISTRY:
            uses.append((node.lineno, repr(node.value)))
        elif isinstance(node, ast.Compare) and any(
                isinstance(x, ast.Attribute) and x.attr == "DEFAULT_ASSIGNMENT" for x in [node.left, *node.comparators]):
            # the default assignment is a default, never a branch: `if a == DEFAULT_ASSIGNMENT` special-cases one
            uses.append((node.lineno, "== contract.DEFAULT_ASSIGNMENT"))
    return uses


def test_no_module_outside_the_registry_names_an_assignment():
    """Every module of the kit reads the assignments from contract.REGISTRY: none names one, nor
    iterates the first assignment's steps as "the steps" (the assignments' own suites and
    references aside). A new use fails here; a module on NOT_YET_CONVERTED that lost its last use
    must leave the list."""
    found = {}
    for path in sorted((ROOT / "autograder").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "autograder/contract.py" or rel.startswith(ASSIGNMENT_CONTENT):
            continue
        uses = assignment_specific_uses(path.read_text(encoding="utf-8"))
        if uses:
            found[rel] = uses
    new = {rel: uses for rel, uses in found.items() if rel not in NOT_YET_CONVERTED}
    assert not new, f"assignment-specific code outside the registry (autograder/contract.py): {new}"
    assert set(found) == NOT_YET_CONVERTED, f"converted: take {NOT_YET_CONVERTED - set(found)} off the list"


def test_a_registered_assignment_is_everywhere_and_leaves_nothing_behind():
    step = contract.Step(1, "01_registry_probe", "probe", "numpy", (contract.Function("probe", (), ()),))
    contract.register(contract.Assignment("registry_probe", (step,)))
    try:
        assert contract.STEP_BY_STEM["01_registry_probe"] is step and step in contract.ALL_STEPS
        assert contract.step_of_file("01_registry_probe.ipynb") is step
        assert contract.assignments_of({"01_registry_probe"}) == {"registry_probe": ["01_registry_probe"]}
        with pytest.raises(ValueError):       # a stem is one assignment's
            contract.register(contract.Assignment("another", (step,)))
    finally:
        contract.unregister("registry_probe")
    assert "01_registry_probe" not in contract.STEP_BY_STEM and "registry_probe" not in contract.ASSIGNMENTS
