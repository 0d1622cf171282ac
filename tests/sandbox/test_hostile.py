"""The hostile corpus: whatever a submission does, the grader finishes, and the outcome is exact.

Each case in tests/hostile/ is one misbehaving step file on top of otherwise correct code
(samples/unusual_style for the other steps). For each: the score of every step, the message,
results.json small and clean, no kit file changed, no process left behind. The cases are graded
one after another by one warm grader process (harness.hostile.WarmGrader), each checked for
what it left before the next one starts. One case goes through `autograder grade` itself.
"""
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from autograder.sandbox import isolation
from conftest import ROOT
from harness.hostile import (CORPUS, EXPECTED, HONEST_SECONDS, IPC_BEFORE, Listener, MODE, NEEDS_ISOLATION,
                             NEW_EXPECTED, NEW_STEP, NEW_STEP_BATCH, STEPS, TIME_CASES, WarmGrader, call_seconds,
                             correct_kv_cache, grade, ipc_objects, kit_fingerprint, leftover_cgroups, leftover_files,
                             live_child_processes, new_step_variant, submission_with)


def test_the_corpus_is_complete():
    cases = {p.name.split(".")[0] for p in CORPUS.glob("*.04_softmax.py")}
    assert cases == set(EXPECTED) and len(cases) >= 20
    assert {p.name.split(".", 1)[1] for p in CORPUS.glob("*.py")} == {"04_softmax.py", f"{NEW_STEP}.py"}


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    grader = WarmGrader(tmp_path_factory.mktemp("warm-grader"))
    yield grader
    grader.close()


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_hostile_submission_gets_its_exact_outcome(case, warm, tmp_path):
    if MODE == "refused":
        pytest.skip("the grader refuses to run student code here (run as root, or allow user namespaces); "
                    "tests/sandbox/test_accounts.py grades this corpus as every account, from root")
    (case_file,) = CORPUS.glob(f"{case}.*.py")
    stem = case_file.name.split(".")[1]
    before = kit_fingerprint()
    listener = Listener() if case == "network" else None
    try:
        proc = warm.grade(submission_with(tmp_path, case_file), tmp_path / "results.json", call_seconds(case),
                          [stem] if case in TIME_CASES else STEPS)
    finally:
        if listener:
            listener.close()
    assert proc.returncode == 0, proc.output
    results = json.loads((tmp_path / "results.json").read_text())
    steps = results["extra_data"]["steps"]
    score, phrase = EXPECTED[case]
    assert steps[stem]["score"] == score, [t["output"][:300] for t in results["tests"] if t["status"] == "failed"]
    assert set(steps) == ({stem} if case in TIME_CASES else set(STEPS))
    assert all(s["score"] == 10 for k, s in steps.items() if k != stem), "other steps graded normally"
    if phrase:
        failed = [t["output"] for t in results["tests"] if f"step:{stem}" in t["tags"] and t["status"] == "failed"]
        assert phrase in failed[0]
    assert (tmp_path / "results.json").stat().st_size < 64_000, "results stay small"
    text = (tmp_path / "results.json").read_text()
    assert "BEGIN SOLUTION" not in text and "step04_softmax" not in text and "solutions/" not in text
    # nothing of the grader's own processes: their command lines name the kit's paths
    assert "autograder/" not in text and "zygote.py" not in text and "pytest" not in text
    assert kit_fingerprint() == before, "no file of the kit changed"
    if MODE == "uid":            # the uids this case's children ran as, so that what is left is its own
        assert proc.uids, "the grader named no child uid for this case"
    assert live_child_processes(proc.uids) == [], "no process left behind"
    assert ipc_objects() <= IPC_BEFORE and not leftover_files(), "no IPC object or file left behind"
    assert not leftover_cgroups(proc.uids), "no memory cgroup left behind"
    if listener:
        assert listener.accepted == 0, "the child reached the network"


@NEEDS_ISOLATION
def test_printing_without_end_is_cut_to_an_excerpt(tmp_path):
    """Through the command line: `autograder grade` of a hostile case writes the same results."""
    proc = grade(submission_with(tmp_path, CORPUS / "print_flood.04_softmax.py"), tmp_path / "r.json")
    assert proc.returncode == 0
    printed = json.loads((tmp_path / "r.json").read_text())["extra_data"]["steps"]["04_softmax"]["printed"]
    assert printed.startswith("spam spam") and "more characters" in printed and len(printed) < 2200


def test_a_batch_mixing_hostile_and_honest_grades_the_honest_exactly_as_alone(tmp_path):
    """One grader process grades an honest submission, then hostile ones, then the honest again."""
    honest = ROOT / "samples" / "unusual_style"
    hostile = []
    for case in ("fork_bomb", "daemon", "memory_hog", "os_exit_in_call", "print_flood", "signal_grader"):
        (case_file,) = CORPUS.glob(f"{case}.*.py")
        folder = tmp_path / case
        folder.mkdir()
        hostile.append(submission_with(folder, case_file))
    script = ("import json, sys\nfrom autograder.grading import run as grading; from autograder.reports import gradescope_json as report\nfrom autograder.sandbox.limits import Limits\n"
              "out = []\nfor sub in sys.argv[1:]:\n"
              f"    r = grading.grade(sub, Limits(call_seconds={HONEST_SECONDS}, memory_bytes=1 << 30), "
              f"{STEPS!r})\n"
              "    out.append(report.gradescope(r))\nprint(json.dumps(out))\n")
    subs = [honest] + hostile + [honest]
    log = tmp_path / "uids.log"
    proc = subprocess.Popen([sys.executable, "-c", script] + [str(s) for s in subs], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, ATTENTION_KIT_UID_LOG=str(log)))
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    graded = json.loads(out)
    first, last = graded[0], graded[-1]
    assert first["score"] == last["score"] == 50
    strip = [{k: t[k] for k in ("number", "score", "status", "output", "tags")} for t in first["tests"]]
    assert strip == [{k: t[k] for k in ("number", "score", "status", "output", "tags")} for t in last["tests"]]
    assert live_child_processes({int(u) for u in log.read_text().split()} if log.exists() else None) == []


@pytest.fixture(scope="module")
def new_step_graded(tmp_path_factory):
    """{case or "honest-before"/"honest-after": results} for every attack moved into step 5, graded in
    one process, and what the batch left behind: (results, leftovers)."""
    folder = tmp_path_factory.mktemp("new_step")
    args = []
    for name, text in [("honest-before", correct_kv_cache())] + [
            (case, new_step_variant(next(CORPUS.glob(f"{case}.*.py")))) for case in sorted(NEW_EXPECTED)] + [
            ("honest-after", correct_kv_cache())]:
        (folder / name).mkdir()
        (folder / name / f"{NEW_STEP}.py").write_text(text)
        args.append(f"{name}:{folder / name}:{call_seconds(name)}")
    before, log, listener = kit_fingerprint(), folder / "uids.log", Listener()
    try:
        proc = subprocess.run([sys.executable, "-c", NEW_STEP_BATCH, NEW_STEP, *args], cwd=ROOT, capture_output=True,
                              text=True, timeout=900, env=dict(os.environ, ATTENTION_KIT_UID_LOG=str(log)))
    finally:
        listener.close()
    assert proc.returncode == 0, proc.stderr[-3000:]
    uids = {int(u) for u in log.read_text().split()} if log.exists() else None
    left = {"kit changed": kit_fingerprint() != before, "processes": live_child_processes(uids),
            "ipc": sorted(ipc_objects() - IPC_BEFORE), "files": leftover_files(), "cgroups": leftover_cgroups(uids),
            "connections": listener.accepted}
    return json.loads(proc.stdout), left


def test_the_new_step_corpus_is_the_whole_corpus():
    own = {p.name.split(".")[0] for p in CORPUS.glob(f"*.{NEW_STEP}.py")}
    assert set(NEW_EXPECTED) == set(EXPECTED) | own and own


@NEEDS_ISOLATION
@pytest.mark.parametrize("case", sorted(NEW_EXPECTED))
def test_hostile_attack_in_the_new_step_gets_its_exact_outcome(case, new_step_graded):
    graded, _left = new_step_graded
    results = graded[case]
    score, phrase = NEW_EXPECTED[case]
    assert results["score"] == score, [t["output"][:300] for t in results["tests"] if t["status"] == "failed"]
    if phrase:
        assert phrase in next(t["output"] for t in results["tests"] if t["status"] == "failed")
    text = json.dumps(results)
    assert len(text) < 64_000, "results stay small"
    assert "BEGIN SOLUTION" not in text and "step05_kv_cache" not in text and "solutions/" not in text
    assert "autograder/" not in text and "zygote.py" not in text and "pytest" not in text


@NEEDS_ISOLATION
def test_the_new_step_batch_goes_on_and_leaves_nothing(new_step_graded):
    graded, left = new_step_graded
    strip = [{k: t[k] for k in ("number", "score", "status", "output", "tags")} for t in graded["honest-before"]["tests"]]
    assert graded["honest-before"]["score"] == 10
    assert strip == [{k: t[k] for k in ("number", "score", "status", "output", "tags")}
                     for t in graded["honest-after"]["tests"]]
    assert left == {"kit changed": False, "processes": [], "ipc": [], "files": [], "cgroups": [], "connections": 0}
