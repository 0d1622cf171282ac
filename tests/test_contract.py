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
            layer = obj(*[12, 3][:len(item.init) - ("bias=True" in [a.name for a in item.init])])
            for name in item.layers:
                assert isinstance(getattr(layer, name), torch.nn.Linear), (item.name, name)
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
