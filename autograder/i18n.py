"""Student-facing text in English and Simplified Chinese, kept as data until a report writes it.

Every message a student can read is written in English in the code, wrapped in `_()`:

    raise CheckFailed(_("{what} has shape {got}; expected {shape}.", what=what, got=got.shape, shape=shape))

`_()` translates nothing: it returns a `Message`, the English text (the msgid) with its fields,
immutable and JSON-safe. A message is rendered in a language when it is written:

    render(message, "zh")    # the Chinese text, fields filled in
    str(message)             # the current language: for text printed at once (errors, the CLI)

so one graded result can be written in any language (a report renders message, diagnosis and
hint when it writes), and the language decides no grade and is part of no fingerprint.

Messages compose: `message + "\n" + other` and `join(", ", parts)` give a `Concat`, rendered part
by part; plain strings in it (code, what the student's code printed, numbers) stay as they are.
An f-string or str.join over a message renders it there and then, in the current language:
compose with + and join() instead. `to_data()` / `from_data()` turn any text into JSON and back:

    "plain text"                                  a str, shown as it is
    {"msgid": "{what} timed out", "fields": {...}} a Message (fields: str, int, float, bool, None, texts)
    ["a", {"msgid": ...}, "\n", ...]               a Concat

Text defined at import time (the misconception catalogue, step titles) is marked with `N_()` and
made a message where it is shown with `translate()`; so are the checks' titles (their docstrings).

Translations: gettext catalogues, autograder/locale/<lang>/LC_MESSAGES/grader.po (msgid: the
English text; msgstr: its translation, with the same {fields}), read with Babel. tests/test_i18n.py
reads every `_()` and `N_()` call and every check title in the package and fails if a message
exists in one language only. The language of a command is chosen once (`grade --lang zh`,
`grade-all --lang zh`, `class-report --lang zh`) or, under nbgrader, by the course setting
`c.AttentionKit.language` (see autograder/commands/notebook_hook.py).
"""
import contextlib
import functools
import numbers
import re
import string
from dataclasses import dataclass
from pathlib import Path

LANGUAGES = ("en", "zh")
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
DOMAIN = "grader"
_current = "en"


# ------------------------------------------------------------------ the language
def set_language(lang):
    """Choose the language `str(message)` renders in from now on ("en" or "zh")."""
    global _current
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}; choose one of {', '.join(LANGUAGES)}")
    _current = lang


def get_language():
    return _current


@contextlib.contextmanager
def language(lang):
    """Messages in `lang` inside the block; the previous language after it."""
    before = _current
    set_language(lang)
    try:
        yield
    finally:
        set_language(before)


# ------------------------------------------------------------------ the catalogues
def catalogue_path(lang):
    return LOCALE_DIR / lang / "LC_MESSAGES" / f"{DOMAIN}.po"


@functools.cache
def _entries(lang):
    """{msgid: translation or None (untranslated or fuzzy)} of `lang`'s grader.po, read with
    Babel as the notebooks' catalogues are (commands/notebook_i18n.py)."""
    from babel.messages.pofile import read_po
    with open(catalogue_path(lang), "rb") as f:
        return {m.id: (m.string if m.string and not m.fuzzy else None) for m in read_po(f) if m.id}


def catalogue(lang):
    """{English msgid: translation} for `lang` (empty for English)."""
    if lang == "en":
        return {}
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}")
    return _translated(lang)


@functools.cache
def _translated(lang):
    return {k: v for k, v in _entries(lang).items() if v is not None}


# ------------------------------------------------------------------ messages
class Text:
    """A message or a composition of messages: rendered in a language when it is written."""
    __slots__ = ()

    def render(self, lang=None):
        """The text in `lang` (default: the current language)."""
        raise NotImplementedError

    def to_data(self):
        raise NotImplementedError

    def __str__(self):
        return self.render()

    def __format__(self, spec):
        return format(self.render(), spec)

    def __add__(self, other):
        return concat(self, other) if isinstance(other, (str, Text)) else NotImplemented

    def __radd__(self, other):
        return concat(other, self) if isinstance(other, (str, Text)) else NotImplemented


@dataclass(frozen=True, slots=True)
class Message(Text):
    """A msgid (the English text, a str.format template) and its fields, ((name, value), ...)
    sorted by name; a value is a str, int, float, bool, None or a Text (rendered in the same
    language)."""
    msgid: str
    fields: tuple = ()

    def render(self, lang=None):
        lang = lang or _current
        text = catalogue(lang).get(self.msgid, self.msgid) if lang != "en" else self.msgid
        if not self.fields:
            return text
        return text.format(**{k: v.render(lang) if isinstance(v, Text) else v for k, v in self.fields})

    def to_data(self):
        if not self.fields:
            return {"msgid": self.msgid}
        return {"msgid": self.msgid, "fields": {k: to_data(v) for k, v in self.fields}}


@dataclass(frozen=True, slots=True)
class Concat(Text):
    """Texts one after the other: (str | Message, ...), never nested, no empty or adjacent strs."""
    parts: tuple

    def render(self, lang=None):
        lang = lang or _current
        return "".join(p if isinstance(p, str) else p.render(lang) for p in self.parts)

    def to_data(self):
        return [to_data(p) for p in self.parts]


def concat(*items):
    """`items` (str or Text) one after the other, flattened: a str when all are str, the one Text
    when it stands alone, else a Concat."""
    parts = []
    for item in items:
        for part in (item.parts if isinstance(item, Concat) else (item,)):
            if not isinstance(part, (str, Message)):
                raise TypeError(f"only str and messages compose, not {type(part).__name__}")
            if part == "":
                continue
            if parts and isinstance(part, str) and isinstance(parts[-1], str):
                parts[-1] += part
            else:
                parts.append(part)
    if not parts:
        return ""
    if len(parts) == 1:
        return parts[0]
    return Concat(tuple(parts))


def join(sep, items):
    """`sep.join(items)` for texts: a str when every item is one, else a Concat."""
    items = list(items)
    if all(isinstance(i, str) for i in items):
        return sep.join(items)
    out = []
    for i, item in enumerate(items):
        out += [sep, item] if i else [item]
    return concat(*out)


def tail(text, n):
    """The end of `text`, at most `n` characters as English writes it: a str cut as str[-n:], a
    composition cut in its plain text, its messages kept whole (for output shown from its end)."""
    if isinstance(text, str):
        return text[-n:]
    parts = text.parts if isinstance(text, Concat) else (text,)
    kept, room = [], n
    for part in reversed(parts):
        size = len(render(part, "en"))
        if size <= room:
            kept.append(part)
            room -= size
            continue
        if isinstance(part, str) and room:
            kept.append(part[-room:])
        break
    return concat(*reversed(kept))


def render(text, lang=None):
    """Any text as a str in `lang` (default: the current language); a str is returned as it is."""
    return text.render(lang) if isinstance(text, Text) else str(text)


def to_data(text):
    """A text as JSON-safe data (see the module's docstring); fields' plain values as they are."""
    return text.to_data() if isinstance(text, Text) else text


MAX_DEPTH = 20          # a message within a message within ...: far more than any check builds


def from_data(data, depth=0):
    """The text `to_data` gave; raises ValueError for anything else. Data read back from a file is
    not trusted to be a template: a msgid with fields may only fill them in (_check_template)."""
    if isinstance(data, str):
        return data
    if depth > MAX_DEPTH:
        raise ValueError("a message nested too deeply")
    if isinstance(data, list):
        return concat(*(from_data(p, depth + 1) for p in data))
    if isinstance(data, dict) and isinstance(data.get("msgid"), str) and set(data) <= {"msgid", "fields"}:
        fields = data.get("fields", {})
        if not isinstance(fields, dict):
            raise ValueError("a message's fields are not a mapping")
        if fields:
            _check_template(data["msgid"], fields)
        return Message(data["msgid"], tuple(sorted((str(k), _field_from_data(v, depth)) for k, v in fields.items())))
    raise ValueError(f"not a message: {str(data)[:80]!r}")


# what a msgid's {field:spec} may ask for: a fill, sign, width and precision of a few digits, a type
_SAFE_SPEC = re.compile(r"(.?[<>=^])?[+ -]?#?0?\d{0,3}[,_]?(\.\d{1,2})?[bcdeEfFgGnosxX%]?")


def _check_template(msgid, fields):
    """A msgid read back from a file is a format string someone else may have written: only plain
    fields the message has ({name}, {name:.3g}), never an attribute, an index or a huge width."""
    try:
        parsed = list(string.Formatter().parse(msgid))
    except ValueError as exc:
        raise ValueError(f"not a message template: {exc}") from None
    for _literal, name, spec, conversion in parsed:
        if name is None:
            continue
        if name not in fields or conversion or not _SAFE_SPEC.fullmatch(spec or ""):
            raise ValueError(f"not a message template: {msgid[:80]!r}")


def _field_from_data(value, depth):
    if value is None or type(value) in (bool, int, float):
        return value
    return from_data(value, depth + 1)


# ------------------------------------------------------------------ making messages
@functools.lru_cache(maxsize=4096)
def _formatted_fields(msgid):
    """The names of the fields `msgid` writes with a format spec or conversion ({rtol:g}, {x!r})."""
    return {name for _lit, name, spec, conv in string.Formatter().parse(msgid) if name and (spec or conv)}


def _field(value, formatted):
    """A field's value as a message holds it: JSON-safe, rendering as the value did.

    A Text stays one (rendered in the message's language); so does an exception raised with one
    (`problem=exc`); numbers become plain int/float (numpy's too) when that writes the same;
    anything else (a shape, a dtype, a path) becomes the str that str.format writes for it."""
    if value is None or type(value) in (str, bool, int, float) or isinstance(value, Text):
        return value
    if isinstance(value, BaseException) and len(value.args) == 1 and isinstance(value.args[0], Text):
        return value.args[0]
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, numbers.Real) and (formatted or format(float(value), "") == format(value, "")):
        return float(value)          # a spec formats numpy's floats as Python's
    return format(value, "")         # what str.format writes for it


def _message(msgid, fields):
    if not fields:
        return Message(msgid)
    formatted = _formatted_fields(msgid)
    return Message(msgid, tuple(sorted((k, _field(v, k in formatted)) for k, v in fields.items())))


def _(msgid, **fields):
    """The message `msgid` (a literal: tests/test_i18n.py finds it) with `fields` (str.format's)."""
    return _message(msgid, fields)


def N_(msgid):
    """Mark text for translation without making a message now; `translate()` it where it is shown."""
    return msgid


def translate(text, **fields):
    """`_()` for text that is not a literal where it is shown: marked with `N_()` (the
    misconception catalogue, the step titles) or a check's title (the first line of its
    docstring, or its `name=`). tests/test_i18n.py collects those texts where they are written;
    `_()` itself only ever takes a literal, so every message can be found in the code."""
    return _message(text, fields)
