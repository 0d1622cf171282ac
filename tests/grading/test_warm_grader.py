"""The fast paths of issue 7 keep grades exact: a warm grader (one pytest session for many
submissions) grades each one as a fresh `grade` would, nothing of one submission leaks into the
next, and every step's child starts (its file loading) before the first check runs."""
import dataclasses
import json
import os
import shutil
import subprocess
import sys

import pytest

from autograder import contract
from autograder.grading import run as grading

SAMPLES = grading.Path(__file__).resolve().parent.parent.parent / "samples"
STEP = "03_scaling"


def outcomes(report):
    return [(c.number, c.status, c.score, c.output, tuple(c.misconceptions))
            for s in report.steps for c in s.checks]


@pytest.fixture(scope="module")
def submissions(tmp_path_factory):
    """Two step-3 files: one whose float32 result is promoted (a note on 3.3), one that keeps float32."""
    root = tmp_path_factory.mktemp("warm")
    promoted = root / "promoted"
    promoted.mkdir()
    shutil.copy(SAMPLES / "lesson" / f"{STEP}.py", promoted)
    kept = root / "kept"
    kept.mkdir()
    (kept / f"{STEP}.py").write_text("import math\n\ndef scale_scores(scores, d_k):\n"
                                     "    return scores / math.sqrt(d_k)\n")
    broken = root / "broken"
    broken.mkdir()
    (broken / f"{STEP}.py").write_text("def scale_scores(scores, d_k):\n    return scores * d_k ** 0.5\n")
    return {"promoted": promoted, "kept": kept, "broken": broken}


def test_a_warm_grader_grades_each_submission_as_a_fresh_grade_does(submissions):
    fresh = {name: outcomes(grading.grade(path, steps=[STEP])) for name, path in submissions.items()}
    started = grading.SUITE_RUNS
    warm = grading.Grader()
    try:
        again = [(name, outcomes(warm.grade(path, steps=[STEP])))
                 for name in ("promoted", "kept", "broken", "kept", "promoted") for path in [submissions[name]]]
    finally:
        warm.close()
    assert grading.SUITE_RUNS == started + 1          # one pytest session for all five
    for name, got in again:
        assert got == fresh[name], name
    # the note of the promoted submission did not stay on the check for the next one
    notes = {name: str(dict((n, out) for n, _, _, out, _ in got)["3.3"]) for name, got in again}
    assert "NumPy 2" in notes["promoted"] and notes["kept"] == "Passed."
    assert any("scale-multiplied" in m for *_, m in fresh["broken"])


def test_every_step_child_starts_loading_before_the_first_check():
    job = grading.Job(SAMPLES / "unusual_style").start_children()
    try:
        job.wait_started()
        assert set(job.children) == {s.stem for s in grading.contract.STEPS}
        for stem, session in job.children.items():
            assert session.child is not None and session.child.alive, stem
            assert session.pending_load is not None, stem     # the load request is on its way
    finally:
        job.close_children()
    assert job.build_report().score == 0          # no check ran: every step's checks are absent
    for session in job.children.values():
        assert session.child is None        # closed: killed and cleaned up


def test_a_broken_hidden_suite_stops_the_grader_with_its_error(submissions, tmp_path, monkeypatch):
    """The grader's own fault, told in full: pytest's terminal report is off, the error is not lost."""
    suites = tmp_path / "suites"
    shutil.copytree(grading.SUITES_DIR, suites, ignore=shutil.ignore_patterns("__pycache__"))
    (suites / f"step{STEP}.py").write_text("import no_such_module_for_the_suite\n")
    monkeypatch.setattr(grading, "SUITES_DIR", suites)
    # the suites are found through the registry: the assignment's entry points at the broken copy
    name = contract.assignment_of_step(STEP).name
    monkeypatch.setitem(contract.REGISTRY, name, dataclasses.replace(contract.REGISTRY[name], suites=suites))
    # pytest's importlib mode would reuse the real suite, imported under the same name earlier
    monkeypatch.delitem(sys.modules, f"step{STEP}", raising=False)
    with pytest.raises(RuntimeError, match="no_such_module_for_the_suite"):
        grading.grade(submissions["kept"], steps=[STEP])


WARM_PROBE = """\
import json, sys
from autograder.grading import run as grading
from autograder.sandbox import zygote
assert zygote.current() is None          # nothing started it early: no command, no batch worker
report = grading.grade(sys.argv[1], steps=sys.argv[2].split(","))
print(json.dumps({"score": report.score, "zygotes": sorted(zygote.current() or {}),
                  "start": report.isolation["start"]}))
"""


def probe(steps, warm="1"):
    """Grade samples/unusual_style's `steps` through the library in a fresh process."""
    proc = subprocess.run([sys.executable, "-c", WARM_PROBE, str(SAMPLES / "unusual_style"), ",".join(steps)],
                          cwd=SAMPLES.parent, env=dict(os.environ, ATTENTION_KIT_WARM=warm),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("warm", ["1", "0"])
def test_a_process_that_grades_through_the_library_forks_its_children_warm(warm):
    """`grading.grade` called from any process (a script, a test) starts a framework's zygote at its
    second child of that framework, as the commands start them early; ATTENTION_KIT_WARM=0 keeps a
    fresh interpreter per child. The grades are the same either way."""
    got = probe(["01_projection", "02_scores", "06_multi_head", "07_full_module"], warm)
    assert got["score"] == 40
    if warm == "1":
        assert got["zygotes"] == ["numpy", "torch"] and got["start"].startswith("forked from a zygote")
    else:
        assert got["zygotes"] == [] and got["start"] == "a fresh python -I runner.py per child"


def test_a_process_that_grades_one_step_starts_no_zygote():
    """A kernel's `grade_step` grades one step: one child, and no zygote it would use once."""
    got = probe(["06_multi_head"])
    assert got["score"] == 10 and got["zygotes"] == [] and got["start"] == "a fresh python -I runner.py per child"


# a plugin that, were it loaded into the grader, would mark its presence and grade nothing
MEDDLING_PLUGIN = """\
import pathlib
def pytest_configure(config):
    pathlib.Path(__file__).with_suffix(".loaded").write_text("loaded")
def pytest_collection_modifyitems(items):
    items.clear()
"""


def test_the_callers_pytest_variables_never_reach_the_hidden_suites(submissions, tmp_path, monkeypatch, capfd):
    """A course's CI sets PYTEST_ADDOPTS, PYTEST_PLUGINS or PYTEST_DEBUG for its own tests: the
    grader's sessions read none of them (before, `--junitxml` in PYTEST_ADDOPTS failed every grade
    with a usage error, and `-k` or a plugin could deselect checks). The same grades in-process and
    through `python -m autograder grade`, nothing loaded or written, the caller's variables kept."""
    before = outcomes(grading.grade(submissions["broken"], steps=[STEP]))
    (tmp_path / "meddling_plugin.py").write_text(MEDDLING_PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    junit = tmp_path / "junit.xml"
    meddling = {"PYTEST_ADDOPTS": f"--junitxml={junit} -k no_check_has_this_name -p meddling_plugin",
                "PYTEST_PLUGINS": "meddling_plugin", "PYTEST_DEBUG": "1"}
    for name, value in meddling.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    capfd.readouterr()
    assert outcomes(grading.grade(submissions["broken"], steps=[STEP])) == before
    assert "pytest_configure [hook]" not in capfd.readouterr().err      # PYTEST_DEBUG's trace
    assert {name: os.environ.get(name) for name in meddling} == meddling
    assert "PYTEST_DISABLE_PLUGIN_AUTOLOAD" not in os.environ
    results = tmp_path / "results.json"
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(submissions["broken"]), "--steps", STEP,
                           "--results", str(results), "--quiet"], cwd=SAMPLES.parent, capture_output=True,
                          text=True, timeout=600, env=dict(os.environ, PYTHONPATH=str(tmp_path)))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "pytest_configure [hook]" not in proc.stderr
    graded = json.loads(results.read_text(encoding="utf-8"))
    assert graded["score"] == sum(score for _, _, score, _, _ in before)
    assert not junit.exists() and not (tmp_path / "meddling_plugin.loaded").exists()
