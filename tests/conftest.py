"""Shared helpers: grade a submission through the real command line, once per session."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_grader(submission, tmp_path, *extra):
    """Run `python -m autograder grade` in a fresh process; return (exit code, stdout, results)."""
    results = Path(tmp_path) / "results.json"
    # a call limit far above honest work on a busy machine (a test about time limits gives its own,
    # which comes later and wins)
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(submission), "--results",
                           str(results), "--call-timeout", "120", *extra], cwd=ROOT, capture_output=True, text=True,
                          timeout=900)
    data = json.loads(results.read_text()) if results.exists() else None
    return proc.returncode, proc.stdout + proc.stderr, data


@pytest.fixture(scope="session")
def graded(tmp_path_factory):
    """graded(path, *options) -> (exit code, output, results); each submission is graded once per
    run with the same options (e.g. "--lang", "zh"), whichever file and worker asks first: the
    graded corpus (tests/harness/corpus.py)."""
    from harness import corpus
    shared = corpus.Corpus(corpus.store(tmp_path_factory),
                           lambda submission, folder, *options: run_grader(ROOT / submission, folder, *options))
    return shared.get


def by_step(results):
    """{step stem: [tests]} from a results.json."""
    steps = {}
    for t in results["tests"]:
        stem = next(tag for tag in t["tags"] if tag.startswith("step:"))[5:]
        steps.setdefault(stem, []).append(t)
    return steps


def tags_of(results, stem):
    return {tag for t in by_step(results)[stem] for tag in t["tags"]}


def pytest_collection_modifyitems(config, items):
    """The slowest files first (tests/harness/order.py): two workers finish together."""
    from harness import order
    order.slowest_first(items)


def pytest_configure(config):
    from harness import order
    if order.RECORD and not hasattr(config, "workerinput"):      # the controller, or a run without xdist
        config.pluginmanager.register(order.Recorder(), "attention-kit-order")
