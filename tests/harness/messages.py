"""The package's student-facing messages as its source writes them (tests/test_i18n.py): every module's syntax tree and every msgid with where it is. Read by tests/test_i18n.py and tests/test_messages_render.py."""
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

PACKAGE = ROOT / "autograder"
MARKERS = ("_", "N_")
CJK = re.compile("[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")

# Where student-facing text goes: {callable name: index of the text argument}. `skip` is
# pytest.skip (its reason is shown as the skipped check's message).
SINKS = {"CheckFailed": 0, "StudentProblem": 0, "BadReply": 0, "BadSubmission": 0, "error_results": 0,
         "note": 1, "skip": 0, "expect_finite": 2}
# functions whose return value is a student-facing message
MESSAGE_FUNCTIONS = ("student_message", "describe", "describe_value")


def _modules():
    """(relative path, source, tree) of every module of the package."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "__pycache__" not in path.parts:
            text = path.read_text(encoding="utf-8")
            out.append((path.relative_to(ROOT).as_posix(), text, ast.parse(text)))
    return out


MODULES = _modules()


def _name(func):
    """`f` for f(...), `attr` for x.attr(...)."""
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _calls(tree, names):
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
            and n.func.id in names]


def _check_titles(tree):
    """(title, line) of each graded check in a suite: `name=` of @check(...), else its docstring's first line
    (as grading.GradingPlugin._record takes it)."""
    out = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef):
            continue
        for deco in fn.decorator_list:
            if isinstance(deco, ast.Call) and _name(deco.func) == "check":
                named = next((k.value for k in deco.keywords if k.arg == "name"), None)
                if isinstance(named, ast.Constant) and named.value:
                    out.append((named.value, fn.lineno))
                elif ast.get_docstring(fn):
                    out.append((ast.get_docstring(fn).strip().splitlines()[0].strip(), fn.lineno))
    return out


def collect():
    """({msgid: [where]}, [problems]) over the whole package: the messages are the template's
    (grader_i18n.extract); the problems, calls whose message is not one string literal."""
    msgids = {m: [f"{f}:{line}" + (" (check title)" if kind == "title" else "") for f, line, kind in where]
              for m, where in grader_i18n.extract().items()}
    problems = []
    for rel, _text, tree in MODULES:
        for call in _calls(tree, MARKERS):
            first = call.args[0] if call.args else None
            if not (isinstance(first, ast.Constant) and isinstance(first.value, str)) or len(call.args) != 1:
                problems.append(f"{rel}:{call.lineno}: {call.func.id}() needs one string literal as its message "
                                f"(the fields as keywords), not {ast.unparse(first) if first else 'nothing'}")
    return msgids, problems


MSGIDS, PROBLEMS = collect()


def _read_po(path):
    from babel.messages.pofile import read_po
    with open(path, "rb") as f:
        return read_po(f)


PO = _read_po(i18n.catalogue_path("zh"))
ZH = {m.id: m.string for m in PO if m.id}          # every entry, translated or not


def fields(text):
    """The names of the {fields} of a format string (a format spec's own fields included)."""
    names = set()
    for _literal, name, spec, _conv in string.Formatter().parse(text):
        if name is not None:
            names.add(name)
            names |= fields(spec or "")
    return names


def _where(msgid):
    return ", ".join(MSGIDS[msgid][:3])


# ------------------------------------------------------------------ text built without _()
def _text_parts(node):
    """The parts of an expression that become its text: operands, f-string pieces, branches, the items
    a `.join()` joins; not the arguments of other calls (`describe(["softmax-wrong-axis"])` shows
    what describe returns, `err.get("traceback")` a value, not the key), nor `_()`/`translate()`."""
    if isinstance(node, ast.Call):
        if _name(node.func) in ("join", "format", "str"):
            return [node.func, *node.args] if isinstance(node.func, ast.Attribute) else list(node.args)
        return []
    if isinstance(node, ast.Attribute):
        return [node.value]
    if isinstance(node, ast.IfExp):          # `a if found else b`: the condition is not shown
        return [node.body, node.orelse]
    return list(ast.iter_child_nodes(node))


def _has_words(node):
    """The English words of a literal or f-string that become text outside any `_()`, or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.search("[A-Za-z]{2}", node.value):
        return node.value
    for child in _text_parts(node):
        found = _has_words(child)
        if found:
            return found
    return None


def _assignments(function):
    """{name: [value expressions]} assigned in `function`'s own body (not in nested functions)."""
    out = {}
    stack = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out.setdefault(target.id, []).append(node.value)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            out.setdefault(node.target.id, []).append(node.value)
        stack.extend(ast.iter_child_nodes(node))
    return out


def _names_outside_translation(node):
    """The local names whose text `node` shows, except through `_()`/`translate()`: a field's value may be
    code (`what="softmax(x)"`); only text that bypasses the translation must not be English."""
    names = {node.id} if isinstance(node, ast.Name) else set()
    for child in _text_parts(node):
        names |= _names_outside_translation(child)
    return names


def _untranslated(expr, assigned, seen=()):
    """English words that reach a student through `expr`, following the local names it uses."""
    found = _has_words(expr)
    if found:
        return found
    for name in _names_outside_translation(expr) - set(seen):
        for value in assigned.get(name, []):
            found = _untranslated(value, assigned, (*seen, name))
            if found:
                return found
    return None


def _functions(tree):
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
