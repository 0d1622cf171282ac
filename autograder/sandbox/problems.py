"""What can go wrong in the student's code, told in the student's terms.

Every error the sandbox raises about a submission is a `StudentProblem`; `student_message()` is
the text the student reads (translated through `_()`). The grader's own errors are never one.
"""
import signal

from autograder.i18n import _, render, tail


class StudentProblem(Exception):
    """Something the student's code did; `student_message` says it in their terms (a message,
    rendered when a report writes it: autograder/i18n.py)."""

    def student_message(self):
        return self.args[0] if len(self.args) == 1 else str(self)      # the message it was raised with


class StudentRaised(StudentProblem):
    def __init__(self, what, error):
        self.what, self.error = what, error
        super().__init__(f"{what} raised {error.get('type')}")

    @property
    def is_stub(self):
        return self.error.get("type") == "NotImplementedError"

    def student_message(self):
        etype, msg = self.error.get("type", "Exception"), self.error.get("message", "")
        if etype == "NotImplementedError":
            return _("{what} raised NotImplementedError{message}. "
                     "This part is still a stub: write its body and run the notebook's visible tests.",
                     what=self.what, message=": " + msg if msg else "")
        text = _("{what} raised {error}", what=self.what, error=f"{etype}: {msg}".rstrip(": "))
        tb = self.error.get("traceback", "").strip()
        return text + (_("\nYour code's traceback:\n{traceback}", traceback=tb) if tb else "")


class StudentCrashed(StudentProblem):
    def __init__(self, what, returncode, output):
        self.what, self.returncode, self.output = what, returncode, output
        super().__init__(self.describe())

    def describe(self):
        rc = self.returncode
        if rc is None or rc >= 0:
            return _("your code exited (exit code {code}) while running {what}", code=rc, what=self.what)
        if -rc == signal.SIGXCPU:
            return _("your code used up its CPU time (signal SIGXCPU) while running {what}", what=self.what)
        if -rc == signal.SIGXFSZ:
            return _("your code wrote a file over the size limit (signal SIGXFSZ) while running {what}",
                     what=self.what)
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = "unknown"
        return _("your code crashed (signal {signal}, {name}) while running {what}",
                 signal=-rc, name=name, what=self.what)

    def student_message(self):
        text = _("{problem}. Calls to sys.exit, os._exit or code that crashes Python stop the grading of "
                 "this step.", problem=self.describe())
        if render(self.output, "en").strip():        # the output: the child's text (and a note when cut)
            text += _("\nLast output of your code:\n{output}", output=tail(self.output, 1500))
        return text


class StudentTimedOut(StudentProblem):
    def __init__(self, what, seconds, whole_submission=False):
        self.what, self.seconds, self.whole = what, seconds, whole_submission
        super().__init__(f"timed out after {seconds:g} s while running {what}")

    def student_message(self):
        if self.whole:
            return _("Grading stopped: your submission used up its {seconds} s of running time "
                     "before {what}. Look for loops that never end or very slow code.",
                     seconds=f"{self.seconds:g}", what=self.what)
        return _("{what} timed out after {seconds} s. Look for a loop that never ends, "
                 "a sleep, or code that waits for input.", what=self.what, seconds=f"{self.seconds:g}")


class StudentOverMemory(StudentProblem):
    def __init__(self, what, limit, killed=False):
        self.what, self.limit, self.killed = what, limit, killed
        super().__init__(f"{what} used more than {limit / 2**30:g} GiB")

    def student_message(self):
        if self.killed:     # shared mappings, /dev/shm or many processes: the memory cgroup's limit
            return _("{what} used more than {gib} GiB of memory (the limit, counting all its processes "
                     "and shared memory) and was stopped by the system. The hidden tests use small inputs: "
                     "look for memory that grows without end.", what=self.what, gib=f"{self.limit / 2**30:g}")
        return _("{what} used more than {gib} GiB of memory (the limit) and stopped "
                 "with MemoryError. The hidden tests use small inputs: look for an array that grows "
                 "without end or an intermediate far larger than the inputs.",
                 what=self.what, gib=f"{self.limit / 2**30:g}")


# Errors that stop a file from being read at all (not a bug in what it computes): a notebook that is
# not JSON, bytes that are not UTF-8, code that is not Python. The step is then "unreadable", its own
# state in every report (tag `unreadable`), its cause said first.
UNREADABLE_ERRORS = frozenset({"SyntaxError", "IndentationError", "TabError", "UnicodeDecodeError",
                               "JSONDecodeError", "NotANotebook"})


class NotDefined(StudentProblem):
    def __init__(self, name, display, defined, cell_errors):
        self.name, self.display, self.defined, self.cell_errors = name, display, defined, cell_errors
        super().__init__(f"{display} does not define {name}")

    @property
    def is_unreadable(self):
        """The name is missing because the file could not be read or parsed (the first error says so)."""
        return bool(self.cell_errors) and self.cell_errors[0].get("type") in UNREADABLE_ERRORS

    def student_message(self):
        if self.is_unreadable:
            first = self.cell_errors[0]
            return _("{file} could not be read ({error}), so nothing in it was graded: fix this first.\n"
                     "{message}\n{traceback}", file=self.display, error=first["type"], message=first["message"],
                     traceback=first.get("traceback", "").strip())
        text = _("{file} does not define `{name}`. Keep the name and signature from the stub.",
                 file=self.display, name=self.name)
        if self.cell_errors:
            first = self.cell_errors[0]
            text += _("\nRunning your file stopped with {error}: {message}\n{traceback}",
                      error=first["type"], message=first["message"],
                      traceback=first.get("traceback", "").strip())
        return text


class StudentOverDisk(StudentProblem):
    def __init__(self, what, limit):
        self.what, self.limit = what, limit
        super().__init__(f"{what} wrote more than {limit / 2**20:g} MiB")

    def student_message(self):
        return _("{what} wrote more than {mib} MiB of files (the limit for everything your code writes: "
                 "its folder, /tmp and /dev/shm together) and stopped with \"No space left on device\". "
                 "The hidden tests need no files: look for code that writes without end.",
                 what=self.what, mib=f"{self.limit / 2**20:g}")


class Refused(StudentProblem):
    """A step file the grader would not read (a link, a FIFO, too large...): the message says why."""


class MissingStep(StudentProblem):
    def __init__(self, step):
        self.step = step
        super().__init__(f"no file for step {step.number}")

    def student_message(self):
        a, b = self.step.files
        return _("No file for step {step}: expected {a} or {b} in the submission.", step=self.step.number, a=a, b=b)


class BadReply(StudentProblem):
    """The child answered with something malformed (only a tampered child does that)."""

    def student_message(self):
        return _("Your code's result could not be read back: {problem}.", problem=self)
