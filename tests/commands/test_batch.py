"""grade-all: a generated class of 100+ submissions graded in a batch gets the grades each would get alone.

The class is built from a few variants of each numpy step file (correct code in an unusual style,
the lesson's code with its mistakes, a released stub as a notebook, a mutant, the file missing),
mixed per student; a few students carry the torch steps, a few a hostile step. Each variant's score
is measured once by grading it alone, so every student's expected grade follows from its mix.
"""
import csv
import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from autograder import contract
from autograder.commands import batch
from conftest import ROOMY_SECONDS, ROOMY_TIMEOUT, ROOT

NUMPY = ["01_projection", "02_scores", "03_scaling", "04_softmax", "05_weighted_sum"]
TORCH = ["06_multi_head", "07_full_module"]
ALL = NUMPY + TORCH
LIMITS = [*ROOMY_TIMEOUT, "--memory-gib", "1"]   # far above honest calls on a busy machine
# print_flood: 9, its 5 MB strings per call are over the memory allowance of 4.9 (tests/sandbox/test_hostile.py)
HOSTILE = {"fork_bomb": 10, "os_exit_in_call": 0, "memory_hog": 0, "print_flood": 9, "signal_grader": 10,
           "segfault": 0}
N_STUDENTS = 104


def variant_file(variant, stem, dest):
    """Write step `stem` of `variant` into folder `dest` (nothing for "missing")."""
    if variant == "style":
        shutil.copy(ROOT / "samples" / "unusual_style" / f"{stem}.py", dest)
    elif variant == "lesson":
        shutil.copy(ROOT / "samples" / "lesson" / f"{stem}.py", dest)
    elif variant == "stub":
        shutil.copy(ROOT / "assignments" / "self_attention" / f"{stem}.ipynb", dest)
    elif variant == "mutant":   # correct code with one slip: the scores' scale multiplied, the sum's axis ...
        text = (ROOT / "samples" / "unusual_style" / f"{stem}.py").read_text()
        (dest / f"{stem}.py").write_text(text + "\n\n_real = {0}\n\ndef {0}(*a, **k):\n"
                                         "    return _real(*a, **k) * 1.5\n".format(contract.STEP_BY_STEM[stem].names[0]))


VARIANTS = ["style", "lesson", "stub", "mutant", "missing"]


def mix(i):
    """Which variant student i has for each numpy step (deterministic, every variant everywhere)."""
    return {stem: VARIANTS[(i * (k + 2) + i // 5) % len(VARIANTS)] for k, stem in enumerate(NUMPY)}


def run(*args, timeout=600):
    proc = subprocess.run([sys.executable, "-m", "autograder", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def grade_alone(folder, tmp_path, warm):
    """`grade FOLDER` of one student, in the worker's warm command line (tests/harness/warm_cli.py)."""
    results = tmp_path / f"alone-{folder.name}.json"
    code, output = warm.run(["grade", str(folder), "--results", str(results), *LIMITS])
    assert code == 0, output
    return json.loads(results.read_text())


def step_scores(results):
    return {stem: s["score"] for stem, s in results["extra_data"]["steps"].items()}


@pytest.fixture(scope="module")
def klass(tmp_path_factory, warm_cli):
    """The class on disk, every variant's scores graded alone, and the batch graded once."""
    tmp = tmp_path_factory.mktemp("class")
    root, out = tmp / "class", tmp / "out"
    root.mkdir()
    variant_scores = {}
    for v in VARIANTS:
        folder = tmp / "variants" / v
        folder.mkdir(parents=True)
        for stem in NUMPY:
            variant_file(v, stem, folder)
        scores = step_scores(grade_alone(folder, tmp, warm_cli)) if v != "missing" else {}
        variant_scores[v] = {stem: scores.get(stem, 0) for stem in NUMPY}
    expected = {}
    for i in range(N_STUDENTS):
        name = f"student{i:03d}"
        folder = root / name
        folder.mkdir()
        want = {}
        for stem, v in mix(i).items():
            variant_file(v, stem, folder)
            want[stem] = variant_scores[v][stem]
        if i % 25 == 0:                   # a few carry the torch steps (correct)
            for stem in TORCH:
                variant_file("style", stem, folder)
        want.update({stem: 10 if i % 25 == 0 else 0 for stem in TORCH})
        expected[name] = want
    for j, (case, score) in enumerate(sorted(HOSTILE.items())):   # hostile step 04 on correct code
        name = f"hostile_{case}"
        folder = root / name
        folder.mkdir()
        for stem in NUMPY:
            variant_file("style", stem, folder)
        (case_file,) = (ROOT / "tests" / "hostile").glob(f"{case}.*.py")
        shutil.copy(case_file, folder / "04_softmax.py")
        expected[name] = {**{s: 10 for s in NUMPY}, "04_softmax": score, **{s: 0 for s in TORCH}}
    for name in ("student001", "student002", "student025"):       # zip files: the folder's files, zipped
        with zipfile.ZipFile(root / f"{name}z.zip", "w") as zf:
            for p in sorted((root / name).iterdir()):
                zf.write(p, f"work/{p.name}")
        expected[f"{name}z"] = expected[name]
    proc = run("grade-all", str(root), "--results-dir", str(out), "--csv", str(tmp / "grades.csv"),
               "--jobs", "2", *LIMITS)
    return {"root": root, "out": out, "csv": tmp / "grades.csv", "expected": expected, "tmp": tmp,
            "log": proc.stderr, "warm": warm_cli}


def batch_results(out, name):
    return json.loads((out / name / "results.json").read_text())


def test_every_student_gets_the_grades_its_files_get_alone(klass):
    assert len(klass["expected"]) >= 100
    wrong = {}
    for name, want in klass["expected"].items():
        got = step_scores(batch_results(klass["out"], name))
        if got != want:
            wrong[name] = (got, want)
    assert not wrong
    assert "0 errors" in klass["log"]


def test_a_sample_matches_single_grading_check_by_check(klass):
    for name in ("student000", "student007", "student013", "hostile_memory_hog"):
        alone = grade_alone(klass["root"] / name, klass["tmp"], klass["warm"])
        mine = batch_results(klass["out"], name)
        keys = ("number", "score", "status", "output", "tags")
        assert [{k: t[k] for k in keys} for t in mine["tests"]] == [{k: t[k] for k in keys} for t in alone["tests"]]
        assert mine["score"] == alone["score"]


def test_the_csv_gradebook_has_a_row_per_student_and_a_column_per_step(klass):
    rows = list(csv.DictReader(klass["csv"].open(encoding="utf-8-sig")))
    assert list(rows[0]) == ["student"] + ALL + ["total", "max_score", "error"]
    assert sorted(r["student"] for r in rows) == sorted(klass["expected"])
    for r in rows:
        want = klass["expected"][r["student"]]
        assert {s: float(r[s]) for s in ALL} == want
        assert float(r["total"]) == sum(want.values()) and r["max_score"] == "70"


def test_a_rerun_skips_unchanged_students_and_regrades_a_changed_one(klass):
    proc = run("grade-all", str(klass["root"]), "--results-dir", str(klass["out"]), "--jobs", "2", *LIMITS)
    assert f"0 graded, {len(klass['expected'])} unchanged" in proc.stderr
    changed = klass["root"] / "student003" / "01_projection.py"
    original = changed.read_bytes()
    changed.write_bytes(original + b"\n# one more line\n")
    try:
        proc = run("grade-all", str(klass["root"]), "--results-dir", str(klass["out"]), "--jobs", "2", *LIMITS)
        assert f"1 graded, {len(klass['expected']) - 1} unchanged" in proc.stderr
        regraded = [ln for ln in proc.stderr.splitlines() if f"/{len(klass['expected'])}]" in ln and "unchanged" not in ln]
        assert len(regraded) == 1 and "student003: " in regraded[0]
    finally:
        changed.write_bytes(original)


def test_an_nbgrader_layout_a_zip_with_a_path_traversal_and_a_broken_zip(tmp_path):
    course = tmp_path / "course"
    alice = course / "submitted" / "alice" / "self_attention"
    alice.mkdir(parents=True)
    shutil.copy(ROOT / "assignments" / "self_attention" / "04_softmax.ipynb", alice)   # a stub notebook
    shutil.copy(ROOT / "samples" / "unusual_style" / "01_projection.py", alice)
    subs = {s.student: s for s in batch.discover(course)}
    assert list(subs) == ["alice"] and subs["alice"].source == str(alice)

    flat = tmp_path / "flat"
    flat.mkdir()
    with zipfile.ZipFile(flat / "mallory.zip", "w") as zf:
        zf.writestr("../../escaped/01_projection.py", "raise SystemExit")      # traversal: ignored
        zf.writestr("/abs/02_scores.py", "raise SystemExit")                   # absolute: ignored
        zf.write(ROOT / "samples" / "unusual_style" / "03_scaling.py", "sub/03_scaling.py")
    (flat / "broken.zip").write_bytes(b"PK\x03\x04 not really a zip")
    files = batch.read_files(str(flat / "mallory.zip"))
    assert list(files) == ["sub/03_scaling.py"]
    out = tmp_path / "out"
    run("grade-all", str(flat), "--results-dir", str(out), "--csv", str(tmp_path / "g.csv"), *LIMITS)
    assert step_scores(batch_results(out, "mallory"))["03_scaling"] == 10
    broken = batch_results(out, "broken")
    assert broken["score"] == 0 and "could not be read" in broken["extra_data"]["error"]
    assert not (tmp_path / "escaped").exists() and not Path("/abs").exists()
    rows = {r["student"]: r for r in csv.DictReader((tmp_path / "g.csv").open(encoding="utf-8-sig"))}
    assert rows["mallory"]["total"] == "10" and rows["broken"]["error"]


def test_the_dask_path_gives_identical_results(klass, tmp_path):
    distributed = pytest.importorskip("distributed", reason="dask[distributed] is not installed (pip install "
                                      "'attention-kit[batch]')")
    small = tmp_path / "small"
    small.mkdir()
    names = ["student000", "student001", "student004", "hostile_os_exit_in_call", "student002z"]
    for name in names:
        src = klass["root"] / (name + ".zip" if name.endswith("z") else name)
        (shutil.copy if src.is_file() else shutil.copytree)(src, small / src.name)
    from autograder.sandbox.limits import Limits
    limits = Limits(call_seconds=ROOMY_SECONDS, memory_bytes=1 << 30)
    with distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        outcomes = batch.grade_all(small, tmp_path / "out", limits, scheduler=cluster.scheduler_address)
    assert {n: o for n, (o, _) in outcomes.items()} == {n: "graded" for n in names}
    keys = ("number", "score", "status", "output", "tags")
    for name in names:
        dask_r, local_r = batch_results(tmp_path / "out", name), batch_results(klass["out"], name)
        assert [{k: t[k] for k in keys} for t in dask_r["tests"]] == [{k: t[k] for k in keys} for t in local_r["tests"]]
        assert dask_r["score"] == local_r["score"]


def test_grade_all_in_chinese_then_in_english_writes_from_the_cache_without_regrading(tmp_path):
    """--lang decides only how results.json is written: the results are kept as data (graded.json,
    messages unrendered, diagnoses apart), so a rerun in English grades nothing again and writes
    every message, diagnosis included, in English; the parent's own messages (a broken zip) follow."""
    root = tmp_path / "class"
    (root / "carol").mkdir(parents=True)
    shutil.copy(ROOT / "samples" / "lesson" / "05_weighted_sum.py", root / "carol")   # scale-by-d-model
    (root / "broken.zip").write_bytes(b"PK\x03\x04 not really a zip")
    out = tmp_path / "out"
    first = run("grade-all", str(root), "--results-dir", str(out), "--jobs", "1", "--lang", "zh", *LIMITS)
    assert "1 graded, 0 unchanged, 1 errors" in first.stderr
    chinese, broken = batch_results(out, "carol"), batch_results(out, "broken")
    failed = [t for t in chinese["tests"] if t["status"] == "failed"]
    assert failed and all(re.search("[\u4e00-\u9fff]", t["output"]) for t in failed)
    assert any("\n可能的原因：" in t["output"] for t in failed)          # a diagnosis, in Chinese
    assert "无法读取该 zip 文件" in broken["extra_data"]["error"]
    cached = (out / "carol" / "graded.json").read_bytes()
    again = run("grade-all", str(root), "--results-dir", str(out), "--jobs", "1", *LIMITS)
    assert "0 graded, 1 unchanged, 1 errors" in again.stderr            # carol was not graded again
    assert (out / "carol" / "graded.json").read_bytes() == cached
    english = batch_results(out, "carol")
    assert [(t["number"], t["score"], t["tags"]) for t in english["tests"]] == [
        (t["number"], t["score"], t["tags"]) for t in chinese["tests"]]
    assert not any(re.search("[\u4e00-\u9fff]", t["output"]) for t in english["tests"])
    assert any("\nLikely cause: " in t["output"] for t in english["tests"])
    assert "could not be read" in batch_results(out, "broken")["extra_data"]["error"]


def test_what_decides_a_grade_is_derived_from_the_imports():
    """The resume fingerprint covers every module the grading code imports, found import by import
    (memo.py, imported by the suites only, was missed by the old hand-written list)."""
    import sys as _sys
    from autograder.commands import batch as _batch
    names = {str(p.relative_to(_batch.KIT_ROOT)) for p in _batch.grading_files()}
    for needed in ("autograder/checks/memo.py", "autograder/submitted_files.py", "autograder/suites/step04_softmax.py",
                   "autograder/child/runner.py", "solutions/step07_full_module.py", "autograder/checks/forbidden_apis.toml",
                   "autograder/checks/tolerances.py", "autograder/checks/gradients.py"):
        assert needed in names, needed
    # every kit module a grading run has imported in this process is among them
    import autograder.grading.run  # noqa: F401
    loaded = {m.__file__ for name, m in list(_sys.modules.items())
              if name.startswith("autograder.") and getattr(m, "__file__", None)}
    shown = {str(p) for p in _batch.grading_files()}
    # the commands and reports that do not grade (batch, which does, is among the roots)
    missing = {f for f in loaded - shown if "/commands/" not in f and "/reports/" not in f and "/tests/" not in f
               and "/reference/mutants" not in f and "/reference/equivalence" not in f
               and "/reference/domain" not in f}      # the domain coverage table's, read by a test and the docs
    assert not missing, missing


def zygotes_of(pid):
    """The frameworks of the zygotes process `pid` runs (its children whose command line ends with one)."""
    from autograder.sandbox import zygote
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        last = [a.decode(errors="replace") for a in argv if a][-1:] or [""]
        if ppid == pid and last[0] in zygote.FRAMEWORKS:
            found.add(last[0])
    return found


def test_a_pool_stopped_at_once_has_ended_its_manager_thread():
    """LocalPool.close(now=True) (an interrupted grade-all or audit) returns once the pool's manager
    thread has ended: at exit, Python 3.11's concurrent.futures wakes that thread without a lock
    while it may be closing its pipe, and the interrupted batch printed a traceback after its one
    line (CPython gh-125451; seen once in a busy run of test_refusals)."""
    import time
    pool = batch.LocalPool(1, ())
    busy = pool.submit(time.sleep, 600)           # a submission in hand, as when Ctrl-C comes
    manager = pool.pool._executor_manager_thread
    assert manager is not None and manager.is_alive() and not busy.done()
    pool.close(now=True)
    assert not manager.is_alive()


def test_the_workers_start_the_zygotes_of_the_classs_step_files_only():
    """A class that hands in numpy steps only starts no torch zygote in its workers (some 1.5 s of CPU
    each); a class with a torch step, or a pool told nothing, starts both."""
    import os
    from autograder.sandbox import zygote
    assert batch.frameworks_of_files([{"work/04_softmax.py": b""}, {"01_projection.ipynb": b""}]) == ("numpy",)
    assert batch.frameworks_of_files([{"x/06_multi_head.py": b""}, {"02_scores.py": b""}]) == ("numpy", "torch")
    assert batch.frameworks_of_files([{"notes.txt": b""}, {}]) == ()
    warm = zygote._warm_allowed()           # no zygotes at all with ATTENTION_KIT_WARM=0 or an NVIDIA GPU
    for frameworks, expected in ((("numpy",), {"numpy"}), (None, {"numpy", "torch"})):
        pool = batch.LocalPool(1, frameworks)
        try:
            worker = pool.submit(os.getpid).result(timeout=600)
            assert zygotes_of(worker) == (expected if warm else set())
        finally:
            pool.close()
