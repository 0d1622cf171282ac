"""Text a student controls, made safe for the medium it is written to (issue 18).

A student controls more text than their code: exception type names and messages, what their
code printed, the names of their files and folders (under a class's ROOT, the folder or zip name
is the student's name as the course platform wrote it). Each medium gets its own treatment:

- terminal (`for_terminal`): C0 and C1 control characters (ESC, BEL, CR, backspace ...), DEL and
  the Unicode bidirectional overrides are shown as visible escapes (`\\x1b`, `\\u202e`), so no
  escape sequence can clear the screen, set the title, write the clipboard, move the cursor or
  reorder a line to draw a fake score; text that cannot be encoded (lone surrogates, e.g. a file
  name's undecodable bytes) is shown as an escape too, so printing never fails;
- CSV (`for_csv_cell`): the same escapes, and a cell a spreadsheet would evaluate (starting with
  = + - @, a tab or a carriage return, or their full-width forms) gets a leading single quote
  (OWASP, "CSV injection"); so does a cell that starts with a quote already, so that two names
  never read alike;
- GitHub Actions (`for_github_data`, `for_github_property`): the escapes, then GitHub's own
  escaping of a workflow command's data (% CR LF) and properties (also : and ,); raw text in the
  job log goes inside `::stop-commands::` (github.log_block);
- files (`file_name`): a student's name as a file name, one-to-one whatever the name;
- HTML and JUnit escape for themselves (html.escape; junit._text).
"""
import hashlib
import re
import unicodedata

# shown as escapes on a terminal: C0 controls but tab and newline, DEL, C1 controls, the bidi
# marks, embeddings, overrides and isolates, and surrogates (which no UTF-8 writer can encode)
_TERMINAL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape(match):
    ch = match.group()
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:          # an undecodable byte of a file name (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text, keep="\n\t"):
    """`text` with every control character (but those in `keep`), bidi control and surrogate
    written as a visible escape (ESC -> `\\x1b`)."""
    text = str(text)
    return _TERMINAL.sub(lambda m: m.group() if m.group() in keep else _escape(m), text)


def for_terminal(text, newlines=True):
    """Text safe to print on a terminal: escape sequences visible, never an encoding error.
    `newlines=False` for a one-line field (a name in a progress line): a newline shows as `\\x0a`."""
    return visible(text, "\n\t" if newlines else "")


# a spreadsheet evaluates a cell starting with one of these (OWASP: = + - @ tab CR; full-width
# forms that some spreadsheets fold); a leading quote is neutralised too, so the map stays one-to-one
_FORMULA_START = tuple("=+-@\t\r\n'\uff1d\uff0b\uff0d\uff20")


def for_csv_cell(text):
    """A gradebook cell: control characters visible (a newline kept: the csv module quotes it),
    and a cell that would start a formula prefixed with a single quote."""
    text = visible(text, "\n")
    if text.startswith(_FORMULA_START) or text.lstrip().startswith(_FORMULA_START):
        return "'" + text
    return text


def for_github_data(text):
    """The message of a workflow command (`::error ...::MESSAGE`): other controls visible, then
    % CR LF escaped as GitHub documents."""
    return visible(text, "\r\n").replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def for_github_property(text):
    """A property of a workflow command (`file=`, `title=`): also : and , escaped, newlines visible."""
    return for_github_data(visible(text, "")).replace(":", "%3A").replace(",", "%2C")


# ------------------------------------------------------------------ names as file names
# kept as they are: ASCII letters, digits and . _ @ + -, starting with a letter or digit, not
# ending with a dot, at most 64 characters; everything else gets a hash (below), whose `~` no
# kept name can hold, so a kept name and a hashed one never meet
_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}")
_WINDOWS_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(10)), *(f"LPT{i}" for i in range(10))}
HASH_CHARS = 10                     # hex digits of the name's SHA-256 (40 bits)
READABLE_CHARS = 32                 # characters of the name kept in front of the hash


def is_plain(name):
    """A name used as a file name as it is (on any common file system)."""
    return (bool(_PLAIN.fullmatch(name)) and not name.endswith(".")
            and name.split(".")[0].upper() not in _WINDOWS_RESERVED)


def name_hash(name):
    """The first HASH_CHARS hex digits of the SHA-256 of the exact name (its code points, lone
    surrogates included: `surrogatepass` encodes every str differently)."""
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_CHARS]


def file_name(name, hashed=False):
    """A file or folder name for `name`, one-to-one: a plain name as it is (unless `hashed`, for
    names that differ from another only in case: they would share one file on a case-insensitive
    file system); any other a readable part (its letters and digits, any script, the rest as
    `_`) then `~` and a hash of the exact name: `张伟~3f2a9c1e0b`, `_~8d1f...` for `=1+1`."""
    if is_plain(name) and not hashed:
        return name
    readable = "".join(ch if ch.isalnum() or ch in "._@+-" else "_"
                       for ch in unicodedata.normalize("NFC", visible(name, "")))
    readable = re.sub(r"_+", "_", readable)[:READABLE_CHARS].lstrip(".-") or "_"
    return f"{readable}~{name_hash(name)}"


def clip(text, limit):
    """`text` cut to `limit` characters, saying how much was left out (the one clip of every report)."""
    from autograder.i18n import _
    return text if len(text) <= limit else text[:limit] + _("\n... ({n} more characters)", n=len(text) - limit)
