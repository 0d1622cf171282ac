"""Progress of a batch: a bar with counts, rate and ETA on a terminal, plain lines otherwise.

Every name and reason shown comes from ROOT's entries (the students' names) or from student
code, so it goes through safe_text.for_terminal: an escape sequence in a folder name shows as
`\\x1b[2J`, it does not clear the screen. The summary names every entry that was not graded,
with the reason.
"""
import sys
import time

from autograder.safe_text import for_terminal


class Progress:
    def __init__(self, total, stream=None):
        self.total, self.done, self.skipped, self.failed = total, 0, 0, 0
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.start = time.monotonic()
        self.graded = 0            # graded in this run (skipped ones do not count for the rate)
        self.not_graded = []       # (student, reason) of each submission that scored 0 ungraded
        self.left = []             # (entry, reason) of each entry left out (hidden ones)

    def _rate(self):
        elapsed = time.monotonic() - self.start
        return self.graded / elapsed if elapsed > 0 and self.graded else 0.0

    def _eta(self):
        rate = self._rate()
        if not rate:
            return "--:--"
        left = int((self.total - self.done) / rate)
        return f"{left // 60:d}:{left % 60:02d}"

    def _write(self, text):
        self.stream.write(text)
        self.stream.flush()

    def left_out(self, entry, reason):
        """An entry of ROOT that is no submission (a hidden file or folder): listed, not graded."""
        self.left.append((entry, reason))
        self._write(f"left out: {for_terminal(entry, newlines=False)} ({for_terminal(reason, newlines=False)})\n")

    def update(self, student, outcome, score=None, max_score=None, reason=None):
        """outcome: "graded", "skipped" (unchanged since its results were written) or "error"
        (`reason`: why it was not graded, or why grading failed)."""
        self.done += 1
        self.skipped += outcome == "skipped"
        self.failed += outcome == "error"
        self.graded += outcome != "skipped"
        if outcome == "error":
            self.not_graded.append((student, reason or "error"))
        if self.tty:
            width = 30
            filled = int(width * self.done / max(self.total, 1))
            self._write(f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total}"
                        f"  {self._rate():.1f}/s  ETA {self._eta()}  ({self.skipped} unchanged,"
                        f" {self.failed} errors)\x1b[K" + ("\n" if self.done == self.total else ""))
        else:
            what = f"{score:g}/{max_score:g}" if score is not None else outcome
            if outcome == "skipped":
                what += " (unchanged, not regraded)"
            if reason:
                what += f" ({for_terminal(reason, newlines=False)})"
            self._write(f"[{self.done}/{self.total}] {for_terminal(student, newlines=False)}: {what}\n")

    def summary(self):
        """The counts, then each submission not graded and each entry left out, with the reason."""
        elapsed = time.monotonic() - self.start
        lines = [f"{self.done} submissions in {elapsed:.1f} s: {self.graded - self.failed} graded, "
                 f"{self.skipped} unchanged, {self.failed} errors"
                 + (f"; {len(self.left)} entries left out" if self.left else "")]
        if self.not_graded:
            lines.append("errors (score 0, the reason in the results and the CSV's error column):")
            lines += [f"  {for_terminal(s, newlines=False)}: {for_terminal(r, newlines=False)}"
                      for s, r in self.not_graded]
        if self.left:
            lines.append("left out (not submissions):")
            lines += [f"  {for_terminal(e, newlines=False)}: {for_terminal(r, newlines=False)}" for e, r in self.left]
        return "\n".join(lines)


def stages(stream=None):
    """A `say(text)` for a command made of long stages (`build`): each stage on its own line, on
    stderr, with the seconds since the first, so a minute of nbgrader is not a silent minute."""
    stream = stream or sys.stderr
    start = time.monotonic()

    def say(text):
        stream.write(f"[{time.monotonic() - start:5.1f} s] {text}\n")
        stream.flush()
    return say
