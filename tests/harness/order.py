"""The test files in the order that finishes first on two workers: slowest first (issue 27).

`.ci/run` hands each file to one of xdist's two workers (`--dist loadfile`), in the order the files
are collected (`--no-loadscope-reorder`: xdist's own reorder puts the files with the most tests
first, which sends the few slow end-to-end files last, one worker alone with them at the end).
The longest files first, the short ones fill the gaps: the longest-processing-time rule.

tests/harness/order.json ranks the files: a list of paths, slowest first, or {path: seconds} as
a run measured them. A file it does not name comes after those it names, with the short ones
(the list names every file that takes long; a new slow file belongs in it). `ATTENTION_KIT_RECORD_ORDER=1 bash .ci/run` writes the seconds this run took per
file (setup, call and teardown of its tests, on its worker) into order.json.
"""
import json
import os
from pathlib import Path

ORDER = Path(__file__).with_name("order.json")
RECORD = os.environ.get("ATTENTION_KIT_RECORD_ORDER") == "1"


def ranks(order=None):
    """{file: rank}, 0 the slowest."""
    order = json.loads(ORDER.read_text(encoding="utf-8")) if order is None else order
    if isinstance(order, dict):
        order = sorted(order, key=lambda f: -order[f])
    return {f: i for i, f in enumerate(order)}


def slowest_first(items, order=None):
    """Reorder pytest's items in place: file by file, the slowest file first; the tests of one file
    stay together and in their order."""
    rank = ranks(order)
    unknown = len(rank)
    first_seen = {}
    for item in items:
        first_seen.setdefault(item.nodeid.split("::")[0], len(first_seen))
    items.sort(key=lambda item: (rank.get(item.nodeid.split("::")[0], unknown),
                                 first_seen[item.nodeid.split("::")[0]]))


class Recorder:
    """Seconds per file from the reports the controller receives (every worker's)."""

    def __init__(self):
        self.seconds = {}

    def pytest_runtest_logreport(self, report):
        path = report.nodeid.split("::")[0]
        self.seconds[path] = self.seconds.get(path, 0.0) + report.duration

    def pytest_sessionfinish(self, session):
        if self.seconds:
            ORDER.write_text(json.dumps({f: round(s, 1) for f, s in
                                         sorted(self.seconds.items(), key=lambda kv: -kv[1])}, indent=1) + "\n",
                             encoding="utf-8")
