"""The CI templates' commands run as a CI would (tests/commands/test_templates.py,
tests/e2e/test_assignment_matrix.py), and GitHub's reading of a log (tests/reports/test_formats.py,
tests/commands/test_cli.py)."""
import os
import shlex
import subprocess
import sys


def grade_args(command):
    """{"submission": ..., "--format": ..., ...} from the `attention-kit grade ...` line of a command."""
    line = next(ln for ln in command.splitlines() if "attention-kit grade" in ln)
    words = shlex.split(line)
    words = words[words.index("grade") + 1:]
    args = {"submission": words[0]}
    for i, word in enumerate(words[1:], 1):
        if word.startswith("--") and i + 1 < len(words) and not words[i + 1].startswith("--"):
            args[word] = words[i + 1]
    return args


def run_as_ci(script, cwd, env):
    """A template's shell lines, run by bash in `cwd` as the CI would, with the kit's console
    script (the venv's) on PATH."""
    path = os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env=dict(os.environ, PATH=path, **env))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def workflow_commands(log):
    """The workflow commands GitHub's runner would process in `log` (actions/runner's
    ActionCommandManager): a line that starts with `::` after leading spaces (v2) or holds `##[`
    (v1); none between `::stop-commands::TOKEN` and `::TOKEN::`. Lines split as str.splitlines
    does (on more characters than the runner: stricter)."""
    found, stop = [], None
    for line in log.splitlines():
        s = line.lstrip()
        if s.startswith("::") and s.find("::", 2) > 0:
            end = s.find("::", 2)
            name = s[2:end].split(" ", 1)[0]
            if stop is not None:
                stop = None if name == stop else stop
            elif name == "stop-commands":
                stop = s[end + 2:]
            else:
                found.append(s)
        elif "##[" in s and stop is None:
            found.append(s)
    return found
