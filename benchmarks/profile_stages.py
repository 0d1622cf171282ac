"""Where a grade's time goes, per stage (a profile for docs/benchmark-profile.md, not a test).

    .venv/bin/python benchmarks/profile_stages.py ASSIGNMENT SUBMISSION [--floor] [--repeat 2]

In one process, as a cold `python -m autograder grade` and then a warm batch worker would: the
imports (torch's own share timed apart), opening the suites (pytest's configure and collection, which
imports the suites and the references), then `--repeat` grades of SUBMISSION through the stages of
`grading.run.grade` (discover, start children, run checks, close children, build the report), the
first cold, the others warm (the same `Suites`, as a `Grader` keeps them). Every check is timed
three ways: pytest's whole protocol for the item (setup, call, teardown, reporting), the call
alone, and within the call the time spent waiting for the child (`StepChild.request`); so pytest's
own overhead per check and the checks' own work in the parent are apart from the student's side.
With --floor the children are floor.py's in-process ones. Prints one JSON object of seconds ([wall, this process's CPU] for the imports and stages).
"""
import argparse
import collections
import json
import sys
import time
from pathlib import Path

T0 = time.perf_counter()
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def clock():
    """(wall, this process's CPU) seconds: on a loaded machine the CPU figure is the steadier one."""
    return time.perf_counter(), time.process_time()


def since(t):
    wall, cpu = clock()
    return [round(wall - t[0], 4), round(cpu - t[1], 4)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("assignment")
    ap.add_argument("submission")
    ap.add_argument("--floor", action="store_true", help="the student's code in-process (benchmarks/floor.py)")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    out = {"imports": {}}
    if not args.floor:      # as __main__ does: the zygotes import numpy and torch beside the grader's imports
        from autograder.sandbox import zygote
        zygote.start_unless_disabled()
    t = clock()
    import numpy  # noqa: F401
    out["imports"]["numpy"] = since(t)
    t = clock()
    import torch  # noqa: F401
    out["imports"]["torch"] = since(t)
    t = clock()
    from autograder.grading import run
    out["imports"]["autograder.grading.run (pytest, the kit)"] = since(t)
    limits = None
    if args.floor:
        import floor
        from autograder.sandbox.limits import Limits
        run.StepChild = floor.InProcessStepChild
        limits = Limits(isolation="process")
    child_class = run.StepChild

    # time in the child: every request the checks send, timed where the StepChild answers it
    waiting = [0.0]
    real_request = child_class.request

    def timed_request(self, message, what):
        asked = time.perf_counter()
        try:
            return real_request(self, message, what)
        finally:
            waiting[0] += time.perf_counter() - asked
    child_class.request = timed_request

    class Timer:
        """Per check: pytest's whole protocol, the call alone, the child's share of the call."""
        def __init__(self):
            self.rows = collections.defaultdict(lambda: [0.0, 0.0, 0.0])

        def pytest_runtest_protocol(self, item, nextitem):
            self._t = time.perf_counter()

        def pytest_runtest_logfinish(self, nodeid, location):
            self.rows[nodeid][0] += time.perf_counter() - self._t

        def pytest_runtest_call(self, item):
            self._c, self._w = time.perf_counter(), waiting[0]

        def pytest_runtest_teardown(self, item, nextitem):
            if hasattr(self, "_c"):
                self.rows[item.nodeid][1] += time.perf_counter() - self._c
                self.rows[item.nodeid][2] += waiting[0] - self._w
                del self._c

    t = clock()
    suites = run.Suites(run.graded_steps(args.assignment))
    out["open suites (pytest configure + collect: suites, references)"] = since(t)
    timer = Timer()
    suites.config.pluginmanager.register(timer, "profile-timer")
    out["grades"] = []
    for i in range(args.repeat):
        timer.rows.clear()
        stages = {}
        t = clock()
        job = run.Job(args.submission, limits)
        stages["1 discover"] = since(t)
        run.one_math_thread()
        t = clock()
        job.start_children()
        job.wait_started()
        stages["2 start children (to the last one started)"] = since(t)
        t = clock()
        suites.run_checks(job)
        stages["3 run checks"] = since(t)
        t = clock()
        job.close_children()
        stages["4 close children"] = since(t)
        t = clock()
        report = job.build_report()
        stages["5 build report"] = since(t)
        rows = list(timer.rows.values())
        per_step = collections.defaultdict(float)
        for nodeid, (whole, call, child) in timer.rows.items():
            per_step[nodeid.split("::")[0].rsplit("/", 1)[-1]] += whole
        slowest = sorted(timer.rows.items(), key=lambda kv: -kv[1][0])[:8]
        out["grades"].append({
            "warm": i > 0, "score": f"{report.score:g}/{report.max_score:g}", "stages": stages,
            "checks": len(rows),
            "checks: pytest protocol, all": sum(r[0] for r in rows),
            "checks: call, all": sum(r[1] for r in rows),
            "checks: waiting for the child, all": sum(r[2] for r in rows),
            "pytest overhead per check (protocol - call)": (sum(r[0] - r[1] for r in rows) / len(rows)) if rows else 0,
            "per suite": dict(per_step),
            "slowest checks [protocol, call, child]": {k.split("::")[-1]: v for k, v in slowest}})
    suites.close()
    out["process total"] = [time.perf_counter() - T0, time.process_time()]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
