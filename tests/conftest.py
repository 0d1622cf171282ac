"""Shared helpers: grade a submission through the real command line, once per session."""
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# the call limit of a child a test builds for anything but the limit itself: far above honest need on a
# loaded machine (a child's first torch import and autograd), so no verdict depends on speed (issue 27)
ROOMY_SECONDS = 120.0
ROOMY_TIMEOUT = ("--call-timeout", f"{ROOMY_SECONDS:g}")     # the same, on `grade`'s command line


def run_grader(submission, tmp_path, *extra, warm=None):
    """Run `python -m autograder grade` in a fresh process; return (exit code, stdout, results).
    With `warm` (the `warm_cli` fixture), the same command line in that worker's warm process
    (tests/harness/warm_cli.py), unless the environment changed since it started."""
    results = Path(tmp_path) / "results.json"
    # a call limit far above honest work on a busy machine (a test about time limits gives its own,
    # which comes later and wins)
    argv = ["grade", str(submission), "--results", str(results), *ROOMY_TIMEOUT, *extra]
    from harness import warm_cli
    code, output = warm_cli.fresh(argv) if warm is None else warm.run(argv)
    data = json.loads(results.read_text()) if results.exists() else None
    return code, output, data


@pytest.fixture(scope="session")
def warm_cli(tmp_path_factory):
    """This worker's warm `python -m autograder` (tests/harness/warm_cli.py): hand it to run_grader
    as warm= where the test reads what `grade` prints and writes, not how its process starts."""
    from harness.warm_cli import WarmCli
    server = WarmCli(tmp_path_factory.mktemp("warm-cli"))
    yield server
    server.close()


@pytest.fixture(scope="session")
def graded(tmp_path_factory, warm_cli):
    """graded(path, *options) -> (exit code, output, results); each submission is graded once per
    run with the same options (e.g. "--lang", "zh"), whichever file and worker asks first: the
    graded corpus (tests/harness/corpus.py), graded by the worker's warm command line."""
    from harness import corpus
    shared = corpus.Corpus(corpus.store(tmp_path_factory),
                           lambda submission, folder, *options: run_grader(ROOT / submission, folder, *options,
                                                                           warm=warm_cli))
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
