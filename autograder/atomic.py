"""Writing the grader's outputs atomically: a reader sees the old file or the new one, never half,
and a file or link planted at the path is replaced, never followed (the temporary file is created
beside it with O_EXCL, then renamed over it)."""
import json
import os
import tempfile
from pathlib import Path


def write_bytes(path, data, mode=0o644):
    path = Path(os.path.abspath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def write_text(path, text, errors="strict"):
    return write_bytes(path, text.encode("utf-8", errors))


def write_json(path, data, indent=2, ensure_ascii=True):
    """JSON with a final newline (results.json, class.json, code.json)."""
    return write_text(path, json.dumps(data, indent=indent, ensure_ascii=ensure_ascii) + "\n")


def same_content(path, data):
    """Does `path` already hold exactly `data` (bytes)? Then a rewrite can be skipped."""
    try:
        return Path(path).read_bytes() == data
    except OSError:
        return False
