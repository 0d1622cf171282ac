"""The package's layers: imports run one way, down, and there is no circle (docs/architecture.md).

    commands -> reports -> grading -> suites -> checks -> sandbox -> reference -> base, child

base is the package's own top-level modules (contract, i18n, safe_text, atomic, submitted_files)
and child/ imports nothing of the kit at all (it is copied beside the student's code)."""
import ast

from conftest import ROOT

PKG = ROOT / "autograder"
RANK = {"__main__": 8, "commands": 7, "reports": 6, "grading": 5, "suites": 4, "checks": 3, "sandbox": 2,
        "reference": 1, "base": 0, "child": 0}


def _modules():
    for path in sorted(PKG.rglob("*.py")):
        if "__pycache__" in path.parts or "locale" in path.relative_to(PKG).parts:
            continue
        rel = path.relative_to(PKG).with_suffix("")
        name = ".".join(("autograder",) + rel.parts).removesuffix(".__init__")
        yield name, path


def _layer(module):
    parts = module.split(".")
    if len(parts) == 1:
        return "base"
    if parts[1] in RANK:
        return parts[1]
    return "base"                       # autograder.contract, autograder.i18n, ...


def _imports(module, path):
    """The kit modules `module` imports (anywhere in its code, functions included)."""
    found = set()
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] == "autograder":
                found.add(target)
                found |= {f"{target}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "autograder"}
    return found


def _graph():
    mods = dict(_modules())
    return {m: {t for t in _imports(m, p) if t in mods and t != m} for m, p in mods.items()}


def test_imports_run_down_the_layers():
    wrong = []
    for module, targets in _graph().items():
        for target in targets:
            a, b = _layer(module), _layer(target)
            if target in ("autograder", "autograder.__init__") or a == b:
                continue
            if a == "child" or RANK[b] >= RANK[a]:
                wrong.append(f"{module} ({a}) imports {target} ({b})")
    assert not wrong, "\n".join(wrong)


def test_the_child_imports_nothing_of_the_kit():
    graph = _graph()
    assert not any(graph[m] for m in graph if _layer(m) == "child")


def test_no_import_circle():
    graph, state, stack, circles = _graph(), {}, [], []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for t in sorted(graph[m]):
            if state.get(t) == "open":
                circles.append(" -> ".join(stack[stack.index(t):] + [t]))
            elif t not in state:
                visit(t)
        stack.pop()
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert not circles, "\n".join(circles)


def test_the_check_sees_a_wrong_arrow(tmp_path, monkeypatch):
    """Break a rule once: a sandbox module importing the grading run is reported."""
    graph = _graph()
    graph["autograder.sandbox.step_child"].add("autograder.grading.run")
    monkeypatch.setattr(__import__(__name__), "_graph", lambda: graph)
    try:
        test_imports_run_down_the_layers()
    except AssertionError as exc:
        assert "autograder.sandbox.step_child (sandbox) imports autograder.grading.run (grading)" in str(exc)
    else:
        raise AssertionError("the wrong arrow was not seen")
