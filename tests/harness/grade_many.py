"""The one harness of the test files that grade many small step files they write (the misconception
catalogue, leniency, the rules, gradients, stability, the visible tests' agreement, the decoder's steps):
the real grader, in warm processes of this test worker, each with one warm `Grader` and the zygotes
(issue 27).

A job is (folder, stem) or (folder, stem, lang); its result is the list of its checks, each a dict
{"number", "kind", "score", "max_score", "status", "misconceptions", "output"}, "output" being the
message and its diagnosis as the reports write them, in the job's language (English unless named).
A folder graded in two languages is graded once and rendered twice, as the reports do.

The grading processes are started once per test worker and kept for every later file (a process
costs some 9 s of CPU on a slow machine before its first check: its interpreter, `import torch`, its
pytest session and its zygotes, paid by each of these files before). A process serves one request
at a time; one that died, or whose environment is no longer the worker's (line_server.environment),
is replaced before the next request (harness/line_server.py). The student code still runs only in
the step children the process forks from its zygotes, as `grade` runs it."""
import atexit
import os
import sys
import tempfile
import traceback
from concurrent.futures import ThreadPoolExecutor

from autograder import contract
from conftest import ROOMY_SECONDS
from harness.line_server import LineServer

# a warm grading process: reads one request a line on stdin, {"seconds", "jobs": [[folder, stem,
# lang], ...], "tolerant"}, and writes one reply a line on the pipe named by its argument:
# {"checks": [[check dicts] for each job]} or {"error": the traceback}
GRADE_SERVER = '''
import json, os, sys, traceback
from autograder.sandbox import zygote
# children forked warm, as `grade` does; started first, so that they import beside the grader's
# imports; both frameworks: a process serves whichever files its worker asks for
zygote.start_unless_disabled()
from autograder import i18n
from autograder.grading import run as grading
from autograder.reports.text import check_text
from autograder.sandbox.limits import Limits
replies = os.fdopen(int(sys.argv[1]), "w")
grader = None


def text(check, framework, tolerant):
    try:
        return check_text(check, framework)
    except Exception as exc:
        if not tolerant:
            raise
        return f"RENDER FAILED: {exc!r}"      # the message-rendering test's finding, listed with the others


def graded(asked):
    global grader
    if grader is None or not grader.alive:        # warm: the suites collected once for every request
        grader = grading.Grader()
    reports, out = {}, []
    for folder, stem, lang in asked["jobs"]:
        if (folder, stem) not in reports:
            reports[folder, stem] = grader.grade(folder, Limits(call_seconds=asked["seconds"]), [stem])
        with i18n.language(lang):
            out.append([{"number": c.number, "kind": c.kind, "score": c.score, "max_score": c.max_score,
                         "status": c.status, "misconceptions": c.misconceptions,
                         "output": text(c, s.step.framework, asked["tolerant"])}
                        for s in reports[folder, stem].steps for c in s.checks])
    return out


for line in sys.stdin:
    try:
        reply = {"checks": graded(json.loads(line))}
    except Exception:
        reply = {"error": traceback.format_exc()}
    replies.write(json.dumps(reply) + "\\n")
    replies.flush()
zygote.stop()
'''


class _Server:
    """One warm grading process (GRADE_SERVER), its stdout and stderr in a log file."""

    def __init__(self):
        fd, log_path = tempfile.mkstemp(prefix="grade-many-", suffix=".log")
        os.close(fd)
        self.process = LineServer(GRADE_SERVER, log_path, "the grading process")

    def usable(self):
        return self.process.usable()

    def grade(self, jobs, call_seconds, tolerant, timeout):
        reply, logged = self.process.ask({"seconds": call_seconds, "jobs": jobs, "tolerant": tolerant}, timeout)
        # what the grader printed meanwhile (an internal error's traceback goes there): shown with a failing test
        sys.stderr.write(logged[-20000:])
        assert "error" not in reply, reply.get("error", "") + logged[-3000:]
        return reply["checks"]

    def close(self):
        """End the process (its loop ends with its input, and its zygotes with it)."""
        self.process.close()
        self.process.log_path.unlink(missing_ok=True)


_servers = []       # this worker's warm grading processes, started when first needed


def _warm_servers(n):
    """n usable grading processes of this worker, the ones already started first."""
    for server in [s for s in _servers if not s.usable()]:
        _servers.remove(server)
        server.close()
    while len(_servers) < n:
        _servers.append(_Server())
    return _servers[:n]


@atexit.register
def _close_servers():
    for server in _servers:
        try:
            server.close()
        except Exception:      # noqa: BLE001  the worker is ending: a process that cannot be closed is killed with it
            traceback.print_exc()


def _framework(job):
    return contract.step_for_stem(job[1]).framework


def _groups(jobs, processes):
    """The jobs' indices in `processes` groups (at most): one framework per group where it can be
    (the numpy steps' children, the torch steps'), the largest group halved until there are
    enough, a folder's languages kept together (it is graded once)."""
    if processes == 1 or not jobs:
        return [list(range(len(jobs)))]
    folders = {}                                  # (folder, stem) -> the indices of its jobs
    for i, job in enumerate(jobs):
        folders.setdefault(job[:2], []).append(i)
    groups = [[key for key in folders if _framework(key) == fw] for fw in sorted({_framework(j) for j in jobs})]
    while len(groups) < processes and max(map(len, groups)) > 1:
        big = max(groups, key=len)
        groups.remove(big)
        groups += [big[0::2], big[1::2]]
    while len(groups) > processes:          # more frameworks than processes: the two smallest share
        groups.sort(key=len)
        groups[:2] = [groups[0] + groups[1]]
    return [[i for key in group for i in folders[key]] for group in groups]


def grade_many(jobs, processes=1, call_seconds=ROOMY_SECONDS, tolerate_render_failures=False, timeout=1800):
    """The checks of each job, in the jobs' order, graded in `processes` warm processes that run at
    the same time (two: the two cores of CI). `call_seconds`: each child's call limit, far above
    honest need on a busy machine by default: these files are about verdicts, not time limits. A
    message that does not render fails the grading, unless `tolerate_render_failures` (the
    rendering test, which lists every such message) makes it "RENDER FAILED: ..."."""
    jobs = [(str(job[0]), job[1], job[2] if len(job) > 2 else "en") for job in jobs]
    groups = [g for g in _groups(jobs, processes) if g]
    servers = _warm_servers(len(groups))
    results = [None] * len(jobs)
    # one thread per process, each feeding its process and waiting for it: the processes grade at once
    with ThreadPoolExecutor(max_workers=max(1, len(groups))) as pool:
        graded = pool.map(lambda pair: pair[1].grade([jobs[i] for i in pair[0]], call_seconds,
                                                     tolerate_render_failures, timeout), zip(groups, servers))
        for group, checks in zip(groups, graded):
            for i, found in zip(group, checks):
                results[i] = found
    return results


def summary(checks, width=400):
    """One line per check (number, status, misconceptions, the start of its message): an assertion's text."""
    return "\n".join(f"{c['number']} {c['status']} {c['misconceptions']}: {c['output'][:width]}" for c in checks)
