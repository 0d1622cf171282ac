"""One source of truth: solutions/ and assignments/ are generated from source/ and must not drift,
for every assignment of the contract (self_attention, modern_attention)."""
import contextlib
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder import contract
from autograder.commands import notebook_i18n, release
from conftest import ROOT

RELEASE = ROOT / "assignments" / contract.ASSIGNMENT
# (assignment, step) for every step the kit releases; ids like "modern_attention/01_masks"
ALL_STEPS = [(a, step) for a, steps in contract.ASSIGNMENTS.items() for step in steps]
ALL_IDS = [f"{a}/{step.stem}" for a, step in ALL_STEPS]


@pytest.fixture(scope="module")
def fresh_build(tmp_path_factory):
    out = tmp_path_factory.mktemp("build")
    release.build(out)
    return out


def test_committed_release_equals_a_fresh_generation(fresh_build):
    assert release.differences(fresh_build) == []


def test_a_drifted_copy_is_detected(fresh_build, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(fresh_build, copy)
    nb = copy / "assignments" / contract.ASSIGNMENT / "04_softmax.ipynb"
    nb.write_text(nb.read_text().replace("softmax", "soft_max", 1))
    (copy / "solutions" / "step02_scores.py").write_text("# edited by hand\n")
    (copy / "solutions" / "modern_attention" / "step01_masks.py").unlink()
    (copy / "assignments" / "modern_attention" / "02_cross_attention.ipynb").write_text("{}")
    # the English release where the Chinese one goes: a difference whether or not the build makes one
    shutil.copytree(copy / "assignments" / "modern_attention", copy / "assignments" / "zh" / "modern_attention",
                    dirs_exist_ok=True)
    chinese = [f"assignments/zh/modern_attention/{p.name}" for p in (copy / "assignments" / "modern_attention").iterdir()]
    assert sorted(release.differences(copy)) == sorted([
        "assignments/modern_attention/02_cross_attention.ipynb", f"assignments/{contract.ASSIGNMENT}/04_softmax.ipynb",
        "solutions/modern_attention/step01_masks.py", "solutions/step02_scores.py"] + chinese)


def test_build_check_command_passes_on_the_committed_tree(fresh_build, monkeypatch, capsys):
    """`build --check` through the command line, on the release built once in this file (the
    build is the costly part, and the same code: a second build would test nothing more): 0 on the
    committed tree; 1 and the file named when a built file differs from the committed one."""
    from autograder.commands import cli

    def built(out, say=None):
        shutil.copytree(fresh_build, out, dirs_exist_ok=True)
    monkeypatch.setattr(release, "build", built)
    assert cli.main(["build", "--check"]) == 0, capsys.readouterr()

    def drifted(out, say=None):
        built(out)
        (Path(out) / "solutions" / "step02_scores.py").write_text("# edited by hand\n")
    monkeypatch.setattr(release, "build", drifted)
    assert cli.main(["build", "--check"]) == 1
    assert "out of date: solutions/step02_scores.py" in capsys.readouterr().out


@pytest.mark.parametrize("assignment, step", ALL_STEPS, ids=ALL_IDS)
def test_released_notebook_is_a_stub_without_hidden_tests_or_solutions(assignment, step):
    nb = nbformat.read(str(ROOT / "assignments" / assignment / f"{step.stem}.ipynb"), as_version=4)
    text = "\n".join(c.source for c in nb.cells)
    for secret in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "grade_step"):
        assert secret not in text
    assert f'raise NotImplementedError("Step {step.number}: implement' in text
    for name in step.names:
        assert f"def {name}(" in text or f"class {name}(" in text or f"class {name}:" in text
    hidden = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    assert len(hidden) == 1 and hidden[0].metadata["nbgrader"]["points"] == step.points
    assert hidden[0].metadata["nbgrader"]["grade_id"] == f"step{step.stem[:2]}_hidden_tests"
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")


@pytest.mark.parametrize("assignment, step", ALL_STEPS, ids=ALL_IDS)
def test_source_notebook_declares_its_step(assignment, step):
    nb = json.loads((ROOT / "source" / assignment / f"{step.stem}.ipynb").read_text())
    assert nb["metadata"]["attention_kit"]["stem"] == step.stem
    assert nb["metadata"]["attention_kit"]["step"] == step.number


def test_the_release_check_ignores_what_jupyterlab_writes_beside_the_notebooks(tmp_path):
    """An instructor who opens a released notebook in JupyterLab gets .ipynb_checkpoints/ beside it:
    not a difference from source/ (grading and .gitignore skip it too)."""
    from autograder.commands import release
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / "04_softmax.ipynb").write_text("{}")
    (tmp_path / ".ipynb_checkpoints" / "04_softmax-checkpoint.ipynb").write_text("{}")
    assert release._files(tmp_path) == {Path("04_softmax.ipynb")}


def test_an_assignment_is_released_in_a_language_once_its_catalogue_has_translations(fresh_build, monkeypatch):
    """English always; Chinese for self_attention and modern_attention (their catalogues are
    complete): the build makes exactly those folders."""
    assert release.release_languages(contract.ASSIGNMENT) == ["en", "zh"]
    assert release.release_languages("modern_attention") == ["en", "zh"]
    for assignment in contract.ASSIGNMENTS:
        languages = release.release_languages(assignment)
        for lang in notebook_i18n.LANGUAGES:
            folder = fresh_build / release.release_folder(lang) / assignment
            assert folder.is_dir() == (lang in languages), (assignment, lang, languages)
    # what switches a language on: one translated message of the notebooks' own text, not the stubs' alone
    stub_only = {(None, m): "译文" for m, _why in notebook_i18n.RELEASE_MESSAGES}
    monkeypatch.setitem(notebook_i18n._loaded, ("zh", "modern_attention"), stub_only)
    assert release.release_languages("modern_attention") == ["en"]
    monkeypatch.setitem(notebook_i18n._loaded, ("zh", "modern_attention"), {**stub_only, (None, "Hint"): "提示"})
    assert release.release_languages("modern_attention") == ["en", "zh"]


def test_the_build_stops_when_source_and_contract_disagree(tmp_path, monkeypatch):
    """nbgrader releases whatever notebook lies in source/<assignment>/: the build first holds the
    folders and notebooks to the contract, and names what is out of step."""
    monkeypatch.setattr(release, "ROOT", tmp_path)
    for assignment, steps in contract.ASSIGNMENTS.items():
        (tmp_path / "source" / assignment).mkdir(parents=True)
        for step in steps:
            (tmp_path / "source" / assignment / f"{step.stem}.ipynb").write_text("{}")
    (tmp_path / "source" / ".ipynb_checkpoints").mkdir()        # what JupyterLab leaves is no assignment
    release.check_sources()
    (tmp_path / "source" / "modern_attention" / "09_extra.ipynb").write_text("{}")
    (tmp_path / "source" / "self_attention" / "04_softmax.ipynb").unlink()
    (tmp_path / "source" / "week3").mkdir()
    with pytest.raises(release.ReleaseError) as err:
        release.check_sources()
    assert str(err.value).splitlines() == [
        "source/week3/ is not an assignment of autograder/contract.py (ASSIGNMENTS)",
        "source/self_attention/04_softmax.ipynb is missing (a step of autograder/contract.py)",
        "source/modern_attention/09_extra.ipynb is not a step of autograder/contract.py: add its Step"]


STUB_MESSAGE = {"en": (r"Step \d+: implement [\w.]+", "Step {}: "), "zh": (r"第 \d+ 步：请实现 [\w.]+", "第 {} 步：")}


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("step", contract.STEPS_OF_MODERN_ATTENTION, ids=lambda s: s.stem)
def test_a_released_stub_fails_its_visible_tests_naming_its_step(step, lang):
    """Run top to bottom (here, cell by cell in one namespace), an untouched stub of the second
    assignment, English or Chinese, fails every visible test cell with one of its stubs' own
    messages, "Step N: implement <name>" ("第 N 步：请实现 <name>"), the first test cell with the
    first stub's."""
    nb = nbformat.read(str(ROOT / release.release_folder(lang) / "modern_attention" / f"{step.stem}.ipynb"),
                       as_version=4)
    pattern, prefix = STUB_MESSAGE[lang]
    stubs = re.findall(rf'raise NotImplementedError\("({pattern})"\)', "\n".join(c.source for c in nb.cells))
    assert stubs and all(m.startswith(prefix.format(step.number)) for m in stubs), stubs
    namespace, failed = {"__name__": "__main__"}, {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        grade_id = cell.metadata["nbgrader"]["grade_id"]
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(cell.source, grade_id, "exec"), namespace)
        except NotImplementedError as err:          # anything else fails this test
            failed[grade_id] = str(err)
    tests = [c.metadata["nbgrader"]["grade_id"] for c in nb.cells if c.cell_type == "code"
             and c.metadata["nbgrader"]["grade_id"].endswith("_tests") and not c.metadata["nbgrader"]["grade"]
             and not c.metadata["nbgrader"]["grade_id"].endswith("_test_tools_tests")]
    assert tests and set(tests) <= set(failed), f"visible test cells that pass on the stub: {set(tests) - set(failed)}"
    assert set(failed.values()) <= set(stubs), failed
    assert failed[tests[0]] == stubs[0]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_tools_of_the_visible_tests_stand_aside(lang):
    """Every released notebook opens with its idea, not the tools of its test cells (issue 30): the
    tools cell, locked (nbgrader's checksum, so `nbgrader validate` still checks it) and collapsed
    (jupyter.source_hidden), comes after the first exercise, right before the first test cell that
    uses it (03_scaling: right before its first demo, which its tables need)."""
    for assignment, steps in contract.ASSIGNMENTS.items():
        for step in steps:
            nb = nbformat.read(str(ROOT / release.release_folder(lang) / assignment / f"{step.stem}.ipynb"),
                               as_version=4)
            ids = [c.metadata.get("nbgrader", {}).get("grade_id", "") for c in nb.cells]
            at = next(i for i, g in enumerate(ids) if g.endswith("_test_tools_tests"))
            tools = nb.cells[at]
            assert tools.metadata["nbgrader"]["locked"] and tools.metadata["nbgrader"].get("checksum"), step.stem
            assert tools.metadata.get("jupyter", {}).get("source_hidden") is True, f"{step.stem}: not collapsed"
            assert any(nb.cells[i].metadata.get("nbgrader", {}).get("solution") for i in range(at)) \
                or ids[at + 1].endswith("_demo"), f"{step.stem}: the tools come before any exercise"
            first_test = next(i for i, g in enumerate(ids) if g.endswith("_tests") and i != at)
            assert first_test == at + 1 or ids[at + 1].endswith("_demo"), f"{step.stem}: tools not beside the first test"
