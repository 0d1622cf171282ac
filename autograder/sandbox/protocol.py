"""What crosses the boundary: every reply from the child checked before use.

Only a tampered child sends a malformed reply; whatever it sends becomes a BadReply, never an
error of the grader.
"""
from autograder.sandbox.problems import BadReply
from autograder.i18n import _

MAX_NAMES = 500


def _checked_error(err):
    """An error record as plain, bounded strings, whatever the child put in it."""
    return {k: str(err.get(k, ""))[:4000] for k in ("type", "message", "traceback")}


def _disk_full(err):
    return err["type"] in ("OSError", "IOError") and ("No space left on device" in err["message"]
                                                      or "[Errno 28]" in err["message"])


def checked_load_reply(reply):
    """The reply to "load", checked field by field: {"ok": True, "defined": [str], "cell_errors": [error]}.
    Anything else is a BadReply (only a tampered child sends one)."""
    defined, errors = reply.get("defined"), reply.get("cell_errors", [])
    if reply.get("ok") is not True or not isinstance(defined, list) or not isinstance(errors, list):
        raise BadReply(_("malformed reply to loading the file"))
    if not all(isinstance(n, str) for n in defined) or not all(isinstance(e, dict) for e in errors):
        raise BadReply(_("malformed reply to loading the file"))
    return {"ok": True, "defined": [n[:100] for n in defined[:MAX_NAMES]],
            "cell_errors": [_checked_error(e) for e in errors[:20]]}
