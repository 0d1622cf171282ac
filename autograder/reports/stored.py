"""What grade-all keeps per student beside results.json: OUT/<key>/graded.json.

results.json is written text, in one language. graded.json holds the same results as data (the
Report's `to_data()`: messages unrendered, misconception ids apart), so any language can be
written from it without grading again: grade-all's resume cache (a rerun in another language
rewrites results.json from it) and the class view's source (class-report --lang renders every
message and diagnosis in its own language).

    {"version": 2, "student": "<exact name>", "fingerprint": "<hex>" or null,
     "report": <Report.to_data()> or null, "error": <message data> or null, "mac": "<hex>"}

`error`: why the submission could not be graded (it scores 0). Read back as untrusted input (the
class view reads a folder someone handed it): a file that is not this is ignored, never an error.

`mac`: HMAC-SHA256, keyed by this grader's secret (`grader_key`), over the canonical JSON of the
other four fields. A student child that can write the results folder (any wall that runs it as
the grader's uid, or none) could otherwise rewrite a classmate's graded.json, keep its fingerprint
and be reported "unchanged" with a forged score on the next run: a stored report is reused only
when its mac checks out (`Stored.authentic`), never because the file says so. The key lives
outside the results folder, in the grader's own state folder (0700, the key 0600), which no walled
child can see: the child's root file system holds only the system and Python folders and its
scratch (sandbox/isolation.py). docs/security-grader.md says which account sees what.
"""
import hashlib
import hmac
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from autograder import atomic
from autograder.grading.run import Report
from autograder.i18n import from_data, to_data
from autograder.reports import gradescope_json

NAME = "graded.json"
VERSION = 2                     # 1 had no mac: such a file is never reused
MAX_BYTES = 16 << 20            # a larger file is not read
KEY_NAME = "stored-results.key"
KEY_BYTES = 32


@dataclass
class Stored:
    student: str
    fingerprint: str = None
    report: Report = None       # the graded report, or None when it could not be graded
    error: object = None        # then why (a message)
    authentic: bool = True      # read back: its mac is this grader's (only then may it be reused)

    def results(self):
        """results.json as the current language writes it (without grade-all's extra_data.batch)."""
        if self.report is not None:
            return gradescope_json.gradescope(self.report)
        return gradescope_json.error_results(self.error)


def key_folder():
    """Where the grader keeps its secret: $ATTENTION_KIT_STATE, else $XDG_STATE_HOME/attention-kit,
    else ~/.local/state/attention-kit. Never under the results folder a child may write."""
    explicit = os.environ.get("ATTENTION_KIT_STATE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "attention-kit"


def _private(st):
    """A key file nobody else could have read or planted: ours, a regular file, mode 0600 or less."""
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o077


def grader_key():
    """This grader's secret (32 random bytes), made on first use. The folder is made 0700 and the
    key 0600 with O_EXCL (never through a link); a key that is not private (a link, another owner,
    readable by group or others) is replaced by a new one, so every report signed with it is graded
    again rather than trusted."""
    folder = key_folder()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = folder / KEY_NAME
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        fd = None
    except OSError:                              # a link planted at the path (ELOOP)
        path.unlink()
        fd = None
    if fd is not None:
        with os.fdopen(fd, "rb") as f:
            if _private(os.fstat(f.fileno())):
                key = f.read(KEY_BYTES + 1)
                if len(key) == KEY_BYTES:
                    return key
        path.unlink()                            # not private, or not a key: a new one
    key = os.urandom(KEY_BYTES)
    tmp = folder / f".{KEY_NAME}-{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(key)
    try:
        os.link(tmp, path)                       # another grader made one meanwhile: use that one
    except FileExistsError:
        os.unlink(tmp)
        return grader_key()
    os.unlink(tmp)
    return key


def _mac(data):
    """HMAC-SHA256 of the four fields that make a stored result, in one canonical JSON."""
    signed = {k: data.get(k) for k in ("student", "fingerprint", "report", "error")}
    text = json.dumps(signed, sort_keys=True, ensure_ascii=True, separators=(",", ":"), allow_nan=True)
    return hmac.new(grader_key(), text.encode(), hashlib.sha256).hexdigest()


def write(folder, stored):
    """Write `folder`/graded.json atomically."""
    data = {"version": VERSION, "student": stored.student, "fingerprint": stored.fingerprint,
            "report": None if stored.report is None else stored.report.to_data(),
            "error": None if stored.error is None else to_data(stored.error)}
    data = json.loads(json.dumps(data))          # the mac is over what is read back, key for key
    data["mac"] = _mac(data)
    atomic.write_json(Path(folder) / NAME, data, indent=None)      # ASCII: a lone surrogate is escaped


def read(folder):
    """The Stored of `folder`/graded.json, or None (no file, a link, too large, not one). Its
    `authentic` is False when its mac is not this grader's: shown maybe, never reused."""
    path = Path(folder) / NAME
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_BYTES:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("version") not in (1, VERSION) or not isinstance(data.get("student"), str):
            return None
        fp = data.get("fingerprint")
        report = None if data.get("report") is None else Report.from_data(data["report"])
        error = None if data.get("error") is None else from_data(data["error"])
        if (report is None) == (error is None) or not (fp is None or isinstance(fp, str)):
            return None
        mac = data.get("mac")
        authentic = isinstance(mac, str) and hmac.compare_digest(mac, _mac(data))
        return Stored(data["student"], fp, report, error, authentic)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None
