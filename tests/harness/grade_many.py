"""The one harness of the test files that grade many small step files they write (the misconception
catalogue, leniency, the rules, gradients, stability, the visible tests' agreement, the decoder's steps):
the real grader, in fresh processes, each with one warm `Grader` and its jobs' zygotes (issue 27).

A job is (folder, stem) or (folder, stem, lang); its result is the list of its checks, each a dict
{"number", "kind", "score", "max_score", "status", "misconceptions", "output"}, "output" being the
message and its diagnosis as the reports write them, in the job's language (English unless named).
A folder graded in two languages is graded once and rendered twice, as the reports do."""
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from autograder import contract
from conftest import ROOMY_SECONDS, ROOT

# the process that grades one group of jobs; reads {"seconds", "jobs": [[folder, stem, lang], ...], "tolerant"}
GRADE_GROUP = '''
import json, sys
from autograder import contract
from autograder.sandbox import zygote
ASKED = json.load(sys.stdin)
JOBS = ASKED["jobs"]
# children forked warm, as `grade` does, from the zygotes of this group's frameworks only (a torch
# zygote costs some 1.5 s of CPU): started first, so that they import beside the grader's imports
zygote.start_unless_disabled({contract.step_for_stem(stem).framework for _folder, stem, _lang in JOBS})
from autograder import i18n
from autograder.grading import run as grading
from autograder.reports.text import check_text
from autograder.sandbox.limits import Limits
GRADER = grading.Grader()      # warm: the suites collected once for every job


def text(check, framework):
    try:
        return check_text(check, framework)
    except Exception as exc:
        if not ASKED["tolerant"]:
            raise
        return f"RENDER FAILED: {exc!r}"      # the message-rendering test's finding, listed with the others


reports, out = {}, []
for folder, stem, lang in JOBS:
    if (folder, stem) not in reports:
        reports[folder, stem] = GRADER.grade(folder, Limits(call_seconds=ASKED["seconds"]), [stem])
    with i18n.language(lang):
        out.append([{"number": c.number, "kind": c.kind, "score": c.score, "max_score": c.max_score,
                     "status": c.status, "misconceptions": c.misconceptions, "output": text(c, s.step.framework)}
                    for s in reports[folder, stem].steps for c in s.checks])
zygote.stop()
json.dump(out, sys.stdout)
'''


def _framework(job):
    return contract.step_for_stem(job[1]).framework


def _groups(jobs, processes):
    """The jobs' indices in `processes` groups (at most): one framework per group where it can be, so
    that a process starts one zygote; the largest group halved until there are enough, a folder's
    languages kept together (it is graded once)."""
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


def _run_group(jobs, call_seconds, tolerant, timeout):
    asked = json.dumps({"seconds": call_seconds, "jobs": jobs, "tolerant": tolerant})
    proc = subprocess.Popen([sys.executable, "-c", GRADE_GROUP], cwd=ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(asked, timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # what the grader printed (an internal error's traceback goes there): shown with a failing test
    sys.stderr.write(err[-20000:])
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out)


def grade_many(jobs, processes=1, call_seconds=ROOMY_SECONDS, tolerate_render_failures=False, timeout=1800):
    """The checks of each job, in the jobs' order, graded in `processes` processes that run at the
    same time (two: the two cores of CI). `call_seconds`: each child's call limit, far above honest
    need on a busy machine by default: these files are about verdicts, not time limits. A message
    that does not render fails the grading, unless `tolerate_render_failures` (the rendering test,
    which lists every such message) makes it "RENDER FAILED: ..."."""
    jobs = [(str(job[0]), job[1], job[2] if len(job) > 2 else "en") for job in jobs]
    groups = [g for g in _groups(jobs, processes) if g]
    results = [None] * len(jobs)
    # one thread per process, each feeding its process and waiting for it: the processes grade at once
    with ThreadPoolExecutor(max_workers=max(1, len(groups))) as pool:
        graded = pool.map(lambda g: _run_group([jobs[i] for i in g], call_seconds, tolerate_render_failures,
                                               timeout), groups)
        for group, checks in zip(groups, graded):
            for i, found in zip(group, checks):
                results[i] = found
    return results


def summary(checks, width=400):
    """One line per check (number, status, misconceptions, the start of its message): an assertion's text."""
    return "\n".join(f"{c['number']} {c['status']} {c['misconceptions']}: {c['output'][:width]}" for c in checks)
