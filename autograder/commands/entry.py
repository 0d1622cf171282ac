"""The one entry point, whichever way the grader is started: `python -m autograder ...` and the
`attention-kit ...` console script both run `main()` here, so both behave the same.

No traceback reaches a user: an interrupt, an `OSError` (a path that cannot be read or written)
or a bug in the grader ends in one `error:` line on stderr and a non-zero exit; the full traceback
goes to a log file that the line names (`crash_log()`), to attach to a bug report."""
import os
import sys
import tempfile
import traceback
from pathlib import Path

INTERRUPTED = 130           # the shell's code for a command ended by Ctrl-C (128 + SIGINT)


def crash_log():
    """Where the traceback of a command that failed is written: $ATTENTION_KIT_LOG, else
    $XDG_CACHE_HOME/attention-kit/last-error.log (~/.cache/...), else the temporary folder."""
    if os.environ.get("ATTENTION_KIT_LOG"):
        return Path(os.environ["ATTENTION_KIT_LOG"])
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "attention-kit" / "last-error.log"


def _write_log(argv):
    """Write the current exception's traceback to crash_log() (or beside it in the temporary
    folder, when that cannot be written); return the path written, or None."""
    text = f"attention-kit {' '.join(map(repr, argv))}\n\n{traceback.format_exc()}"
    for path in (crash_log(), Path(tempfile.gettempdir()) / "attention-kit-last-error.log"):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8", errors="backslashreplace")
            return path
        except OSError:
            continue
    return None


def _fail(argv, message, code):
    """Print one `error:` line naming the log; return the exit code."""
    from autograder.i18n import _
    from autograder.safe_text import for_terminal
    log = _write_log(argv)
    where = (_("details in {log}", log=for_terminal(str(log), newlines=False)) if log is not None
             else _("no log could be written"))
    print(f"error: {message} ({where})", file=sys.stderr)
    return code


def os_error_text(exc):
    """An OSError in words: what failed, on which path (`[Errno 2] No such file...: 'x'` without the jargon)."""
    from autograder.i18n import _
    from autograder.safe_text import for_terminal
    what = exc.strerror or (str(exc).splitlines() or [""])[0][:300] or type(exc).__name__
    if exc.filename is not None:
        return _("{error}: {path}", error=what, path=for_terminal(os.fsdecode(exc.filename), newlines=False))
    return what


def main(argv=None):
    """Run the command line; returns only for commands other than `grade` (see below)."""
    argv = sys.argv[1:] if argv is None else argv
    code = run(argv)
    if argv[:1] == ["grade"]:
        # Every result is written and every child is dead by now; skip the interpreter's teardown,
        # which with torch loaded takes longer (about 0.4 s) than grading a step.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def run(argv):
    """The command line's work and its exit code, in this process, which it never leaves (main
    does, after `grade`): a process may run several command lines one after another, as the
    kit's tests do (tests/harness/warm_cli.py). Raises SystemExit only for argparse's own exits
    (--help, --version, a bad argument)."""
    # One thread for the grader's own OpenBLAS, OpenMP and MKL, read as numpy and torch load (here,
    # in batch workers and in zygotes, which inherit it): the grader's arithmetic is small, and idle
    # math threads spin waiting for work, on cores the students' children need (see
    # grading.one_math_thread). The children get the same from their own environment.
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    try:
        # `grade` starts its zygotes as soon as it knows which frameworks the submission's steps use,
        # before it imports pytest and the suites: their `import torch` runs beside ours (cli.py)
        from autograder.commands.cli import main as cli_main
        code = cli_main(argv)
    except KeyboardInterrupt:
        from autograder.i18n import _
        code = _fail(argv, _("interrupted"), INTERRUPTED)
    except OSError as exc:
        code = _fail(argv, os_error_text(exc), 1)
    except Exception as exc:   # noqa: BLE001 (a bug of the grader: one line for the user, the rest in the log)
        from autograder.i18n import _
        code = _fail(argv, _("the grader failed ({error}): please report it with the log",
                             error=type(exc).__name__), 1)
    return code
