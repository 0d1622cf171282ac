"""Every failure message renders, in English and in Chinese (issue 28).

A message that raises while it is built or rendered reaches the student as "internal error (not your
code's fault)" and loses the step's feedback. Three nets:

- every `_()` template of the package renders in both languages whatever kind of text its fields
  hold (str, a message, a composition; numbers where the template formats them), and survives the
  results' JSON round trip;
- no message is joined with `str.join` (it raises TypeError on a message: the issue's crash, in the
  structure check of the first assignment's torch step 7); `i18n.join` composes them;
- the failure paths that build messages from the student's values are driven with the values that
  reach them (every kind of structure problem of the torch modules) and rendered in both languages.
"""
import ast
import string
from conftest import ROOT  # noqa: F401 (at collection: a suite graded later puts its own conftest in sys.modules)

import numpy as np
import pytest

from autograder import i18n
from autograder.i18n import Message, _, concat, from_data, render, to_data
from harness.grade_many import grade_many
from harness.messages import MODULES, MSGIDS

INTEGER_SPECS = set("bcdoxXn")


def _sample_values(spec):
    """Values a field may hold: numbers where the template formats one, any text otherwise."""
    if spec:
        kind = spec[-1]
        return [3, np.int64(4)] if kind in INTEGER_SPECS else [1.5, 3, np.float32(0.25), np.float64(2e-9)]
    return ["plain {text} with braces", 7, 0.5, None, _("a message with {field}", field="x"),
            concat("code ", _("a message with {field}", field="y"), "\n")]


@pytest.mark.parametrize("msgid", sorted(MSGIDS))
def test_every_template_renders_in_both_languages_whatever_its_fields_hold(msgid):
    specs = {}
    for _literal, name, spec, _conv in string.Formatter().parse(msgid):
        if name:
            specs[name] = spec or ""
    samples = {name: _sample_values(spec) for name, spec in specs.items()}
    longest = max((len(v) for v in samples.values()), default=1)
    for i in range(longest):
        fields = {name: values[i % len(values)] for name, values in samples.items()}
        message = i18n._message(msgid, fields)
        for lang in i18n.LANGUAGES:
            text = render(message, lang)
            assert isinstance(text, str) and text
            assert render(from_data(to_data(message)), lang) == text


# ------------------------------------------------------------------ the class of the TypeError
MESSAGE_MAKERS = {"_", "translate", "join", "concat", "fail_message", "describe", "describe_value"}


def _makes_message(node, holders, makers=MESSAGE_MAKERS):
    """Whether `node` may evaluate to (or hold) a message: it calls a message maker or uses a name
    that holds one. What str(), render() or an f-string makes of a message is a str: not looked into;
    of a comprehension only its items count."""
    if isinstance(node, ast.JoinedStr):
        return False
    if isinstance(node, (ast.GeneratorExp, ast.ListComp, ast.SetComp)):
        inner = set(holders)
        for gen in node.generators:
            if _makes_message(gen.iter, inner, makers):
                inner |= {n.id for n in ast.walk(gen.target) if isinstance(n, ast.Name)}
        return _makes_message(node.elt, inner, makers)
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("str", "render", "repr", "len"):
            return False
        if isinstance(func, ast.Attribute) and func.attr == "join" and isinstance(func.value, ast.Constant):
            return False                          # str.join: a str (or the TypeError this test looks for)
        if isinstance(func, ast.Name) and func.id in makers:
            return True
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "i18n" \
                and func.attr in makers:
            return True
    if isinstance(node, ast.Name) and node.id in holders:
        return True
    return any(_makes_message(child, holders, makers) for child in ast.iter_child_nodes(node))


def _holders(function, makers=MESSAGE_MAKERS):
    """Names of `function` that may hold messages (assigned one, appended one, loop over one): to a fixpoint."""
    holders = set()
    while True:
        before = len(holders)
        for node in ast.walk(function):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                if _makes_message(node.value, holders, makers):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    holders |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in ("append", "extend", "insert") and isinstance(node.func.value, ast.Name):
                if any(_makes_message(a, holders, makers) for a in node.args):
                    holders.add(node.func.value.id)
            elif isinstance(node, ast.For) and _makes_message(node.iter, holders, makers):
                holders |= {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
        if len(holders) == before:
            return holders


# where failure messages are built (reports render every text before they join it: `written()`)
BUILDERS = ("autograder/suites/", "autograder/checks/", "autograder/reference/", "autograder/grading/",
            "autograder/sandbox/")


def _functions(where=("autograder/",)):
    return [(rel, f) for rel, _text, tree in MODULES if rel.startswith(where) and "/child/" not in rel
            for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]


def message_makers():
    """The message makers, and the package's functions that return what they make (to a fixpoint)."""
    makers = set(MESSAGE_MAKERS)
    while True:
        before = len(makers)
        for _rel, function in _functions():
            holders = _holders(function, makers)
            if any(isinstance(n, ast.Return) and n.value is not None and _makes_message(n.value, holders, makers)
                   for n in ast.walk(function)):
                makers.add(function.name)
        if len(makers) == before:
            return makers


def str_joins_of_messages():
    """'file:line: code' for every `"sep".join(...)` over something that may hold messages."""
    makers, found = message_makers(), []
    for rel, function in _functions(BUILDERS):
        holders = _holders(function, makers)
        for node in ast.walk(function):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join" \
                    and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str) \
                    and any(_makes_message(a, holders, makers) for a in node.args):
                found.append(f"{rel}:{node.lineno}: {ast.unparse(node)[:100]}")
    return sorted(set(found))


def test_no_message_is_joined_with_str_join():
    """str.join raises TypeError on a message: compose with i18n.join(sep, items)."""
    assert str_joins_of_messages() == []


def test_the_lint_sees_a_str_join_over_messages():
    tree = ast.parse("def f(xs):\n    wrong = [_('a {x}', x=x) for x in xs]\n    out = []\n"
                     "    out.append(('k', _('b')))\n    return '; '.join(wrong) + ', '.join(t for k, t in out)\n")
    function = tree.body[0]
    holders = _holders(function)
    assert {"wrong", "out"} <= holders
    joins = [n for n in ast.walk(function) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "join"]
    assert all(any(_makes_message(a, holders) for a in j.args) for j in joins)


# ------------------------------------------------------------------ driven: the torch modules' structure failures
def _render_both(message):
    return {lang: render(message, lang) for lang in i18n.LANGUAGES}


@pytest.mark.parametrize("cls", ["SingleHeadSelfAttention", "MultiHeadSelfAttention"])
def test_every_structure_problem_of_step_7_renders(cls):
    """The issue's TypeError: a wrong-shaped parameter joined its messages with str.join."""
    from autograder.suites import step07_full_module as s7
    init = s7._init(cls)
    expected = s7._expected_params(cls, init)
    names = list(expected)
    wrong = {k: tuple(n + 1 for n in v) for k, v in expected.items()}
    cases = {
        "missing": {k: v for k, v in expected.items() if k != names[0]},
        "wrong shape": dict(expected, **{names[0]: wrong[names[0]]}),
        "two wrong shapes": dict(expected, **{k: wrong[k] for k in names[:2]}),
        "unexpected": dict(expected, extra=(1,)),
        "all three": dict({k: wrong[k] for k in names[1:2]}, **{f"x{i}": (1,) for i in range(14)}),
        "none at all": {},
    }
    for case, shapes in cases.items():
        message = s7._structure_message(cls, init, shapes)
        assert message is not None, case
        texts = _render_both(message)
        assert all(texts.values()), case
        assert texts["en"] != texts["zh"], case


# ------------------------------------------------------------------ driven: every step, answers of every wrong kind
GARBAGE = {
    "none": "return None",
    "raises": "raise ValueError('a wrong answer on purpose')",
    "wrong-shape": "return {lib}.zeros(3)",
    "nan": "return _like(args, float('nan'))",
    "tuple": "return (1, 'two', [3])",
}
HELPERS = {
    "numpy": "import numpy as np\n\ndef _like(args, value):\n"
             "    a = next((x for x in args if hasattr(x, 'shape')), np.zeros(2))\n"
             "    return (np.full(a.shape, value), np.full(a.shape, value))\n",
    "torch": "import numpy as np\nimport torch\n\ndef _like(args, value):\n"
             "    a = next((x for x in args if hasattr(x, 'shape')), torch.zeros(2))\n"
             "    return (torch.full(a.shape, value, dtype=torch.float64), torch.full(a.shape, value, dtype=torch.float64))\n",
}


def garbage_source(step, kind):
    """The step's whole API, every function and method answering `kind` of wrong."""
    from autograder import contract
    lib = "np" if step.framework == "numpy" else "torch"
    body = "    " + GARBAGE[kind].format(lib=lib)
    out = [HELPERS[step.framework]]
    for item in step.api:
        if isinstance(item, contract.Function):
            out.append(f"def {item.name}(*args, **kwargs):\n{body}\n")
        elif isinstance(item, contract.Module):
            out.append(f"class {item.name}(torch.nn.Module):\n    def __init__(self, *a, **k):\n        super().__init__()\n"
                       f"        self.w = torch.nn.Linear(2, 2)\n\n    def forward(self, *args, **kwargs):\n    {body}\n")
        elif isinstance(item, contract.Class):
            methods = "".join(f"    def {m.name}(self, *args, **kwargs):\n    {body}\n\n" for m in item.methods)
            out.append(f"class {item.name}:\n{methods}")
    return "\n".join(out)


def test_every_step_answering_wrong_in_every_way_gets_messages_that_render_in_both_languages(tmp_path):
    """Each step's API answering None, raising, a wrong shape, NaN, a tuple of odd things: every
    check fails (or passes) with a message that renders in English and Chinese; no check reaches
    the student as the grader's internal error."""
    from autograder import contract
    jobs = []
    for step in contract.ALL_STEPS:
        for kind in GARBAGE:
            folder = tmp_path / f"{step.stem}-{kind}"
            folder.mkdir()
            (folder / f"{step.stem}.py").write_text(garbage_source(step, kind))
            jobs += [(folder, step.stem, lang) for lang in i18n.LANGUAGES]
    problems, count = [], 0
    for (folder, _stem, lang), checks in zip(jobs, grade_many(jobs, processes=2, tolerate_render_failures=True)):
        count += len(checks)
        for c in checks:
            if "RENDER FAILED" in c["output"] or "internal error" in c["output"]:
                problems.append(f"{folder.name} {c['number']} {lang}: {c['output'][:300]}")
    assert not problems, "\n".join(problems)
    assert count > 13 * len(GARBAGE) * 5 * len(i18n.LANGUAGES)
