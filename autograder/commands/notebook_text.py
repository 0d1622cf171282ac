"""What a student reads in a notebook, found as messages: the pieces notebook_i18n translates.

  - markdown cells: one message per paragraph, heading, list item, table cell or blockquote
    paragraph; the markdown around it (`## `, `* `, `|`, `> `) stays outside the message, the
    lines of a paragraph are joined with spaces (as in sphinx-intl's catalogues); a fenced block
    is one message, line by line;
  - code cells, found with `tokenize` and `ast`: comments (consecutive comment lines are one
    message), docstrings (one message per paragraph), and the string literals a student reads:
    assertion messages, `print` and exception arguments, a loop's printed labels, and any other
    literal that reads as a phrase (a hint in a variable, a message a helper returns, a dict of
    mistakes' descriptions) unless it is code: compared, looked up, a pattern, an argument's
    default, or equal to such a string elsewhere in the notebook. The msgid of a string is its text
    as written between the quotes, escapes and f-string `{fields}` included.
Everything else is code and stays as it is; nbgrader's solution and hidden-test regions are not
extracted (the release removes them).

Each message sits in a `Span` of the cell's source, which `apply` renders with a translation.
`code_shape` is what a translation may not change: the cell's syntax tree with its text blanked.
"""
import ast
import inspect
import io
import re
import tokenize
from dataclasses import dataclass


# ------------------------------------------------------------------ what counts as text
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
_MATH = re.compile(r"\$\$.+?\$\$|\$[^$\n]+?\$", re.S)
_HTML_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_LINK_TARGET = re.compile(r"\]\(([^)\s]+)\)")
_ESCAPE = re.compile(r"\\(?:N\{[^}]*\}|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|.)", re.S)
_WORD = re.compile(r"(?<![\w.])[A-Za-z]{2,}(?![\w(])")
NBGRADER_MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS",
                    "BEGIN MARK SCHEME", "END MARK SCHEME")
PRAGMAS = re.compile(r"^\s*(noqa|type:|pragma|fmt:|pylint:)")


def format_fields(text):
    """The `{fields}` of a str.format / f-string text, as written ("{{" is a literal brace)."""
    found, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("{{", i) or text.startswith("}}", i):
            i += 2
        elif text[i] == "{":
            depth, j = 1, i + 1
            while j < n and depth:
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                j += 1
            found.append(text[i:j])
            i = j
        else:
            i += 1
    return found


_QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"")


def _without_fields(text):
    """`text` with its {fields} cut out, the string literals inside them kept (printed labels:
    f"{'max weight':>10}")."""
    for f in format_fields(text):
        text = text.replace(f, " " + " ".join(q[1:-1] for q in _QUOTED.findall(f)) + " ", 1)
    return text


def normalised_field(f):
    """A {field} with the string literals inside it emptied: what a translation must keep."""
    return _QUOTED.sub("''", f)


def has_words(text, code=False):
    """Whether `text` holds prose: a word of two letters or more outside code spans, math, tags,
    link targets, double-quoted words (a comment `# "The"` labels a token) and, in code,
    escapes, that is not a name with a dot, digit or underscore or a call. In a code string the
    {fields} are left out but labels quoted inside them count. "(B, T, D)", "`W_Q`", "x @ W_Q"
    and "softmax(x)" hold none."""
    for pattern in (_CODE_SPAN, _MATH, _HTML_TAG, _LINK_TARGET):
        text = pattern.sub(" ", text)
    if code:
        text = _ESCAPE.sub(" ", _without_fields(text))
    text = re.sub(r'"[^"\n]*"', " ", text)
    text = re.sub(r"[A-Za-z_]\w*(\.\w+)+|\w*[_\d]\w*", " ", text)     # dotted names, snake_case, x1
    return bool(_WORD.search(text))


def invariants(msgid, kind):
    """What a translation must keep exactly, for a message of `kind`: a sorted list of the
    backtick code spans, LaTeX, HTML tags, link targets and, in code strings, the `{fields}` and
    escapes (`\\n`). tests/commands/test_notebook_translation.py holds every entry to it."""
    kept = [m.group(0) for m in _CODE_SPAN.finditer(msgid)]
    kept += [m.group(0) for m in _MATH.finditer(_CODE_SPAN.sub(" ", msgid))]
    kept += _HTML_TAG.findall(msgid) + _LINK_TARGET.findall(msgid)
    if kind == "string":
        kept += [normalised_field(f) for f in format_fields(msgid)] + _ESCAPE.findall(msgid)
    return sorted(kept)


# ------------------------------------------------------------------ pieces of a cell
@dataclass
class Span:
    """A stretch of a cell's source that holds messages: source[start:end] is replaced by
    render(tr), where tr(msgid) is the translation of one message (msgid itself for English)."""
    start: int
    end: int
    msgids: list
    kind: str                      # markdown | literal | comment | docstring | string
    render: object
    kinds: list = None             # each message's kind, when they differ (a blockquote's)


# ------------------------------------------------------------------ markdown
_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6}\s+)(.*)$")
_ITEM = re.compile(r"^(\s*(?:[*+-]|\d+[.)])\s+)(.*)$")
_TABLE = re.compile(r"^\s*\|")
_QUOTE = re.compile(r"^ {0,3}> ?")
_RULE = re.compile(r"^\s*([-*_])(\s*\1){2,}\s*$")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?(\s*:?-+:?\s*\|)+\s*:?-*:?\s*$")


def _unit(kind, text, start, end, before="", after=""):
    """A span whose text (one message) sits between `before` and `after`, kept as they are."""
    return Span(start, end, [text], kind, lambda tr: before + tr(text) + after)


def markdown_spans(source):
    """The messages of a markdown cell, each a Span (see the module docstring)."""
    lines = source.split("\n")
    starts, pos = [], 0
    for line in lines:
        starts.append(pos)
        pos += len(line) + 1
    spans, i = [], 0

    def at(k):                       # offset of the start of line k (or the end of the text)
        return starts[k] if k < len(lines) else len(source)

    def block_end(k, item):
        """The line after the paragraph (or list item) starting at line k."""
        k += 1
        while k < len(lines) and lines[k].strip() and not (
                _FENCE.match(lines[k]) or _HEADING.match(lines[k]) or _TABLE.match(lines[k])
                or _ITEM.match(lines[k]) or _RULE.match(lines[k]) or _QUOTE.match(lines[k])
                or (lines[k].lstrip().startswith("<") and not item)):
            k += 1
        return k

    while i < len(lines):
        line = lines[i]
        if not line.strip() or _RULE.match(line):
            i += 1
        elif _QUOTE.match(line):                 # a blockquote: its inner markdown, "> " put back
            j = i
            while j < len(lines) and _QUOTE.match(lines[j]):
                j += 1
            inner = "\n".join(_QUOTE.sub("", ln, count=1) for ln in lines[i:j])
            inner_spans = markdown_spans(inner)
            if inner_spans:
                spans.append(Span(starts[i], starts[j - 1] + len(lines[j - 1]),
                                  [m for sp in inner_spans for m in sp.msgids], "markdown",
                                  lambda tr, inner=inner, inner_spans=inner_spans: "\n".join(
                                      f"> {ln}" if ln else ">" for ln in apply(inner, inner_spans, tr).split("\n")),
                                  kinds=[sp.kind for sp in inner_spans for _m in sp.msgids]))
            i = j
        elif _FENCE.match(line):
            fence = _FENCE.match(line).group(1)
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith(fence):
                j += 1
            body = "\n".join(lines[i + 1:j])
            if has_words(body):
                spans.append(_unit("literal", body, at(i + 1), at(i + 1) + len(body)))
            i = j + 1
        elif m := _HEADING.match(line):
            if has_words(m.group(2)):
                spans.append(_unit("markdown", m.group(2), starts[i] + len(m.group(1)), starts[i] + len(line)))
            i += 1
        elif _TABLE.match(line):
            if not _TABLE_SEPARATOR.match(line):
                col = starts[i]
                for cell in re.split(r"(?<!\\)\|", line):
                    text = cell.strip()
                    if text and has_words(text):
                        offset = col + cell.index(text)
                        spans.append(_unit("markdown", text, offset, offset + len(text)))
                    col += len(cell) + 1
            i += 1
        else:
            m = _ITEM.match(line)
            prefix = m.group(1) if m else re.match(r"\s*", line).group(0)
            j = block_end(i, bool(m))
            text = " ".join(ln.strip() for ln in [line[len(prefix):]] + lines[i + 1:j])
            if has_words(text):
                start = starts[i] + len(prefix)
                spans.append(_unit("markdown", text, start, starts[j - 1] + len(lines[j - 1])))
            i = j
    return spans


# ------------------------------------------------------------------ code
def _offsets(source):
    """A function (line, byte column) -> offset in `source` (ast counts columns in UTF-8 bytes)."""
    lines = source.split("\n")
    starts, pos = [], 0
    for line in lines:
        starts.append(pos)
        pos += len(line) + 1

    def offset(lineno, col, as_bytes=True):
        line = lines[lineno - 1]
        return starts[lineno - 1] + (len(line.encode()[:col].decode()) if as_bytes else col)
    return offset


def _skipped_lines(source):
    """Line numbers inside nbgrader's solution and hidden-test regions (markers included)."""
    skipped, inside = set(), False
    for n, line in enumerate(source.split("\n"), 1):
        if "### BEGIN SOLUTION" in line or "### BEGIN HIDDEN TESTS" in line:
            inside = True
        if inside:
            skipped.add(n)
        if "### END SOLUTION" in line or "### END HIDDEN TESTS" in line:
            inside = False
    return skipped


# string methods and functions whose string arguments are code, not text (lookups, patterns)
_CODE_METHODS = {"startswith", "endswith", "split", "rsplit", "replace", "find", "rfind", "index", "count",
                 "strip", "lstrip", "rstrip", "removeprefix", "removesuffix", "partition", "rpartition",
                 "get", "setdefault", "pop", "einsum", "compile", "search", "match", "fullmatch", "sub",
                 "findall", "finditer"}
_CODE_FUNCTIONS = {"getattr", "hasattr", "setattr", "delattr", "open", "exec", "eval", "compile", "__import__"}
_PHRASE = re.compile(r"[A-Za-z]{2,}[^\S\n]+\S|\S[^\S\n]+[A-Za-z]{2,}")


def _is_string(node):
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def _parents(tree):
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _protected(node, parents):
    """Whether a string literal is code: compared (`==`, `in`), a subscript, a lookup or pattern
    argument, a keyword's default... Its value must stay the same for the code to work."""
    child, parent = node, parents.get(node)
    while isinstance(parent, (ast.Tuple, ast.List, ast.Set)):        # ("a", "b") in a comparison
        child, parent = parent, parents.get(parent)
    if isinstance(parent, ast.Compare) or (isinstance(parent, ast.Subscript) and child is parent.slice):
        return True
    if isinstance(parent, ast.Call) and child in parent.args:
        func = parent.func
        return (isinstance(func, ast.Attribute) and func.attr in _CODE_METHODS) or \
            (isinstance(func, ast.Name) and func.id in _CODE_FUNCTIONS)
    return isinstance(parent, ast.arguments)                            # def f(level="op")


def protected_strings(sources):
    """The values of the string literals that are code (see _protected) anywhere in `sources`
    (a notebook's code cells): the same text elsewhere in the notebook is not translated either,
    since a translated copy would no longer match it."""
    found = set()
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        parents = _parents(tree)
        found |= {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                  and _protected(n, parents)}
    return found


def _message_strings(tree, protected=frozenset()):
    """(string nodes a student reads, docstring nodes).

    Messages: assertion messages, `print` and exception arguments, a `for` loop's literal labels,
    and any other string literal that reads as a phrase (a word next to a space: a hint kept in a
    variable, a message returned by a helper, a dict of mistakes' descriptions), unless it is code
    (compared, looked up, a pattern: see _protected) or equal to a string that is code elsewhere in
    the notebook (`protected`). Strings inside an f-string's fields belong to the f-string.
    Docstrings: of the module, classes and functions."""
    def strings_in(node):
        if _is_string(node):
            return [node]
        return [s for child in ast.iter_child_nodes(node) for s in strings_in(child)]

    parents = _parents(tree)
    messages, docstrings = [], []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                docstrings.append(body[0].value)
        if isinstance(node, ast.For) and isinstance(node.iter, (ast.List, ast.Tuple)):
            # printed labels: for label, w in [("no scaling", w_none), ...]: print(f"{label}...")
            messages += [s for s in strings_in(node.iter)
                         if isinstance(s, ast.Constant) and " " in s.value.strip()]
        if isinstance(node, ast.Assert) and node.msg is not None:
            messages += strings_in(node.msg)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            for arg in node.args:
                messages += strings_in(arg)
        elif isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            for arg in node.exc.args:
                messages += strings_in(arg)

    def in_fstring(node):
        while node in parents:
            node = parents[node]
            if isinstance(node, ast.JoinedStr):
                return True
        return False
    chosen = set(map(id, messages + docstrings))
    for node in ast.walk(tree):
        if not _is_string(node) or id(node) in chosen or in_fstring(node) or _protected(node, parents):
            continue
        if isinstance(node, ast.Constant) and node.value in protected:
            continue
        text = node.value if isinstance(node, ast.Constant) else "".join(   # a field reads as a word
            v.value if isinstance(v, ast.Constant) else "x" for v in node.values)
        if _PHRASE.search(text):
            messages.append(node)
    return [m for m in messages if not (isinstance(m, ast.Constant) and m.value in protected)], docstrings


_STRING_START = re.compile(r"(?i)([rbfu]*)('''|\"\"\"|'|\")")


def _parts(tokens):
    """(prefix, quote, inner text) of each STRING token."""
    out = []
    for tok in tokens:
        m = _STRING_START.match(tok.string)
        prefix, quote = m.group(1), m.group(2)
        out.append((prefix, quote, tok.string[len(prefix) + len(quote):-len(quote)]))
    return out


def _inside_brackets(source, start, end):
    before = source[:start].rstrip()
    after = source[end:].lstrip()
    return bool(before) and before[-1] in "([{," and bool(after) and after[0] in ")]},"


def _string_span(source, tokens, start, end, column):
    """One message for a string literal made of `tokens` (implicit concatenation included: an
    f-string part makes the whole an f-string, the plain parts' braces doubled)."""
    parts = _parts(tokens)
    raw = {"r" in p.lower() for p, _, _ in parts}
    quotes = {q for _, q, _ in parts}
    if any("b" in p.lower() for p, _, _ in parts):
        return []
    if len(raw) > 1 or len(quotes) > 1:            # parts that cannot be joined: one message each
        return [s for tok in tokens for s in _string_span(source, [tok], *_token_range(source, tok), column)] \
            if len(tokens) > 1 else []
    is_f = any("f" in p.lower() for p, _, _ in parts)
    prefix = ("f" if is_f else "") + ("r" if raw.pop() else "")
    quote = parts[0][1]
    text = "".join(inner if "f" in p.lower() or not is_f else inner.replace("{", "{{").replace("}", "}}")
                   for p, _, inner in parts)
    if not has_words(text, code=True):
        return []
    multiline = "\n" in source[start:end]
    wrap = multiline and not _inside_brackets(source, start, end)

    def render(tr):
        translated = tr(text)
        if not multiline or len(quote) == 3:
            return f"{prefix}{quote}{translated}{quote}"
        pieces = [p for p in re.split(r"(?<=\\n)", translated) if p]        # a literal per printed line
        joined = ("\n" + " " * (column + wrap)).join(f"{prefix}{quote}{p}{quote}" for p in pieces)
        return f"({joined})" if wrap else joined
    return [Span(start, end, [text], "string", render)]


def _token_range(source, tok):
    offset = _offsets(source)
    return offset(*tok.start, as_bytes=False), offset(*tok.end, as_bytes=False)


def _docstring_span(source, tok, start, end):
    """The paragraphs of a docstring, one message each; its layout (indentation, where the
    quotes sit) kept."""
    ((prefix, quote, inner),) = _parts([tok])
    if "\\" in inner or not has_words(inner):
        return []                  # escapes in a docstring: left alone rather than misread
    indent = min((len(ln) - len(ln.lstrip()) for ln in inner.split("\n")[1:] if ln.strip()), default=0)
    lead = inner[:len(inner) - len(inner.lstrip(" \n"))]
    tail = inner[len(inner.rstrip(" \n")):]
    body = inspect.cleandoc(inner)
    paragraphs = re.split(r"\n\s*\n", body)
    msgids = [p for p in paragraphs if has_words(p)]

    def render(tr):
        text = "\n\n".join(tr(p) if p in msgids else p for p in paragraphs)
        first, *rest = text.split("\n")
        body = "\n".join([first] + [(" " * indent + ln) if ln.strip() else "" for ln in rest])
        opening = "\n" + " " * indent if lead.startswith("\n") else ""
        return f"{prefix}{quote}{opening}{body}{tail}{quote}"
    return [Span(start, end, msgids, "docstring", render)]


def _comment_spans(source, tokens, skipped):
    """Comments, consecutive full-line comments at one column joined into one message."""
    offset = _offsets(source)
    lines = source.split("\n")
    groups = []
    for tok in tokens:
        if tok.type != tokenize.COMMENT or tok.start[0] in skipped:
            continue
        text = tok.string[1:].strip()
        if any(m in text for m in NBGRADER_MARKERS) or PRAGMAS.match(text):
            continue
        row, col = tok.start
        alone = not lines[row - 1][:col].strip()
        prose = tok.string.startswith("# ") and not tok.string.startswith("#  ")
        last = groups[-1] if groups else None
        if (last and alone and prose and last["alone"] and last["prose"] and last["col"] == col
                and last["end_row"] == row - 1):
            last["texts"].append(text)
            last["end_row"], last["end"] = row, offset(*tok.end, as_bytes=False)
        else:
            groups.append({"texts": [text], "col": col, "alone": alone, "prose": prose, "end_row": row,
                           "start": offset(row, col, as_bytes=False), "end": offset(*tok.end, as_bytes=False),
                           "hashes": re.match(r"#+\s?", tok.string).group(0)})
    spans = []
    for g in groups:
        text = " ".join(g["texts"])
        if not has_words(text):
            continue
        col, hashes = g["col"], g["hashes"]
        spans.append(Span(g["start"], g["end"], [text], "comment",
                          lambda tr, text=text, col=col, hashes=hashes:
                          ("\n" + " " * col).join(hashes + ln for ln in tr(text).split("\n"))))
    return spans


def code_spans(source, protected=frozenset()):
    """The messages of a code cell, each a Span (see the module docstring). A cell that does
    not parse as Python (magics) is left alone."""
    try:
        tree = ast.parse(source)
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (SyntaxError, tokenize.TokenError, IndentationError):
        return []
    skipped = _skipped_lines(source)
    offset = _offsets(source)
    string_tokens = [t for t in tokens if t.type == tokenize.STRING]
    messages, docstrings = _message_strings(tree, protected)
    spans = _comment_spans(source, tokens, skipped)
    for node in messages + docstrings:
        if node.lineno in skipped:
            continue
        start, end = offset(node.lineno, node.col_offset), offset(node.end_lineno, node.end_col_offset)
        inside = [t for t in string_tokens
                  if start <= offset(*t.start, as_bytes=False) and offset(*t.end, as_bytes=False) <= end]
        if not inside:
            continue
        if node in docstrings:
            spans += _docstring_span(source, inside[0], start, end) if len(inside) == 1 else []
        else:
            col = start - source.rfind("\n", 0, start) - 1
            spans += _string_span(source, inside, start, end, col)
    return sorted(spans, key=lambda s: s.start)


def cell_spans(cell, protected=frozenset()):
    """The messages of one cell; `protected`: its notebook's protected_strings."""
    if cell.cell_type == "markdown":
        return markdown_spans(cell.source)
    if cell.cell_type == "code":
        return code_spans(cell.source, protected)
    return []


def notebook_spans(nb):
    """[(cell, its spans)] for every cell of a notebook."""
    protected = protected_strings([c.source for c in nb.cells if c.cell_type == "code"])
    return [(cell, cell_spans(cell, protected)) for cell in nb.cells]


def apply(source, spans, tr):
    """`source` with each span rendered through `tr` (spans do not overlap)."""
    out, pos = [], 0
    for span in sorted(spans, key=lambda s: s.start):
        out += [source[pos:span.start], span.render(tr)]
        pos = span.end
    return "".join(out + [source[pos:]])


# ------------------------------------------------------------------ code stays code
class _Blank(ast.NodeTransformer):
    """Strings emptied, f-strings reduced to their sorted fields: what a translation may change.
    A string that is code (compared, looked up: see _protected) keeps its value, even inside an
    f-string's field (`{'length' if axis == 'T' else 'batch'}`: 'T' stays, the labels may change)."""

    def __init__(self, keep):
        self.keep = keep

    def visit_Constant(self, node):
        return ast.Constant("") if isinstance(node.value, str) and id(node) not in self.keep else node

    def visit_JoinedStr(self, node):
        fields = sorted(ast.dump(self.visit(v)) for v in node.values if isinstance(v, ast.FormattedValue))
        return ast.Constant(repr(fields))


def code_shape(source):
    """ast.dump of `source` with its text blanked (see _Blank); equal for a cell and its translation."""
    tree = ast.parse(source)
    parents = _parents(tree)
    keep = {id(n) for n in ast.walk(tree) if isinstance(n, ast.Constant) and _protected(n, parents)}
    return ast.dump(_Blank(keep).visit(tree))
