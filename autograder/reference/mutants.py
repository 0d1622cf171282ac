"""Mutants of the reference solutions: every small change a student could make to correct code.

`mutants(stem)` parses solutions/stepNN_<stem>.py and returns one `Mutant` per change, each a
whole module's source differing from the reference at one place. The operators fit tensor code
(the mistakes students make with attention), not generic Python:

  matmul-swap         a @ b            -> b @ a
  transpose-drop      x.T, x.transpose(..), np.swapaxes(x, ..)  -> x
  transpose-add       a @ b            -> a^T @ b, a @ b^T   (last two axes swapped)
  transpose-full      np.swapaxes(K, -1, -2), k.transpose(-2, -1) -> K.T  (every axis reversed)
  matmul-other        a @ b            -> np.dot(a, b), a * b
  axis-change         axis=-1 / dim=-1 -> another axis; a transpose's axes moved by one
  shape-index         K.shape[-1]      -> K.shape[-2] (a different dimension)
  keepdims-flip       keepdims=True    -> False
  term-drop           a - b, a + b     -> a (the max-subtraction of a softmax, a bias, ...)
  sqrt-change         sqrt(d)          -> d, d ** 2, sqrt(another dimension)
  div-mul             a / b <-> a * b
  inplace-arg         y = x - m        -> x -= m; y = x   (the caller's array changed)
  dtype-cast          value            -> value.astype(float64/float32), .double(), .float()
  detach              value            -> value.detach()   (torch: the graph cut)
  projection-drop     self.W_o(x) -> x;  x @ W_O -> x
  weight-reuse        W_K -> W_Q, self.k_proj -> self.q_proj, ...
  slice-off-by-one    a[i:j]           -> a[i+1:j], a[i:j-1], ...
  reshape-for-transpose  x.view(B, T, h, hd).transpose(1, 2) -> x.reshape(B, h, T, hd)
  softmax-naive       torch.softmax(s, dim=-1) -> s.exp() / s.exp().sum(-1, keepdim=True)  (no max subtracted)
  return-swap         return a, b      -> return b, a
  argument-swap       f(a, b)          -> f(b, a)   (calls of the module's own functions)

and, for masks (the second assignment's references; none of the first assignment's has their code):

  compare-change      j <= i           -> j < i, j >= i   (an off-by-one or a flipped triangle)
  mask-invert         ~m               -> m;  masked_fill(m, v), torch.where(m, a, b) -> ~m   (the convention flipped)
  fill-value          masked_fill(m, float('-inf')) -> masked_fill(m, 0.0), masked_fill(m, -1e9)   (same in where)
  masked-fill-drop    s.masked_fill(m, v) -> s   (the mask never applied, or a fully masked row left NaN)
  tri-swap            tril             <-> triu
  diagonal-change     tril(diagonal=k) -> k + 1, k - 1   (tril() -> tril(1), tril(-1))
  unsqueeze-move      m[:, None, None, :] -> m[:, None, :, None]   (a None moved by one: the wrong axis)

and, for the domain the contract names (issue 28):

  argument-ignored    `arg = its default` first thing in the function (causal, block_size, mask, base, ...)
  offset-drop         positions -> arange(len(positions))   (positions numbered from 0)
  empty-row-unmasked  masked_fill(c, -inf) -> c & ~c.all(-1, keepdim=True)   (a row with no allowed key unmasked)

The T_k - T_q offset of an end-aligned causal mask is reached by term-drop (arange(T_q) + (T_k - T_q) ->
arange(T_q): aligned at the start). Mutants are built on the syntax tree (ast) and written back with ast.unparse, so comments are
gone from a mutant; `diff` shows the changed lines against the reference written the same way.
Code between GIVEN_BEGIN and GIVEN_END (a locked cell the step hands the student) is not mutated.
"""
import ast
import copy
import difflib
from dataclasses import dataclass

from autograder import contract

OPERATORS = ("matmul-swap", "transpose-drop", "transpose-add", "transpose-full", "matmul-other", "axis-change", "shape-index", "keepdims-flip",
             "term-drop", "sqrt-change", "div-mul", "inplace-arg", "dtype-cast", "detach",
             "projection-drop", "weight-reuse", "slice-off-by-one", "reshape-for-transpose", "softmax-naive", "return-swap",
             "argument-swap", "compare-change", "mask-invert", "fill-value", "masked-fill-drop", "tri-swap",
             "diagonal-change", "unsqueeze-move")
# The domain (issue 28): an argument ignored (its default used whatever the caller gave), an offset
# dropped (positions numbered from 0) and a mask ignored only in rows where no key is allowed (those rows
# get the unmasked result); a survivor is a region of the contract no check probes. Part of OPERATORS,
# so the audit's default (and its record) runs them; kept named apart for the tests that look at them.
DOMAIN_OPERATORS = ("argument-ignored", "offset-drop", "empty-row-unmasked")
OPERATORS = OPERATORS + DOMAIN_OPERATORS


@dataclass(frozen=True)
class Mutant:
    stem: str          # the step, e.g. "04_softmax"
    number: int        # 1, 2, ... within the step, in source order
    operator: str      # one of OPERATORS
    line: int          # line of the change in the reference
    function: str      # the function (or Class.method) it is in
    change: str        # "x - x_max -> x", readable
    source: str        # the whole mutated module

    @property
    def id(self):
        return f"{self.stem}-m{self.number:03d}"

    def diff(self):
        """A unified diff of the mutant against the reference (both written by ast.unparse)."""
        before = ast.unparse(ast.parse(reference_source(self.stem))).splitlines()
        return "\n".join(difflib.unified_diff(before, self.source.splitlines(), "reference", self.id,
                                              n=1, lineterm=""))


def reference_path(stem):
    """The reference a step's mutants are made from: its assignment's `reference_file` in the registry
    (solutions/stepNN_name.py for the first assignment, solutions/<assignment>/stepNN_name.py for the
    kit's others, an outside assignment's own `references` folder)."""
    return contract.assignment_of_step(stem).reference_file(stem)


def reference_source(stem):
    return reference_path(stem).read_text(encoding="utf-8")


def operators_of(stem):
    """The operators the audit applies to a step: its assignment's `operators`, or every one."""
    return contract.assignment_of_step(stem).operators or OPERATORS


# Code a step gives the student (a locked notebook cell: the decoder's steps 4-6 hand over the blocks of
# steps 1-3 so that each notebook stands alone) is not the student's work, so it is not mutated: the audit
# asks whether the step's hidden suite catches a wrong version of what the student writes, and the given
# code is audited at the step that asks for it. `build` writes these two lines around such a cell in the
# reference (commands/release.py); a reference without them is all the student's.
GIVEN_BEGIN = "# >>> given: a locked cell of the notebook, not the student's code (the audit does not mutate it)"
GIVEN_END = "# <<< end of the given code"


def given_lines(source):
    """The line numbers (1-based) between GIVEN_BEGIN and GIVEN_END lines of a module's source."""
    given, inside = set(), False
    for number, line in enumerate(source.splitlines(), start=1):
        if line.strip() == GIVEN_BEGIN:
            inside = True
        elif line.strip() == GIVEN_END:
            inside = False
        elif inside:
            given.add(number)
    return given


def mutants(stem, operators=OPERATORS):
    """Every mutant of the step's reference, in source order (numbered from 1)."""
    step = contract.step_for_stem(stem)
    return [Mutant(stem, n, *found) for n, found in
            enumerate(mutate(reference_source(stem), step.framework, operators), start=1)]


def mutate(source, framework, operators=OPERATORS):
    """[(operator, line, function, change, mutated source)] for a module's source; `framework`
    ("numpy" or "torch") decides how a transpose or a cast is written."""
    tree = ast.parse(source)
    given = given_lines(source)
    found = []
    seen = {ast.unparse(tree)}
    for site in _Sites(framework).collect(tree):
        if site.operator not in operators or site.line in given:
            continue
        text = site.apply(tree)
        if text in seen:              # two operators making the same program: keep the first
            continue
        seen.add(text)
        found.append((site.operator, site.line, site.function, site.change, text))
    return found


# ------------------------------------------------------------------ where a change can go
@dataclass
class _Site:
    """One change: replace `holder.field[index]` (or `holder.field`) by `new` (a node, or a list of
    statements where the field is a statement list)."""
    operator: str
    holder: ast.AST
    field: str
    index: object          # int into a list field, or None
    new: object
    line: int
    function: str
    change: str

    def apply(self, tree):
        old = getattr(self.holder, self.field)
        if self.index is None:
            setattr(self.holder, self.field, self.new)
        else:
            replaced = list(old)
            replaced[self.index:self.index + 1] = self.new if isinstance(self.new, list) else [self.new]
            setattr(self.holder, self.field, replaced)
        try:
            return ast.unparse(ast.fix_missing_locations(tree))
        finally:
            setattr(self.holder, self.field, old)


def _name(node):
    return ast.unparse(node)


def _call(func, *args, **kwargs):
    return ast.Call(func=func, args=list(args), keywords=[ast.keyword(arg=k, value=v) for k, v in kwargs.items()])


def _attr(value, name):
    return ast.Attribute(value=value, attr=name, ctx=ast.Load())


def _int(value):
    return ast.UnaryOp(op=ast.USub(), operand=ast.Constant(-value)) if value < 0 else ast.Constant(value)


def _int_value(node):
    """The int a node spells (`2`, `-1`), else None."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and type(node.operand.value) is int:
        return -node.operand.value
    return None


TRANSPOSE_METHODS = {"transpose", "swapaxes", "permute", "swapdims"}
TRANSPOSE_FUNCTIONS = {"swapaxes", "transpose", "moveaxis"}
AXIS_KEYWORDS = {"axis", "dim", "axes"}
KEEPDIMS = {"keepdims", "keepdim"}
ARITHMETIC = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
ORDERINGS = {ast.Lt: (ast.LtE, ast.Gt), ast.LtE: (ast.Lt, ast.GtE), ast.Gt: (ast.GtE, ast.Lt),
             ast.GtE: (ast.Gt, ast.LtE)}
MINUS_INF = {"float('-inf')", "-float('inf')", "-math.inf", "-torch.inf", "-np.inf", "float('-Infinity')"}


class _Sites:
    """Walks a module and lists every _Site the operators allow, in source order."""

    def __init__(self, framework):
        self.torch = framework == "torch"
        self.sites = []

    def collect(self, tree):
        self.module_functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                self._function(node, node.name, None)
            elif isinstance(node, ast.ClassDef):
                attrs = sorted({t.attr for n in ast.walk(node) if isinstance(n, ast.Assign) for t in n.targets
                                if isinstance(t, ast.Attribute) and _name(t.value) == "self"
                                and isinstance(n.value, ast.Call) and _name(n.value.func).endswith("Linear")})
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        self._function(item, f"{node.name}.{item.name}", attrs)
        self.sites.sort(key=lambda s: s.line)      # stable: operators keep their order on one line
        return self.sites

    # -------------------------------------------------------------- one function
    def _function(self, fn, where, layers):
        self.where = where
        self.args = [a.arg for a in fn.args.args if a.arg != "self"]
        self.weights = [a for a in self.args if a.startswith("W_")]
        self.layers = layers or []
        self.dims = sorted({t.id for n in ast.walk(fn) if isinstance(n, ast.Assign) for t in _targets(n)
                            if isinstance(t, ast.Name) and _is_dimension(n.value)}
                           | {a for a in self.args if a.startswith("d_") or a in ("num_heads", "d_model")})
        for default in fn.args.defaults:                       # softmax(x, axis=-1): the default axis
            self._axis_constant(fn.args, "defaults", fn.args.defaults.index(default), default)
        self._domain(fn)
        self._empty_rows(fn)
        for parent in ast.walk(fn):
            for field, value in ast.iter_fields(parent):
                if isinstance(value, list):
                    for i, child in enumerate(value):
                        if isinstance(child, ast.AST):
                            self._visit(parent, field, i, child, fn)
                elif isinstance(value, ast.AST):
                    self._visit(parent, field, None, value, fn)

    def _domain(self, fn):
        """argument-ignored: `arg = its default` after the docstring (a causal, block_size, mask or base
        the caller gives is not honoured); offset-drop: `positions` renumbered from 0."""
        body = fn.body
        if not (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)):
            return                                             # only after a docstring: nothing is lost
        named = fn.args.args[len(fn.args.args) - len(fn.args.defaults):]
        for arg, default in zip(named, fn.args.defaults):
            if arg.arg in ("device", "dtype"):
                continue
            assign = ast.Assign([ast.Name(arg.arg, ast.Store())], default, lineno=fn.lineno)
            self._add("argument-ignored", fn, "body", 0, [body[0], assign], body[0],
                      f"{arg.arg} ignored: always {ast.unparse(default)}")
        if "positions" in self.args:
            arange = "torch.arange" if self.torch else "np.arange"
            renumbered = ast.parse(f"positions = {arange}(len(positions))").body[0]
            self._add("offset-drop", fn, "body", 0, [body[0], renumbered], body[0],
                      "positions renumbered from 0 (the offset dropped)")

    def _empty_rows(self, fn):
        """empty-row-unmasked: a -inf masked_fill's condition `c` blocks only rows with an allowed key,
        `c & ~c.all(-1, keepdim=True)`, so a row with none gets the unmasked softmax. Where `c` is a name
        assigned in the function, the change goes right after that assignment (every use sees it: a
        later `masked_fill(c, 0.0)` would otherwise hide it); else in the call itself."""
        if not self.torch:
            return
        fills = [n for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                 and n.func.attr in ("masked_fill", "masked_fill_") and len(n.args) == 2
                 and _name(n.args[1]) in MINUS_INF]
        names = {n.args[0].id for n in fills if isinstance(n.args[0], ast.Name)}
        for parent in ast.walk(fn):
            for field, value in ast.iter_fields(parent):
                if not isinstance(value, list):
                    continue
                for i, stmt in enumerate(value):
                    if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                            and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id in names):
                        c = stmt.targets[0].id
                        after = ast.parse(f"{c} = {c} & ~{c}.all(dim=-1, keepdim=True)").body[0]
                        self._add("empty-row-unmasked", parent, field, i, [stmt, after], stmt,
                                  f"{c}: rows with no allowed key left unmasked")
        for call in fills:
            cond = call.args[0]
            if isinstance(cond, ast.Name):
                continue
            text = _name(cond)
            new_cond = ast.parse(f"({text}) & ~({text}).all(dim=-1, keepdim=True)", mode="eval").body
            args = [new_cond, call.args[1]]
            new = ast.Call(func=call.func, args=args, keywords=call.keywords)
            for parent in ast.walk(fn):
                for field, value in ast.iter_fields(parent):
                    if value is call:
                        self._add("empty-row-unmasked", parent, field, None, new, call,
                                  f"{text}: rows with no allowed key left unmasked")
                    elif isinstance(value, list) and any(v is call for v in value):
                        self._add("empty-row-unmasked", parent, field, value.index(call), new, call,
                                  f"{text}: rows with no allowed key left unmasked")

    def _add(self, operator, holder, field, index, new, node, change):
        self.sites.append(_Site(operator, holder, field, index, new, node.lineno, self.where, change))

    def _visit(self, parent, field, index, node, fn):
        if isinstance(node, ast.stmt):
            self._statement(parent, field, index, node, fn)
        if not isinstance(node, ast.expr) or not hasattr(node, "lineno"):
            return
        if isinstance(parent, ast.arguments):
            return
        if isinstance(node, ast.BinOp):
            self._binop(parent, field, index, node)
        elif isinstance(node, ast.Attribute):
            self._attribute(parent, field, index, node)
        elif isinstance(node, ast.Call):
            self._call(parent, field, index, node)
        elif isinstance(node, ast.Subscript):
            self._subscript(node)
            self._unsqueeze(parent, field, index, node)
        elif isinstance(node, ast.Compare):
            self._compare(parent, field, index, node)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
            self._add("mask-invert", parent, field, index, node.operand, node,
                      f"{_name(node)} -> {_name(node.operand)}")
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in self.weights:
            for other in self.weights:
                if other != node.id:
                    self._add("weight-reuse", parent, field, index, ast.Name(other, ast.Load()), node,
                              f"{node.id} -> {other}")

    # -------------------------------------------------------------- expressions
    def _binop(self, parent, field, index, node):
        left, right = _name(node.left), _name(node.right)
        if isinstance(node.op, ast.MatMult):
            self._add("matmul-swap", parent, field, index, ast.BinOp(node.right, ast.MatMult(), node.left), node,
                      f"{left} @ {right} -> {right} @ {left}")
            self._add("transpose-add", parent, field, index,
                      ast.BinOp(self._swap_last(node.left), ast.MatMult(), node.right), node,
                      f"{left} @ {right} -> {left}^T @ {right}")
            self._add("transpose-add", parent, field, index,
                      ast.BinOp(node.left, ast.MatMult(), self._swap_last(node.right)), node,
                      f"{left} @ {right} -> {left} @ {right}^T")
            self._add("matmul-other", parent, field, index, ast.BinOp(node.left, ast.Mult(), node.right), node,
                      f"{left} @ {right} -> {left} * {right}")
            if not self.torch:
                dot = _call(_attr(ast.Name("np", ast.Load()), "dot"), node.left, node.right)
                self._add("matmul-other", parent, field, index, dot, node, f"{left} @ {right} -> {_name(dot)}")
            if isinstance(node.right, ast.Name) and node.right.id in self.weights:
                self._add("projection-drop", parent, field, index, node.left, node, f"{left} @ {right} -> {left}")
        elif type(node.op) in (ast.Add, ast.Sub):
            sign = ARITHMETIC[type(node.op)]
            self._add("term-drop", parent, field, index, node.left, node, f"{left} {sign} {right} -> {left}")
            if isinstance(node.op, ast.Add):
                self._add("term-drop", parent, field, index, node.right, node, f"{left} + {right} -> {right}")
        elif isinstance(node.op, ast.Div):
            self._add("div-mul", parent, field, index, ast.BinOp(node.left, ast.Mult(), node.right), node,
                      f"{left} / {right} -> {left} * {right}")
        elif isinstance(node.op, ast.Mult):
            self._add("div-mul", parent, field, index, ast.BinOp(node.left, ast.Div(), node.right), node,
                      f"{left} * {right} -> {left} / {right}")

    def _attribute(self, parent, field, index, node):
        if node.attr in ("T", "mT") and isinstance(node.ctx, ast.Load):
            self._add("transpose-drop", parent, field, index, node.value, node, f"{_name(node)} -> {_name(node.value)}")
        if _name(node.value) == "self" and node.attr in self.layers and isinstance(node.ctx, ast.Load):
            for other in self.layers:
                if other != node.attr:
                    self._add("weight-reuse", parent, field, index, _attr(ast.Name("self", ast.Load()), other), node,
                              f"self.{node.attr} -> self.{other}")

    def _call(self, parent, field, index, node):
        func = node.func
        text = _name(node)
        method = func.attr if isinstance(func, ast.Attribute) else None
        owner = _name(func.value) if isinstance(func, ast.Attribute) else None
        # transposes: x.transpose(1, 2), np.swapaxes(K, -1, -2), torch.transpose(x, 0, 1)
        if method in TRANSPOSE_METHODS and owner not in ("np", "numpy", "torch"):
            self._add("transpose-drop", parent, field, index, func.value, node, f"{text} -> {_name(func.value)}")
            if sorted(_int_value(a) for a in node.args) == [-2, -1] if len(node.args) == 2 else False:
                full = _attr(func.value, "T")
                self._add("transpose-full", parent, field, index, full, node, f"{text} -> {_name(full)}")
            self._transpose_axes(node, node.args)
            inner = func.value
            if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) \
                    and inner.func.attr in ("view", "reshape") and len(node.args) == 2:
                a, b = (_int_value(x) for x in node.args)
                shape = list(inner.args)
                if a is not None and b is not None and len(shape) > max(a, b):
                    shape[a], shape[b] = shape[b], shape[a]
                    new = _call(_attr(inner.func.value, "reshape"), *shape)
                    self._add("reshape-for-transpose", parent, field, index, new, node, f"{text} -> {_name(new)}")
        elif method in TRANSPOSE_FUNCTIONS and owner in ("np", "numpy", "torch") and node.args:
            self._add("transpose-drop", parent, field, index, node.args[0], node, f"{text} -> {_name(node.args[0])}")
            if len(node.args) == 3 and sorted(_int_value(a) for a in node.args[1:]) == [-2, -1]:
                full = _attr(node.args[0], "T")
                self._add("transpose-full", parent, field, index, full, node, f"{text} -> {_name(full)}")
            self._transpose_axes(node, node.args[1:])
        # a library softmax written by hand without its max subtraction
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name == "softmax" and owner in ("torch", "F", "nn.functional", "torch.nn.functional") and node.args:
            dim = next((kw.value for kw in node.keywords if kw.arg == "dim"), node.args[1] if len(node.args) > 1 else None)
            if dim is not None:
                e = _call(_attr(node.args[0], "exp"))
                naive = ast.BinOp(e, ast.Div(), _call(_attr(_call(_attr(node.args[0], "exp")), "sum"), dim,
                                                       keepdim=ast.Constant(True)))
                self._add("softmax-naive", parent, field, index, naive, node, f"{text} -> {_name(naive)}")
        self._mask_call(parent, field, index, node, method, owner, name)
        # a projection layer: self.W_o(x) -> x
        if isinstance(func, ast.Attribute) and _name(func.value) == "self" and func.attr in self.layers and node.args:
            self._add("projection-drop", parent, field, index, node.args[0], node, f"{text} -> {_name(node.args[0])}")
        # sqrt(d) -> d, d ** 2, sqrt(another dimension)
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name == "sqrt" and len(node.args) == 1:
            arg = node.args[0]
            self._add("sqrt-change", parent, field, index, arg, node, f"{text} -> {_name(arg)}")
            square = ast.BinOp(arg, ast.Pow(), ast.Constant(2))
            self._add("sqrt-change", parent, field, index, square, node, f"{text} -> {_name(square)}")
            for dim in self.dims:
                if dim != _name(arg):
                    other = ast.Call(func=func, args=[ast.Name(dim, ast.Load())], keywords=[])
                    self._add("sqrt-change", parent, field, index, other, node, f"{text} -> {_name(other)}")
        # keyword axes and keepdims
        for i, kw in enumerate(node.keywords):
            if kw.arg in AXIS_KEYWORDS:
                self._axis_constant(node, "keywords", i, kw.value, keyword=kw.arg)
                if isinstance(kw.value, ast.Name):       # axis=axis: the argument ignored, or no axis at all
                    self._add("axis-change", node, "keywords", i, ast.keyword(arg=kw.arg, value=_int(-1)), node,
                              f"{kw.arg}={kw.value.id} -> {kw.arg}=-1")
                    self._add("axis-change", node, "keywords", i, [], node,
                              f"{_name(node)}: {kw.arg}= dropped (the whole array)")
            if kw.arg in KEEPDIMS and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, bool):
                flipped = ast.keyword(arg=kw.arg, value=ast.Constant(not kw.value.value))
                self._add("keepdims-flip", node, "keywords", i, flipped, node,
                          f"{kw.arg}={kw.value.value} -> {kw.arg}={not kw.value.value}")
        # a call of the module's own function: swap two neighbouring arguments
        if isinstance(func, ast.Name) and func.id in self.module_functions:
            for i in range(len(node.args) - 1):
                args = list(node.args)
                args[i], args[i + 1] = args[i + 1], args[i]
                new = ast.Call(func=func, args=args, keywords=node.keywords)
                self._add("argument-swap", parent, field, index, new, node, f"{text} -> {_name(new)}")

    # -------------------------------------------------------------- masks
    def _mask_call(self, parent, field, index, node, method, owner, name):
        """masked_fill, torch.where, tril and triu: the mask's convention, its fill value, its triangle."""
        text = _name(node)
        fill = method in ("masked_fill", "masked_fill_") and len(node.args) == 2
        where = name == "where" and owner == "torch" and len(node.args) == 3
        if fill or where:
            cond = node.args[0]
            if not (isinstance(cond, ast.UnaryOp) and isinstance(cond.op, ast.Invert)):    # ~~m: the drop does it
                flipped = ast.UnaryOp(ast.Invert(), cond)
                self._replace_call_arg(parent, field, index, node, 0, flipped, "mask-invert",
                                       f"{text}: {_name(cond)} -> {_name(flipped)}")
            for i in ((1,) if fill else (1, 2)):
                value = node.args[i]
                if _name(value) in MINUS_INF:
                    for other in (0.0, -1e9):
                        self._replace_call_arg(parent, field, index, node, i, ast.Constant(other), "fill-value",
                                               f"{text}: {_name(value)} -> {other}")
        if fill and method == "masked_fill":
            self._add("masked-fill-drop", parent, field, index, node.func.value, node,
                      f"{text} -> {_name(node.func.value)}")
        if name in ("tril", "triu") and (owner == "torch" or (method and owner not in ("np", "numpy"))):
            other = "triu" if name == "tril" else "tril"
            func = _attr(node.func.value, other) if isinstance(node.func, ast.Attribute) else ast.Name(other, ast.Load())
            swapped = ast.Call(func=func, args=node.args, keywords=node.keywords)
            self._add("tri-swap", parent, field, index, swapped, node, f"{text} -> {_name(swapped)}")
            position = 1 if owner == "torch" else 0          # torch.tril(x, k) or x.tril(k)
            keyword = next((i for i, kw in enumerate(node.keywords) if kw.arg == "diagonal"), None)
            current = (node.keywords[keyword].value if keyword is not None
                       else node.args[position] if len(node.args) > position else ast.Constant(0))
            for delta in (1, -1):
                v = _int_value(current)
                moved = _int(v + delta) if v is not None else ast.BinOp(current, ast.Add() if delta > 0 else ast.Sub(),
                                                                         ast.Constant(1))
                args, keywords = list(node.args), list(node.keywords)
                if keyword is not None:
                    keywords[keyword] = ast.keyword(arg="diagonal", value=moved)
                elif len(args) > position:
                    args[position] = moved
                else:
                    keywords.append(ast.keyword(arg="diagonal", value=moved))
                new = ast.Call(func=node.func, args=args, keywords=keywords)
                self._add("diagonal-change", parent, field, index, new, node, f"{text} -> {_name(new)}")

    def _replace_call_arg(self, parent, field, index, call, i, value, operator, change):
        args = list(call.args)
        args[i] = value
        self._add(operator, parent, field, index, ast.Call(func=call.func, args=args, keywords=call.keywords), call,
                  change)

    def _compare(self, parent, field, index, node):
        """a <= b -> a < b (off by one), a >= b (the other triangle); one ordering comparison only."""
        if len(node.ops) != 1 or type(node.ops[0]) not in ORDERINGS:
            return
        for other in ORDERINGS[type(node.ops[0])]:
            new = ast.Compare(left=node.left, ops=[other()], comparators=node.comparators)
            self._add("compare-change", parent, field, index, new, node, f"{_name(node)} -> {_name(new)}")

    def _unsqueeze(self, parent, field, index, node):
        """x[:, None, None, :] -> x[:, None, :, None]: each None swapped with a neighbouring `:`."""
        if not isinstance(node.slice, ast.Tuple):
            return
        elts = node.slice.elts
        kinds = ["none" if isinstance(e, ast.Constant) and e.value is None else
                 "all" if isinstance(e, ast.Slice) and e.lower is None and e.upper is None and e.step is None else
                 "other" for e in elts]
        if "other" in kinds or "none" not in kinds or "all" not in kinds:
            return
        for i in range(len(elts) - 1):
            if kinds[i] != kinds[i + 1]:
                moved = list(elts)
                moved[i], moved[i + 1] = moved[i + 1], moved[i]
                new = ast.Subscript(value=node.value, slice=ast.Tuple(moved, ast.Load()), ctx=node.ctx)
                self._add("unsqueeze-move", parent, field, index, new, node, f"{_name(node)} -> {_name(new)}")

    def _transpose_axes(self, call, axes):
        """Each constant axis of a transpose moved by one (where it stays distinct from the others)."""
        values = [_int_value(a) for a in axes]
        for a in axes:
            v = _int_value(a)
            if v is None:
                continue
            for moved in (v - 1, v + 1):
                if moved in values or (v < 0 <= moved) or (v >= 0 > moved):
                    continue
                self._replace_arg(call, a, _int(moved), f"{_name(call)}: axis {v} -> {moved}")

    def _replace_arg(self, call, arg, new, change):
        self._add("axis-change", call, "args", call.args.index(arg), new, arg, change)

    def _axis_constant(self, holder, field, index, value, keyword=None):
        v = _int_value(value)
        if v is None:
            return
        for other in {-1: (-2, 0), -2: (-1,), 0: (-1, 1), 1: (0, 2), 2: (1,)}.get(v, ()):
            new = ast.keyword(arg=keyword, value=_int(other)) if keyword else _int(other)
            label = f"{keyword}={v} -> {keyword}={other}" if keyword else f"default axis {v} -> {other}"
            self.sites.append(_Site("axis-change", holder, field, index, new, value.lineno, self.where, label))

    def _subscript(self, node):
        value = _name(node.value)
        if value.endswith(".shape"):
            v = _int_value(node.slice)
            if v is not None:
                for other in (v - 1, v + 1):
                    if (v < 0) == (other < 0):
                        self._add("shape-index", node, "slice", None, _int(other), node,
                                  f"{value}[{v}] -> {value}[{other}]")
            return
        slices = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        for s in slices:
            if not isinstance(s, ast.Slice):
                continue
            for bound in ("lower", "upper"):
                b = getattr(s, bound)
                if b is None:
                    continue
                for delta in (1, -1):
                    new = ast.BinOp(b, ast.Add() if delta > 0 else ast.Sub(), ast.Constant(1))
                    self.sites.append(_Site("slice-off-by-one", s, bound, None, new, node.lineno, self.where,
                                            f"{_name(node)}: {bound} bound {'+' if delta > 0 else '-'} 1"))

    # -------------------------------------------------------------- statements
    def _statement(self, parent, field, index, stmt, fn):
        value = getattr(stmt, "value", None)
        if isinstance(stmt, ast.Return) and isinstance(value, ast.Tuple) and len(value.elts) > 1:
            for i in range(len(value.elts) - 1):
                elts = list(value.elts)
                elts[i], elts[i + 1] = elts[i + 1], elts[i]
                self._add("return-swap", parent, field, index, ast.Return(ast.Tuple(elts, ast.Load())), stmt,
                          f"return {_name(value)} -> return {_name(ast.Tuple(elts, ast.Load()))}")
        if isinstance(stmt, (ast.Assign, ast.Return)) and value is not None and not _is_dimension(value):
            elements = value.elts if isinstance(value, ast.Tuple) else [value]
            for i, element in enumerate(elements):
                if isinstance(element, ast.Constant) or (isinstance(element, ast.Name) and element.id not in
                                                         self.arrays(fn)):
                    continue               # self.d_model = d_model: a number, not an array
                layer = isinstance(element, ast.Call) and _name(element.func).endswith("Linear")
                for wrap, label in self._casts():
                    if layer and label == ".detach()":
                        continue           # a layer has no .detach()
                    self._wrapped(parent, field, index, stmt, elements, i, wrap(element),
                                  "detach" if label == ".detach()" else "dtype-cast", f"{_name(element)} -> {label}")
        # x - m with x an argument: x -= m first (the caller's array changes), then x
        for node in ast.walk(stmt) if isinstance(stmt, (ast.Assign, ast.Return)) else ():
            if isinstance(node, ast.BinOp) and type(node.op) in ARITHMETIC and isinstance(node.left, ast.Name) \
                    and node.left.id in self.args:
                self._inplace(parent, field, index, stmt, node)

    def arrays(self, fn):
        """The names in `fn` that hold arrays: its array arguments and every name assigned from an
        expression that is not a size."""
        assigned = {t.id for n in ast.walk(fn) if isinstance(n, ast.Assign) and not _is_dimension(n.value)
                    for t in _targets(n) if isinstance(t, ast.Name)}
        return assigned | {a for a in self.args if a not in self.dims and a not in ("axis", "num_heads", "d_k")}

    def _casts(self):
        if self.torch:
            return ((lambda e: _call(_attr(e, "double")), ".double()"),
                    (lambda e: _call(_attr(e, "float")), ".float()"),
                    (lambda e: _call(_attr(e, "detach")), ".detach()"))
        f64 = _attr(ast.Name("np", ast.Load()), "float64")
        f32 = _attr(ast.Name("np", ast.Load()), "float32")
        return ((lambda e: _call(_attr(e, "astype"), f64), ".astype(np.float64)"),
                (lambda e: _call(_attr(e, "astype"), f32), ".astype(np.float32)"))

    def _wrapped(self, parent, field, index, stmt, elements, i, new_element, operator, change):
        new = copy.copy(stmt)
        if isinstance(stmt.value, ast.Tuple):
            elts = list(elements)
            elts[i] = new_element
            new.value = ast.Tuple(elts, ast.Load())
        else:
            new.value = new_element
        self._add(operator, parent, field, index, new, stmt, change)

    def _inplace(self, parent, field, index, stmt, binop):
        if index is None:
            return
        name = binop.left.id
        aug = ast.AugAssign(target=ast.Name(name, ast.Store()), op=binop.op, value=binop.right)
        rewritten = _ReplaceNode(binop, ast.Name(name, ast.Load())).visit(copy.deepcopy(stmt))
        sign = ARITHMETIC[type(binop.op)]
        self._add("inplace-arg", parent, field, index, [aug, rewritten], stmt,
                  f"{_name(binop)} -> {name} {sign}= {_name(binop.right)}; then {name}")

    def _swap_last(self, node):
        if self.torch:
            return _call(_attr(node, "transpose"), _int(-2), _int(-1))
        return _call(_attr(ast.Name("np", ast.Load()), "swapaxes"), node, _int(-1), _int(-2))


class _ReplaceNode(ast.NodeTransformer):
    """Replaces the node equal (by its text) to `old` by `new` in a copied statement."""

    def __init__(self, old, new):
        self.old, self.new, self.done = ast.dump(old), new, False

    def visit(self, node):
        if not self.done and isinstance(node, ast.expr) and ast.dump(node) == self.old:
            self.done = True
            return self.new
        return super().visit(node)


def _targets(assign):
    for t in assign.targets:
        yield from (t.elts if isinstance(t, ast.Tuple) else [t])


def _is_dimension(value):
    """Does this assigned value spell a size (x.shape, D // h, self.num_heads, ...)?"""
    if isinstance(value, ast.Tuple):
        return all(_is_dimension(e) for e in value.elts)
    text = _name(value)
    if ".shape" in text or "//" in text:
        return True
    return (isinstance(value, ast.Attribute) and _name(value.value) == "self"
            and not value.attr.startswith("W_") and not value.attr.endswith("proj"))
