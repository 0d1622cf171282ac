"""What grade-all keeps per student beside results.json: OUT/<key>/graded.json.

results.json is written text, in one language. graded.json holds the same results as data (the
Report's `to_data()`: messages unrendered, misconception ids apart), so any language can be
written from it without grading again: grade-all's resume cache (a rerun in another language
rewrites results.json from it) and the class view's source (class-report --lang renders every
message and diagnosis in its own language).

    {"version": 1, "student": "<exact name>", "fingerprint": "<hex>" or null,
     "report": <Report.to_data()> or null, "error": <message data> or null}

`error`: why the submission could not be graded (it scores 0). Read back as untrusted input (the
class view reads a folder someone handed it): a file that is not this is ignored, never an error.
"""
import json
from dataclasses import dataclass
from pathlib import Path

from autograder import atomic
from autograder.grading.run import Report
from autograder.i18n import from_data, to_data
from autograder.reports import gradescope_json

NAME = "graded.json"
VERSION = 1
MAX_BYTES = 16 << 20            # a larger file is not read


@dataclass
class Stored:
    student: str
    fingerprint: str = None
    report: Report = None       # the graded report, or None when it could not be graded
    error: object = None        # then why (a message)

    def results(self):
        """results.json as the current language writes it (without grade-all's extra_data.batch)."""
        if self.report is not None:
            return gradescope_json.gradescope(self.report)
        return gradescope_json.error_results(self.error)


def write(folder, stored):
    """Write `folder`/graded.json atomically."""
    data = {"version": VERSION, "student": stored.student, "fingerprint": stored.fingerprint,
            "report": None if stored.report is None else stored.report.to_data(),
            "error": None if stored.error is None else to_data(stored.error)}
    atomic.write_json(Path(folder) / NAME, data, indent=None)      # ASCII: a lone surrogate is escaped


def read(folder):
    """The Stored of `folder`/graded.json, or None (no file, a link, too large, not one)."""
    path = Path(folder) / NAME
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_BYTES:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("student"), str):
            return None
        fp = data.get("fingerprint")
        report = None if data.get("report") is None else Report.from_data(data["report"])
        error = None if data.get("error") is None else from_data(data["error"])
        if (report is None) == (error is None) or not (fp is None or isinstance(fp, str)):
            return None
        return Stored(data["student"], fp, report, error)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None
