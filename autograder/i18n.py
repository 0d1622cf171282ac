"""Student-facing text in English and Simplified Chinese.

Every message a student can read is written in English in the code, wrapped in `_()`:

    raise CheckFailed(_("{what} has shape {got}; expected {shape}.", what=what, got=got.shape, shape=shape))

`_()` looks the English text (the msgid) up in the catalogue of the current language
(`autograder/locale/zh.py` for Chinese) and fills in the named fields. Text defined at import
time, before a language is chosen (the misconception catalogue), is marked with `N_()` and
translated where it is shown with `translate()`; so are the checks' titles (their docstrings).
tests/test_i18n.py reads every `_()` and `N_()` call and every check title in the package and
fails if a message exists in one language only.

The language is chosen once per command (`grade --lang zh`, `grade-all --lang zh`, which hands
it to its workers) or, under nbgrader, by the course setting `c.AttentionKit.language` (see
autograder/commands/notebook_hook.py).
"""
import contextlib

LANGUAGES = ("en", "zh")
_current = "en"


def set_language(lang):
    """Choose the language of every message produced from now on ("en" or "zh")."""
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


def catalogue(lang):
    """{English msgid: translation} for `lang` (empty for English)."""
    if lang == "en":
        return {}
    from autograder.locale import zh
    return zh.MESSAGES


def _(msgid, **fields):
    """The message in the current language, with `fields` filled in (str.format)."""
    text = catalogue(_current).get(msgid, msgid) if _current != "en" else msgid
    return text.format(**fields) if fields else text


def N_(msgid):
    """Mark text for translation without translating it now; translate it later with `translate()`."""
    return msgid


def translate(text, **fields):
    """`_()` for text that is not a literal where it is shown: marked with `N_()` (the
    misconception catalogue, the step titles) or a check's title (the first line of its
    docstring, or its `name=`). tests/test_i18n.py collects those texts where they are written;
    `_()` itself only ever takes a literal, so every message can be found in the code."""
    translated = catalogue(_current).get(text, text) if _current != "en" else text
    return translated.format(**fields) if fields else translated
