"""Every student-facing message exists in English and in Simplified Chinese.

The English text is the msgid, written in the code inside `_()` (or `N_()` for text defined at
import time, translated later with `translate()`); the Chinese is in the gettext catalogue
autograder/locale/zh/LC_MESSAGES/grader.po. This test reads the package's source (ast, as
autograder/commands/grader_i18n.py extracts the template), so a message added without a
translation, a translation left behind by a message that changed, a stale template or a
student-facing text built without `_()` fails here, named with its file and line. A check's title
(the first line of its docstring, or `name=`) is shown to students too: it is a msgid as well.
"""
import ast
import json
import re
import string
from pathlib import Path

import numpy as np
import pytest

from autograder import i18n
from autograder.commands import grader_i18n
from autograder.i18n import Concat, Message, _, from_data, join, render, to_data
from autograder.reference import misconceptions
from autograder.sandbox.problems import StudentCrashed, StudentRaised, StudentTimedOut
from conftest import ROOT
from harness.messages import (CJK, MESSAGE_FUNCTIONS, MODULES, MSGIDS, PO, PROBLEMS, SINKS, ZH, _assignments, _calls,
                              _functions, _name, _untranslated, _where, fields)


# ------------------------------------------------------------------ completeness
def test_the_package_has_messages_to_check():
    # guards the test itself: an empty scan would pass every check below
    assert len(MSGIDS) > 100 and len(ZH) > 100
    assert misconceptions.CATALOGUE["scale-missing"].diagnosis in MSGIDS
    # _() inside an f-string's braces (which Babel's extractor skips) and a check title are found
    assert "What your code printed:" in MSGIDS and "Returns (Q, K, V) with shapes (..., T, d_k), (..., T, d_k), (..., T, d_v)" in MSGIDS


def test_the_template_is_up_to_date():
    """autograder/locale/grader.pot is what `python -m autograder.commands.grader_i18n` writes from the code."""
    assert grader_i18n.TEMPLATE.read_text(encoding="utf-8") == grader_i18n.rendered_template(), (
        "stale template: run `python -m autograder.commands.grader_i18n` (it updates grader.po too), then translate")


def test_every_message_is_a_literal():
    assert not PROBLEMS, "\n".join(PROBLEMS)


def test_every_message_has_a_chinese_translation():
    missing = sorted(m for m in MSGIDS if not ZH.get(m))
    fuzzy = sorted(m.id for m in PO if m.id and m.fuzzy)
    assert not missing, "no Chinese in grader.po for:\n" + "\n".join(f"  {m!r}  ({_where(m)})" for m in missing)
    assert not fuzzy, "fuzzy (unchecked) translations in grader.po:\n" + "\n".join(f"  {m!r}" for m in fuzzy)
    assert i18n.catalogue("zh") == {m: t for m, t in ZH.items() if t}       # what the grader reads


def test_no_translation_is_left_without_its_message():
    orphans = sorted(m for m in ZH if m not in MSGIDS)
    assert not orphans, "Chinese for a message no code has (changed or removed?):\n" + "\n".join(
        f"  {m!r}" for m in orphans)


def test_translations_keep_the_fields_and_are_chinese():
    wrong = []
    for msgid, text in ZH.items():
        if not text:
            continue
        try:
            if fields(msgid) != fields(text):
                wrong.append(f"{msgid!r}: fields {sorted(fields(msgid))} != {sorted(fields(text))} in {text!r}")
        except ValueError as exc:          # unbalanced braces
            wrong.append(f"{msgid!r} / {text!r}: {exc}")
        if not CJK.search(text):
            wrong.append(f"{msgid!r}: {text!r} has no Chinese in it")
    assert not wrong, "\n".join(wrong)


def test_every_call_fills_exactly_its_fields():
    """A field without its keyword would be a KeyError at grading time; a keyword without its field a
    value the student never sees."""
    wrong = []
    for rel, _text, tree in MODULES:
        for call in _calls(tree, ("_",)):
            if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
                given = {k.arg for k in call.keywords}
                if None in given:               # **fields: cannot be told statically
                    continue
                if given != fields(call.args[0].value):
                    wrong.append(f"{rel}:{call.lineno}: fields {sorted(fields(call.args[0].value))}, "
                                 f"keywords {sorted(given)}")
    assert not wrong, "\n".join(wrong)


def test_student_facing_text_goes_through_translation():
    """CheckFailed(...), note(...), skip reasons, the sandbox's problems and their student_message():
    no English literal or f-string reaches them except through `_()`."""
    bad = []
    for rel, _text, tree in MODULES:
        for function in _functions(tree):
            assigned = _assignments(function)
            texts = [(n, n.args[SINKS[_name(n.func)]]) for n in ast.walk(function)
                     if isinstance(n, ast.Call) and _name(n.func) in SINKS and len(n.args) > SINKS[_name(n.func)]]
            if function.name in MESSAGE_FUNCTIONS:
                texts += [(n, n.value) for n in ast.walk(function) if isinstance(n, ast.Return) and n.value]
            for node, expr in texts:
                words = _untranslated(expr, assigned)
                if words:
                    bad.append(f"{rel}:{node.lineno}: {words!r} reaches the student without _()")
    assert not bad, "\n".join(sorted(set(bad)))


def test_the_lint_catches_untranslated_text():
    # the rule above must be able to fail: a literal, an f-string and a name built from one
    code = ('def f(what):\n    raise CheckFailed(f"{what} is wrong")\n'
            'def g():\n    msg = "plain English"\n    msg += _(" fine")\n    raise CheckFailed(msg)\n'
            'def h(what):\n    raise CheckFailed(_("{what} is wrong", what=what) + "\\n")\n'
            'def k(found):\n    raise CheckFailed(_("x") + describe(["scale-missing"]), ["scale-missing"])\n'
            'def m(names):\n    raise CheckFailed(", ".join(["missing"] + names))\n')
    tree = ast.parse(code)
    found = {fn.name: _untranslated(next(n for n in ast.walk(fn) if isinstance(n, ast.Call)
                                         and _name(n.func) == "CheckFailed").args[0], _assignments(fn))
             for fn in _functions(tree)}
    assert found == {"f": " is wrong", "g": "plain English", "h": None, "k": None, "m": "missing"}


def test_underscore_is_not_shadowed_where_it_translates():
    """`got, _ = ...` in a function that also calls `_()` makes `_` a local: the call then fails."""
    bad = []
    for rel, _text, tree in MODULES:
        for function in _functions(tree):
            if not _calls(function, ("_",)):
                continue
            stack = list(function.body)
            while stack:
                node = stack.pop()
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
                                     ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                    continue        # their own scope
                if isinstance(node, ast.Name) and node.id == "_" and isinstance(node.ctx, ast.Store):
                    bad.append(f"{rel}:{node.lineno}: `_` assigned in {function.name}(), which calls _()")
                stack.extend(ast.iter_child_nodes(node))
    assert not bad, "\n".join(bad)


# ------------------------------------------------------------------ the language at work
def test_a_message_is_written_in_the_language_asked_for():
    """A message is made once, in no language, and written in any (render), or in the current
    language by str(); what the student's code said stays as it was."""
    stub = StudentRaised("softmax(...)", {"type": "NotImplementedError", "message": "Step 4: implement softmax"})
    crash = StudentCrashed("softmax(...)", -11, "")
    slow = StudentTimedOut("softmax(...)", 2)
    messages = [stub.student_message(), crash.student_message(), slow.student_message(),
                misconceptions.describe(["scale-missing"])]
    english, chinese = [render(m, "en") for m in messages], [render(m, "zh") for m in messages]
    with i18n.language("zh"):
        assert [str(m) for m in messages] == chinese and f"{messages[0]}" == chinese[0]
    assert i18n.get_language() == "en" and [str(m) for m in messages] == english   # the block restores it
    assert "still a stub" in english[0] and "crashed (signal 11, SIGSEGV)" in english[1]
    for en, zh_text in zip(english, chinese):
        assert CJK.search(zh_text) and not CJK.search(en)
    assert "NotImplementedError: Step 4: implement softmax" in chinese[0] and "SIGSEGV" in chinese[1]
    assert ZH[misconceptions.CATALOGUE["scale-missing"].diagnosis] in chinese[3] and "Likely cause" not in chinese[3]


def test_messages_are_data_and_compose():
    """Fields are JSON-safe (numpy's numbers and shapes as they would print); + and join() compose
    without rendering; to_data/from_data give the same message back, through JSON."""
    shape = _("{what} has shape {got}; expected {shape}.", what=_("the weights"), got=(2, 3), shape=(3, 2))
    tolerance = _("{x:g} and {y}", x=np.float64(0.25), y=np.float32(0.1))
    text = shape + "\n" + join(", ", ["a", tolerance]) + "\n" + _("Passed.")
    assert isinstance(shape, Message) and isinstance(text, Concat) and join(", ", ["a", "b"]) == "a, b"
    assert dict(tolerance.fields) == {"x": 0.25, "y": float(np.float32(0.1))}      # as str.format writes float32
    for template, value in (("{v}", np.float32(0.1)), ("{v:.3g}", np.float32(0.1)), ("{v:,}", np.int64(10 ** 6)),
                            ("{v}", (np.int64(2), 3)), ("{v}", np.float64(1e-17)), ("{v:g}", np.float16(3.5)),
                            ("{v}", ValueError("bad")), ("{v}", True), ("{v}", None)):
        assert render(Message(template, (("v", i18n._field(value, ":" in template)),))) == template.format(v=value)
    assert render(text, "en") == "the weights has shape (2, 3); expected (3, 2).\na, 0.25 and 0.10000000149011612\nPassed."
    data = json.loads(json.dumps(to_data(text)))
    assert from_data(data) == text and render(from_data(data), "zh") == render(text, "zh")
    assert CJK.search(render(text, "zh")) and "(2, 3)" in render(text, "zh")
    with pytest.raises(TypeError):
        ", ".join([shape])                  # str.join would render it now: use join()
    with pytest.raises(ValueError):         # read back from a file, a template may only fill its fields in
        from_data({"msgid": "{x.__class__}", "fields": {"x": 1}})
    with pytest.raises(ValueError):
        from_data({"msgid": "Passed.", "extra": 1})
    nested = "x"
    for _level in range(30):
        nested = [nested, "y"]
    with pytest.raises(ValueError):
        from_data(nested)


def test_an_unknown_language_is_refused():
    with pytest.raises(ValueError):
        i18n.set_language("fr")
    assert i18n.get_language() == "en"
