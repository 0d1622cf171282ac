"""Progress of a batch: a bar with counts, rate and ETA on a terminal, plain lines otherwise."""
import sys
import time


class Progress:
    def __init__(self, total, stream=None):
        self.total, self.done, self.skipped, self.failed = total, 0, 0, 0
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.start = time.monotonic()
        self.graded = 0            # graded in this run (skipped ones do not count for the rate)

    def _rate(self):
        elapsed = time.monotonic() - self.start
        return self.graded / elapsed if elapsed > 0 and self.graded else 0.0

    def _eta(self):
        rate = self._rate()
        if not rate:
            return "--:--"
        left = int((self.total - self.done) / rate)
        return f"{left // 60:d}:{left % 60:02d}"

    def update(self, student, outcome, score=None, max_score=None):
        """outcome: "graded", "skipped" (unchanged since its results were written) or "error"."""
        self.done += 1
        self.skipped += outcome == "skipped"
        self.failed += outcome == "error"
        self.graded += outcome != "skipped"
        if self.tty:
            width = 30
            filled = int(width * self.done / max(self.total, 1))
            self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total}"
                              f"  {self._rate():.1f}/s  ETA {self._eta()}  ({self.skipped} unchanged,"
                              f" {self.failed} errors)\x1b[K")
            if self.done == self.total:
                self.stream.write("\n")
        else:
            what = f"{score:g}/{max_score:g}" if score is not None else outcome
            if outcome == "skipped":
                what += " (unchanged, not regraded)"
            self.stream.write(f"[{self.done}/{self.total}] {student}: {what}\n")
        self.stream.flush()

    def summary(self):
        elapsed = time.monotonic() - self.start
        return (f"{self.done} submissions in {elapsed:.1f} s: {self.graded - self.failed} graded, "
                f"{self.skipped} unchanged, {self.failed} errors")
