"""Issue 26: every assignment on every path. For each assignment (the kit's three: self_attention,
modern_attention, decoder (issue 31); and the test-only one, tests/third_assignment/, registered here
and nowhere in the kit), a few submissions are
graded ONCE in this process by a warm Grader (a folder, one file, a notebook), and once by
`grade-all` (a class that mixes the four assignments: folders and zips; an nbgrader course),
then every path's view of them is asserted: the same per-step scores as `grade` of the same
files, each path in that assignment's own terms (its steps, its maximum, its name).

Nothing here is timed: the class is graded once per module, the formats are written from the
reports already graded.
"""
import base64
import csv
from html import escape as html_escape
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest
import yaml

from autograder import contract, i18n, submitted_files
from autograder.commands import batch, gradescope_zip
from autograder.grading import run as grading
from autograder.reports import class_view, github, gradescope_json, html, junit, similarity

HERE = Path(__file__).resolve().parent.parent      # tests/
ROOT = HERE.parent
THIRD = HERE / "third_assignment" / "assignment.py"
ASSIGNMENTS = ["self_attention", "modern_attention", "decoder", "toy_scores"]     # the registry's order
PATHS = ["folder", "file", "notebook"]
TEMPLATES = ROOT / "templates"


# ------------------------------------------------------------------ the submissions
def reference_code(assignment, stem):
    """A correct step file: the assignment's reference (contract.Assignment.reference_file)."""
    return contract.REGISTRY[assignment].reference_file(stem).read_text()


def filled_notebook(assignment, stem):
    """The released stub notebook with the reference in its first solution cell (the others emptied)."""
    nb = json.loads((contract.REGISTRY[assignment].stub_folder / f"{stem}.ipynb").read_text())
    first = True
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell["cell_type"] == "code" and meta.get("solution") and not submitted_files.is_test_cell(cell):
            cell["source"] = reference_code(assignment, stem) if first else ""
            first = False
    return json.dumps(nb)


def write_full(folder, assignment):
    folder.mkdir(parents=True)
    for step in contract.ASSIGNMENTS[assignment]:
        (folder / f"{step.stem}.py").write_text(reference_code(assignment, step.stem))
    return folder


def write_partial(folder, assignment):
    """Step 1 only, correct: the others missing."""
    folder.mkdir(parents=True)
    stem = contract.ASSIGNMENTS[assignment][0].stem
    (folder / f"{stem}.py").write_text(reference_code(assignment, stem))
    return folder


def zip_of(folder, path):
    with zipfile.ZipFile(path, "w") as zf:
        for f in sorted(folder.iterdir()):
            zf.write(f, f"work/{f.name}")
    return path


def scores(report):
    return {s.step.stem: s.score for s in report.steps}


def run_cli(*args, cwd=ROOT):
    proc = subprocess.run([sys.executable, "-m", "autograder", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


# ------------------------------------------------------------------ graded once
@pytest.fixture(scope="module")
def third():
    """The third assignment registered here and, through the environment, in every process this
    module starts (batch workers, `python -m autograder`)."""
    before = os.environ.get(contract.ENV_VAR)
    os.environ[contract.ENV_VAR] = str(THIRD)
    module = contract.load_file(THIRD)
    module.register()
    yield module
    module.unregister()
    if before is None:
        os.environ.pop(contract.ENV_VAR, None)
    else:
        os.environ[contract.ENV_VAR] = before


@pytest.fixture(scope="module")
def graded(third, tmp_path_factory):
    """{assignment: {"folder"|"file"|"notebook"|"partial": Report}} from one warm Grader, and the files."""
    tmp = tmp_path_factory.mktemp("matrix")
    grader = grading.Grader()
    out = {}
    try:
        for a in ASSIGNMENTS:
            stem = contract.ASSIGNMENTS[a][0].stem
            full = write_full(tmp / a / "full", a)
            nb = tmp / a / "nb" / f"{stem}.ipynb"
            nb.parent.mkdir(parents=True)
            nb.write_text(filled_notebook(a, stem))
            out[a] = {"folder": grader.grade(str(full)), "file": grader.grade(str(full / f"{stem}.py")),
                      "notebook": grader.grade(str(nb)),
                      "partial": grader.grade(str(write_partial(tmp / a / "partial", a))),
                      "dir": tmp / a}
        alone = tmp / "decoder" / "alone" / "06_training.ipynb"        # the step that reads the corpus
        alone.parent.mkdir()
        alone.write_text(filled_notebook("decoder", "06_training"))
        out["decoder"]["step6-notebook"] = grader.grade(str(alone))
    finally:
        grader.close()
    return out


@pytest.fixture(scope="module")
def klass(graded, tmp_path_factory):
    """One grade-all of a class mixing the four assignments (folders and zips, a mistake in the
    test-only one, the decoder's notebooks zipped without their data/), its class view in English and Chinese; and one grade-all of an nbgrader course."""
    tmp = tmp_path_factory.mktemp("class")
    root, course = tmp / "root", tmp / "course"
    for a in ASSIGNMENTS:
        write_full(root / f"full-{a}", a)
        zip_of(write_full(tmp / "zips" / a, a), root / f"zip-{a}.zip")
        write_partial(root / f"part-{a}", a)
        # the course's students hand in step 1 only: what this path adds is nbgrader's layout, and
        # the full submissions are graded by the folder and zip paths already
        write_partial(course / "submitted" / f"student-{a}" / a, a)
    nbs = tmp / "nbs" / "decoder"              # released notebooks, filled, zipped without data/corpus.txt
    nbs.mkdir(parents=True)
    for step in contract.ASSIGNMENTS["decoder"]:
        (nbs / f"{step.stem}.ipynb").write_text(filled_notebook("decoder", step.stem))
    zip_of(nbs, root / "nbzip-decoder.zip")
    bad = root / "bad-toy_scores"
    bad.mkdir()
    (bad / "01_toy_scores.py").write_text("import numpy as np\n\ndef toy_scores(Q, K):\n"
                                          "    return K @ np.swapaxes(Q, -1, -2)\n")
    (course / "nbgrader_config.py").write_text("c = get_config()\n")
    out, course_out = tmp / "out", tmp / "course-out"
    # one worker (a second costs its own grader and zygotes): tests/commands/test_batch.py grades on two
    run_cli("grade-all", str(root), "--results-dir", str(out), "--csv", str(tmp / "grades.csv"), "--jobs", "1",
            "--report", str(tmp / "class.html"))
    (tmp / "zh").mkdir()            # class-report writes into a folder that exists, never makes one
    run_cli("class-report", str(out), "--lang", "zh", "--report", str(tmp / "zh" / "class.html"), "--jobs", "1")
    run_cli("grade-all", str(course), "--results-dir", str(course_out), "--jobs", "1")
    return {"tmp": tmp, "out": out, "course_out": course_out, "csv": tmp / "grades.csv"}


def results_of(out, student):
    return json.loads((Path(out) / student / "results.json").read_text(encoding="utf-8"))


def step_scores(results):
    return {stem: v["score"] for stem, v in results["extra_data"]["steps"].items()}


# ------------------------------------------------------------------ grade: folder, file, notebook
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_grade_of_a_folder_gives_full_marks_in_its_own_steps(graded, assignment):
    report = graded[assignment]["folder"]
    its = contract.REGISTRY[assignment]
    assert list(scores(report)) == its.stems
    assert report.score == report.max_score == its.max_score
    assert gradescope_json.assignment_of(report) == assignment


@pytest.mark.parametrize("path", ["file", "notebook"])
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_grade_of_one_file_or_notebook_scores_its_step_as_the_folder_does(graded, assignment, path):
    stem = contract.ASSIGNMENTS[assignment][0].stem
    assert scores(graded[assignment][path]) == {stem: scores(graded[assignment]["folder"])[stem]}


# ------------------------------------------------------------------ the formats of one report
@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_format_says_the_assignment_and_its_scores(graded, assignment, lang):
    report, its = graded[assignment]["folder"], contract.REGISTRY[assignment]
    with i18n.language(lang):
        results = gradescope_json.gradescope(report)
        xml = ET.fromstring(junit.junit_xml(report).split("\n", 1)[1])
        classroom = json.loads(base64.b64decode(github.classroom_base64(report)))
        page = html.render(report, "student")
        titles = [str(step.shown_title) for step in its.steps]
        marks = list(github.annotations(report, {}))
    assert results["extra_data"]["assignment"] == assignment and step_scores(results) == scores(report)
    assert results["extra_data"]["max_score"] == its.max_score
    assert xml.get("name") == f"attention-kit {assignment}"
    suites = {p.get("value") for s in xml.iter("testsuite") for p in s.iter("property") if p.get("name") == "step"}
    assert suites == set(its.stems)
    assert {c.get("classname") for c in xml.iter("testcase")} == {f"{assignment}.{s}" for s in its.stems}
    assert classroom["max_score"] == its.max_score and sum(t["score"] for t in classroom["tests"]) == its.max_score
    assert all(html_escape(t) in page for t in titles)
    assert marks == []            # nothing failed: no annotation


# ------------------------------------------------------------------ grade-all: folders, zips, a course
@pytest.mark.parametrize("path", ["full", "zip", "part", "course"])
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_grade_all_scores_each_student_as_grade_does(graded, klass, assignment, path):
    want = scores(graded[assignment]["partial" if path in ("part", "course") else "folder"])
    if path == "course":
        results = results_of(klass["course_out"], f"student-{assignment}")
    else:
        results = results_of(klass["out"], f"{path}-{assignment}")
    assert results["extra_data"]["assignment"] == assignment
    got = step_scores(results)
    assert {s: got[s] for s in want} == want and results["score"] == sum(want.values())
    assert results["extra_data"]["max_score"] == contract.REGISTRY[assignment].max_score


def test_the_decoders_notebooks_grade_without_their_corpus(graded, klass):
    """Step 6's notebook reads data/corpus.txt (beside the released notebooks) in its demo cells only,
    which the grader never runs: the decoder's released notebooks, filled in and zipped without data/,
    get full marks from grade-all, and its step 6 notebook alone (no data/ beside it) from grade."""
    demo = [c for c in json.loads(filled_notebook("decoder", "06_training"))["cells"]
            if c["cell_type"] == "code" and "data/corpus.txt" in "".join(c["source"])]
    assert demo and all(submitted_files.is_test_cell(c) for c in demo)
    results = results_of(klass["out"], "nbzip-decoder")
    assert results["extra_data"]["assignment"] == "decoder"
    assert step_scores(results) == scores(graded["decoder"]["folder"])
    assert results["score"] == contract.REGISTRY["decoder"].max_score
    alone = graded["decoder"]["dir"] / "alone" / "06_training.ipynb"
    assert not (alone.parent / "data").exists()
    assert scores(graded["decoder"]["step6-notebook"]) == {"06_training": 10.0} == \
        {"06_training": scores(graded["decoder"]["folder"])["06_training"]}


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_a_mixed_class_gets_one_gradebook_per_assignment_with_its_steps(graded, klass, assignment):
    path = batch.csv_paths(klass["csv"], ASSIGNMENTS)[assignment]
    with open(path, encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    its = contract.REGISTRY[assignment]
    assert list(rows[0]) == ["student"] + its.stems + ["total", "max_score", "error"]
    by_name = {r["student"]: r for r in rows}
    expected = {f"full-{assignment}", f"zip-{assignment}", f"part-{assignment}"} | (
        {"bad-toy_scores"} if assignment == "toy_scores" else set()) | (
        {"nbzip-decoder"} if assignment == "decoder" else set())
    assert set(by_name) == expected
    for name, report in ((f"full-{assignment}", "folder"), (f"zip-{assignment}", "folder"),
                         (f"part-{assignment}", "partial")):
        want = scores(graded[assignment][report])
        assert {s: float(by_name[name][s]) for s in its.stems} == {s: want.get(s, 0.0) for s in its.stems}
        assert float(by_name[name]["max_score"]) == its.max_score
    assert not klass["csv"].exists()      # a mixed class: no one gradebook pretending to be all of it


# ------------------------------------------------------------------ the class view, per assignment
@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_class_view_of_each_assignment_has_its_steps_maxima_and_mistakes(graded, klass, assignment, lang):
    out = klass["out"]
    # the numbers: the last class view's (Chinese); the same numbers in any language
    data = json.loads(class_view.numbers_path(out, assignment).read_text(encoding="utf-8"))
    index = json.loads(class_view.numbers_path(out).read_text(encoding="utf-8"))
    assert index["mixed"] and list(index["assignments"]) == ASSIGNMENTS
    asked = klass["tmp"] / "zh" / "class.html" if lang == "zh" else klass["tmp"] / "class.html"
    text = class_view.page_path(out, asked, assignment).read_text(encoding="utf-8")
    assert f'<html lang="{html.HTML_LANG[lang]}"' in text
    its = contract.REGISTRY[assignment]
    assert data["assignment"] == assignment and list(data["steps"]) == its.stems
    assert data["max_score"] == its.max_score
    assert {s["student"] for s in data["students"]} >= {f"full-{assignment}", f"zip-{assignment}", f"part-{assignment}"}
    assert all(set(s["steps"]) == set(its.stems) for s in data["students"])
    first = its.stems[0]
    wrong = 1 if assignment == "toy_scores" else 0                     # the bad student of the third
    assert data["steps"][first]["full_marks"] == data["graded"] - wrong
    for s in its.stems[1:]:
        assert data["steps"][s]["missing"] == 1                         # the partial student
    for step in its.steps:
        assert f'id="step-{step.stem}"' in text
    if assignment == "toy_scores":
        assert data["misconceptions"]["toy-scores-transposed"]["steps"] == {"01_toy_scores": 1}
    else:
        assert not any(m.startswith("toy-") for m in data["misconceptions"])


@pytest.mark.parametrize("assignment", ["self_attention", "modern_attention", "decoder"])
def test_similarity_ranks_the_identical_pair_first_against_its_own_stubs(klass, assignment):
    data = json.loads(class_view.numbers_path(klass["out"], assignment).read_text(encoding="utf-8"))
    sim = data["similarity"]
    assert set(sim["steps"]) <= set(contract.REGISTRY[assignment].stems)
    top = sim["pairs"][0]
    assert {top["student_a"], top["student_b"]} == {f"full-{assignment}", f"zip-{assignment}"}
    assert top["rank"] == 1 and top["overall"] == 1.0


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_similarity_discounts_each_assignments_own_stub(third, assignment):
    for step in contract.ASSIGNMENTS[assignment]:
        assert len(similarity.boilerplate(step.stem)) > 0, step.stem


# ------------------------------------------------------------------ Gradescope and the CI templates
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_gradescope_zip_grades_its_assignment(graded, assignment, tmp_path):
    zip_file = tmp_path / "autograder.zip"
    names = gradescope_zip.build_zip(zip_file, assignment)
    assert ("extra/toy_scores/assignment.py" in names) == (assignment == "toy_scores")
    root = tmp_path / "autograder"
    with zipfile.ZipFile(zip_file) as zf:
        zf.extractall(root / "source")
    # the partial submission (step 1 only): every step in the results, in that assignment's terms,
    # at the cost of grading one step (the full ones are graded by grade and grade-all above)
    shutil.copytree(graded[assignment]["dir"] / "partial", root / "submission")
    env = {k: v for k, v in os.environ.items() if k != contract.ENV_VAR}      # the zip says it itself
    proc = subprocess.run(["bash", str(root / "source" / "run_autograder")], capture_output=True, text=True,
                          env=dict(env, AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=sys.executable), timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    assert step_scores(results) == scores(graded[assignment]["partial"])
    assert results["extra_data"]["assignment"] == assignment
    assert results["extra_data"]["max_score"] == contract.REGISTRY[assignment].max_score


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_github_workflow_grades_a_repository_of_each_assignment(graded, assignment, tmp_path):
    from harness.ci import grade_args, run_as_ci
    wf = yaml.safe_load((TEMPLATES / "github" / "classroom.yml").read_text())
    step = next(s for s in next(iter(wf["jobs"].values()))["steps"] if "attention-kit grade" in s.get("run", ""))
    # the partial submission, as for Gradescope: one step graded, the assignment's maximum reported
    shutil.copytree(graded[assignment]["dir"] / "partial", tmp_path / grade_args(step["run"])["submission"])
    outputs, summary = tmp_path / "outputs", tmp_path / "summary.md"
    run_as_ci(step["run"], tmp_path, {"ATTENTION_KIT_LANG": "en", "GITHUB_OUTPUT": str(outputs),
                                      "GITHUB_STEP_SUMMARY": str(summary)})
    out = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    its = contract.REGISTRY[assignment]
    assert (float(out["score"]), float(out["max_score"])) == (graded[assignment]["partial"].score, its.max_score)
    assert its.steps[0].title in summary.read_text()


# ------------------------------------------------------------------ one intake
def test_the_grader_and_similarity_read_the_same_cells():
    """submitted_files.is_test_cell is child/runner.py's rule (the child cannot import the kit)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("runner_copy", ROOT / "autograder" / "child" / "runner.py")
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    cells = [{"metadata": {"nbgrader": meta}} for meta in (
        {}, {"solution": True, "grade": False}, {"solution": False, "grade": True}, {"locked": True},
        {"solution": True, "grade": True, "grade_id": "x"}, {"grade_id": "a_tests"}, {"grade_id": "a_demo"},
        {"solution": True, "grade_id": "b_tests"}, {"grade": False, "solution": False, "grade_id": "imports"},
        ["not", "a", "dict"], "text", 3)]
    cells += [{"metadata": ["a list"]}, {"metadata": None}, {}]     # a student's notebook may hold anything
    assert [submitted_files.is_test_cell(c) for c in cells] == [runner._is_test_cell(c) for c in cells]


def test_a_zip_and_a_folder_give_the_same_step_files(tmp_path):
    """A zip's members go through the folder search's rule: skipped folders, depth, shallowest."""
    tree = {"a/01_masks.py": b"deep", "01_masks.py": b"top", ".git/02_scores.py": b"hidden",
            "__MACOSX/03_scaling.py": b"mac", "x/" * 20 + "04_softmax.py": b"too deep",
            "w/05_kv_cache.ipynb": b"{}", "w/05_kv_cache.py": b"py"}
    folder = tmp_path / "folder"
    for name, data in tree.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    with zipfile.ZipFile(tmp_path / "s.zip", "w") as zf:
        for name, data in tree.items():
            zf.writestr(name, data)
    from_folder = {s: f.relative for s, f in submitted_files.find(folder).files.items()}
    assert dict(batch.read_files(str(tmp_path / "s.zip"))) == {rel: tree[rel] for rel in from_folder.values()}
    assert from_folder == {"01_masks": "01_masks.py", "05_kv_cache": "w/05_kv_cache.ipynb"}


# ------------------------------------------------------------------ the audit, per assignment
def audit_report(tmp, name, *args):
    report = tmp / f"{name}.json"
    run_cli("audit", *args, "--jobs", "1", "--report", str(report))
    return json.loads(report.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def audited(third, tmp_path_factory):
    """One mutant of each assignment's first step (the kit's, sampled), and the third assignment's
    whole audit (10 mutants), each through `python -m autograder audit` (the third registered by
    ATTENTION_KIT_ASSIGNMENTS in that process and its workers)."""
    tmp = tmp_path_factory.mktemp("audit")
    firsts = ",".join(contract.ASSIGNMENTS[a][0].stem for a in ASSIGNMENTS)
    return {"sample": audit_report(tmp, "sample", "--steps", firsts, "--sample", "1"),
            "third": audit_report(tmp, "third", "--steps", contract.ASSIGNMENTS["toy_scores"][0].stem)}


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_audit_mutates_each_assignments_own_reference_and_kills_it(audited, assignment):
    from autograder.reference import mutants
    stem = contract.ASSIGNMENTS[assignment][0].stem
    mine = [m for m in audited["sample"]["mutants"] if m["step"] == stem]
    assert len(mine) == 1 and mine[0]["verdict"] in ("killed", "crashed", "equivalent"), mine
    assert not mine[0]["other_steps_lost"]
    # made from the registry's reference of that assignment, with its operators
    assert contract.REGISTRY[assignment].reference_file(stem) == mutants.reference_path(stem)
    assert mine[0]["id"] in {m.id for m in mutants.mutants(stem, mutants.operators_of(stem))}


def test_the_third_assignments_audit_is_whole_and_as_recorded(audited):
    """Audited from outside the kit: 10 mutants, none surviving, each with the verdict recorded in
    tests/third_assignment/mutation_audit.json (`audit --steps 01_toy_scores --record`)."""
    from autograder.commands import audit
    data = audited["third"]
    assert data["scores"]["all"]["mutants"] == 10 and data["scores"]["all"]["survived"] == 0
    assert data["scores"]["all"]["score"] == 1.0
    recorded = json.loads(audit.record_path("toy_scores").read_text(encoding="utf-8"))
    assert audit.record_path("toy_scores") == HERE / "third_assignment" / "mutation_audit.json"
    assert recorded["assignment"] == "toy_scores"
    assert {m["id"]: m["verdict"] for m in data["mutants"]} == {m["id"]: m["verdict"] for m in recorded["mutants"]}
    assert recorded["scores"] == {k: data["scores"][k] for k in recorded["scores"]}


def test_the_kits_audits_are_unchanged_by_the_registry():
    """The kit's assignments keep their mutants (416 and 632) and their records in docs/."""
    from autograder.commands import audit
    from autograder.reference import mutants
    for assignment, n in (("self_attention", 416), ("modern_attention", 632)):
        stems = audit.audited_steps(assignment)
        assert sum(len(mutants.mutants(s, mutants.operators_of(s))) for s in stems) == n
        assert audit.record_path(assignment).parent == ROOT / "docs"
        assert json.loads(audit.record_path(assignment).read_text())["scores"]["all"]["mutants"] == n


# ------------------------------------------------------------------ the benchmark, per assignment
def load_benchmark():
    import importlib.util
    spec = importlib.util.spec_from_file_location("grading_speed", ROOT / "benchmarks" / "grading_speed.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def benched(third, tmp_path_factory):
    """The benchmark's class of each assignment (one student of each kind, as notebooks), its correct
    and stub students graded by one warm Grader."""
    bench = load_benchmark()
    tmp = tmp_path_factory.mktemp("bench")
    grader = grading.Grader()
    out = {}
    try:
        for a in ASSIGNMENTS:
            kinds = bench.kinds_of(a)
            bench.build_class(tmp / a, a, len(kinds))
            subs = {p.name.split("_", 1)[1]: p / a for p in sorted((tmp / a / "submitted").iterdir())}
            out[a] = {"kinds": kinds, "subs": subs,
                      "graded": {k: grader.grade(str(subs[k])) for k in ("correct", "stub")}}
    finally:
        grader.close()
    return bench, out


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_benchmark_builds_and_grades_each_assignments_class(benched, assignment):
    bench, out = benched
    its, mine = contract.REGISTRY[assignment], out[assignment]
    assert set(mine["subs"]) == set(mine["kinds"]) and ("buggy" in mine["kinds"]) == (assignment != "toy_scores")
    for sub in mine["subs"].values():
        assert sorted(p.name for p in sub.iterdir()) == sorted(f"{s}.ipynb" for s in its.stems)
    correct, stub = mine["graded"]["correct"], mine["graded"]["stub"]
    assert correct.score == correct.max_score == its.max_score
    left = set(bench.stub_steps(assignment))
    assert {s for s, v in scores(stub).items() if v == 0} == left
    assert {s: v for s, v in scores(stub).items() if s not in left} == \
        {s: v for s, v in scores(correct).items() if s not in left}


def test_the_benchmark_runs_for_an_assignment_from_outside_the_kit(third, tmp_path):
    """benchmarks/grading_speed.py end to end for the third assignment (registered by the
    environment): its class graded by grade-all and read back from the gradebook, which grade-all
    writes with a byte order mark (the benchmark once failed there with KeyError 'student'), the
    floor's grades checked against it; no nbgrader, no memory sampling, one run."""
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "grading_speed.py"), "--assignments",
                           "toy_scores", "--n", "3", "--runs", "1", "--nbgrader-n", "0", "--no-memory",
                           "--otter-n", "0", "--jobs", "1"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "toy_scores (1 notebooks a submission; correct, slow, stub in turn)" in proc.stdout
    assert "correct 10/10, slow 10/10, stub 0/10" in proc.stdout
    assert "vs nbgrader" not in proc.stdout and "nbgrader autograde" not in proc.stdout


def test_the_benchmark_reads_a_gradebook_with_a_byte_order_mark(tmp_path):
    bench = load_benchmark()
    text = "student,01_toy_scores,total,max_score,error\ns000_correct,10,10,10,\ns001_stub,0,0,10,\n"
    path = tmp_path / "grades.csv"
    path.write_text(text, encoding="utf-8-sig")
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")
    assert bench.check_grades([path], {"score": 10.0}) == {"correct": "10/10", "stub": "0/10"}
    bench.check_floor_grades("toy_scores", {"/x/s000_correct/toy_scores": "10/10", "/x/s001_stub/toy_scores": "0/10"},
                             path)


# ------------------------------------------------------------------ `grade` on the command line
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_grade_on_the_command_line_with_html_junit_and_chinese(graded, assignment, tmp_path):
    """`python -m autograder grade SUB --lang zh --format junit --html DIR` (the third assignment
    registered by the environment): the same step scores as the warm grader's, the JUnit suite and
    the feedback page in that assignment's terms."""
    sub = graded[assignment]["dir"] / "partial"
    run_cli("grade", str(sub), "--results", str(tmp_path / "results.json"), "--lang", "zh", "--format", "junit",
            "--out", str(tmp_path / "junit.xml"), "--html", str(tmp_path / "pages"), "--quiet")
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    its = contract.REGISTRY[assignment]
    assert results["extra_data"]["assignment"] == assignment
    assert step_scores(results) == {s: scores(graded[assignment]["partial"]).get(s, 0.0) for s in step_scores(results)}
    assert results["score"] == graded[assignment]["partial"].score
    xml = ET.fromstring((tmp_path / "junit.xml").read_text(encoding="utf-8").split("\n", 1)[1])
    assert xml.get("name") == f"attention-kit {assignment}"
    (page,) = (tmp_path / "pages").glob("*.html")
    text = page.read_text(encoding="utf-8")
    assert f'<html lang="{html.HTML_LANG["zh"]}"' in text
    with i18n.language("zh"):
        assert html_escape(str(its.steps[0].shown_title)) in text
