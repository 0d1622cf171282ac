"""The hidden-test cell's hook, `grade_step`, in a real Jupyter kernel, read the way nbgrader
reads it (`nbgrader.utils.determine_grade`): partial credit is the returned number, and nothing
reaches stderr (which nbgrader punishes with 0) even when something writes there while grading."""
import os
import re
import shutil
import subprocess
import sys
import textwrap

import nbformat
import pytest
from nbclient import NotebookClient
from nbgrader.utils import determine_grade

from conftest import ROOT

GRADE_CELL = {"grade": True, "solution": False, "locked": True, "points": 10, "schema_version": 3}

NOISE = '''
import os, sys, threading, warnings
import autograder.grading.run as grading
real_grade = grading.grade

def noisy_grade(*args, **kwargs):
    """Everything that lands on a kernel's stderr: sys.stderr, fd 2, a warning, another thread."""
    print("to sys.stderr", file=sys.stderr)
    os.write(2, b"to fd 2\\n")
    warnings.warn("a warning while grading")
    t = threading.Thread(target=lambda: print("from a thread", file=sys.stderr))
    t.start(); t.join()
    return real_grade(*args, **kwargs)

def broken_grade(*args, **kwargs):
    raise RuntimeError("the grader itself broke")

def overshooting_grade(*args, **kwargs):
    """Checks worth 2.2 + 5.9 + 1.9 points: a float sum just above the cell's 10."""
    from autograder.grading.run import CheckResult, Report, StepResult
    from autograder import contract
    checks = [CheckResult("02_scores", f"2.{i}", "c", "numbers", p, p, "passed", "Passed.")
              for i, p in enumerate([2.2, 5.9, 1.9], 1)]
    assert sum(c.score for c in checks) > 10
    return Report("x", [StepResult(contract.STEPS[1], "02_scores.py", checks)], {})
'''


def graded_cell(source):
    cell = nbformat.v4.new_code_cell(textwrap.dedent(source))
    cell.metadata["nbgrader"] = dict(GRADE_CELL, grade_id=f"hidden_{abs(hash(source))}")
    return cell


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hook")
    # the lesson's code: 2/10 (2.4, a single sequence, and 2.7: vectorised; K.T fails with batch axes)
    shutil.copy(ROOT / "samples" / "lesson" / "02_scores.py", folder)
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(NOISE),
        graded_cell(f"""
            grading.grade = noisy_grade
            from autograder.commands.notebook_hook import grade_step
            grade_step("02_scores", {str(folder)!r})"""),
        graded_cell("""
            grading.grade = broken_grade
            grade_step("02_scores", %r)""" % str(folder)),
        graded_cell("""
            grading.grade = real_grade
            grade_step("04_softmax", %r)""" % str(folder)),
        graded_cell("""
            grading.grade = overshooting_grade
            grade_step("02_scores", %r)""" % str(folder)),
    ]
    # coalesce_streams: what a cell printed is one output however a busy kernel split it into messages
    NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True, coalesce_streams=True).execute()
    return nb.cells[1:]


def outputs(cell):
    return [(o.output_type, o.get("name")) for o in cell.outputs]


def test_partial_credit_with_stderr_noise_during_grading(executed):
    cell = executed[0]
    assert outputs(cell) == [("stream", "stdout"), ("execute_result", None)]
    assert determine_grade(cell) == (2.0, 10.0)
    text = cell.outputs[0].text
    assert "[FAIL] 2.2" in text and "Step 2: 2/10" in text
    assert "logged diagnostics for the instructor" in text


def test_a_broken_grader_gives_zero_without_an_error_or_traceback(executed):
    cell = executed[1]
    assert outputs(cell) == [("stream", "stdout"), ("execute_result", None)]
    assert determine_grade(cell) == (0.0, 10.0)
    assert "internal error" in cell.outputs[0].text and "RuntimeError" not in cell.outputs[0].text


def test_a_missing_file_gives_zero_not_full_marks(executed):
    cell = executed[2]
    assert determine_grade(cell) == (0.0, 10.0)
    assert "expected 04_softmax.ipynb or 04_softmax.py" in cell.outputs[0].text


def test_the_points_never_exceed_the_cell_s(executed):
    # nbgrader refuses partial credit above the cell's points: autograding would stop
    assert determine_grade(executed[3]) == (10.0, 10.0)


# ------------------------------------------------------------------ the course's language
HOOK = "from autograder.commands.notebook_hook import grade_step; grade_step('02_scores'); grade_step('04_softmax')"


def run_hook(folder, **env):
    """The hidden-test cells of steps 2 and 4, run the way nbgrader runs them: in the student's folder."""
    environ = {k: v for k, v in os.environ.items() if k != "ATTENTION_KIT_LANG"} | env
    environ["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([sys.executable, "-c", HOOK], cwd=folder, env=environ, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def chinese_course(tmp_path_factory):
    """A course whose nbgrader_config.py says `c.AttentionKit.language = "zh"`, and a student's
    autograded folder in it holding the lesson's step 2 (step 4 missing)."""
    course = tmp_path_factory.mktemp("course")
    config = (ROOT / "nbgrader_config.py").read_text()
    assert 'c.AttentionKit.language = "en"' in config          # the setting the kit ships
    (course / "nbgrader_config.py").write_text(config.replace('language = "en"', 'language = "zh"'))
    folder = course / "autograded" / "alice" / "self_attention"
    folder.mkdir(parents=True)
    shutil.copy(ROOT / "samples" / "lesson" / "02_scores.py", folder)
    return folder


def _checks(out, marks):
    """[(check number, passed?, points)] from the cell's lines, `marks` being its (pass, fail) words."""
    found = re.findall(rf"^\[({re.escape(marks[0])}|{re.escape(marks[1])})\] (\d\.\d+) .* \(([\d.]+)/[\d.]+\)$",
                       out, re.M)
    return [(number, mark == marks[0], points) for mark, number, points in found]


@pytest.fixture(scope="module")
def both_languages(chinese_course):
    """The cells' output with the course's setting (zh), and with ATTENTION_KIT_LANG=en over it."""
    return run_hook(chinese_course), run_hook(chinese_course, ATTENTION_KIT_LANG="en")


def test_the_course_setting_chooses_the_language_of_the_cells(both_languages):
    chinese, english = both_languages
    # the same checks, passed and failed alike, the same points: only the words differ
    assert _checks(chinese, ("通过", "未通过")) == _checks(english, ("pass", "FAIL"))
    assert any(not passed for _, passed, _ in _checks(chinese, ("通过", "未通过")))
    score = re.search(r"^Step 2: (\S+)$", english, re.M).group(1)
    assert f"第 2 步：{score}" in chinese
    assert "提示：有批次轴时" in chinese                               # a check's own message, not only the frame
    assert "第 4 步没有文件：应为 04_softmax.ipynb 或 04_softmax.py。" in chinese
    assert "[FAIL]" not in chinese and "Step 2" not in chinese


def test_the_environment_overrides_the_course_setting(both_languages):
    _, english = both_languages
    assert "[FAIL] 2." in english and re.search(r"^Step 2: ", english, re.M)
    assert "No file for step 4: expected 04_softmax.ipynb or 04_softmax.py." in english
    assert not re.search("[\u4e00-\u9fff]", english)


def test_the_setting_is_read_without_running_the_config():
    from autograder.commands.notebook_hook import configured_language
    assert configured_language((ROOT / "nbgrader_config.py").read_text()) == "en"
    assert configured_language('c = get_config()\nc.AttentionKit.language = "zh"\n') == "zh"
    assert configured_language("c.AttentionKit.language = 'en'\nc.AttentionKit.language = 'zh'") == "zh"
    assert configured_language("c.CourseDirectory.course_id = 'x'") is None
    assert configured_language("this is not python (") is None
