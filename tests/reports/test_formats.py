"""`grade --format junit | classroom | github`: each output read back with a parser of its format
(junitparser, base64 + JSON, GitHub's workflow-command syntax) and held to the grader's numbers."""
import base64
import json
import os
import re
import subprocess
import sys

from junitparser import Failure, JUnitXml, Skipped

from autograder import contract, i18n
from autograder.reports import github, junit
from autograder.reports import gradescope_json as report_module
from autograder.grading.run import CheckResult, Report, StepResult
from conftest import ROOT
from harness.ci import workflow_commands

NASTY = "got \x1b[31mred\x1b[0m and \x00, 100% sure: a, b ``` fence ```` longer\r\nsecond line"


def synthetic_report():
    """Step 1 all passed; step 2 two failed checks with control characters and a misconception,
    plus a skipped CUDA check; step 3 missing."""
    s1, s2, s3 = contract.STEPS[:3]
    ok = [CheckResult(s1.stem, "1.1", "shape", "shape", 4, 4, "passed", "Passed."),
          CheckResult(s1.stem, "1.2", "numbers", "numbers", 6, 6, "passed", "Passed.")]
    bad = [CheckResult(s2.stem, "2.1", "shape", "shape", 2.5, 2.5, "passed", "Passed."),
           CheckResult(s2.stem, "2.2", "values <&>", "numbers", 5, 0, "failed", NASTY, ["scores-transposed"]),
           CheckResult(s2.stem, "2.3", "float32", "numbers", 2.5, 0, "failed", NASTY)]
    missing = [CheckResult(s3.stem, "3.1", "shape", "shape", 10, 0, "failed",
                           "No file for step 3: expected 03_scaling.ipynb or 03_scaling.py in the submission.")]
    return Report("sub", [StepResult(s1, "01_projection.ipynb", ok),
                          StepResult(s2, "02_scores.py", bad, [("2.9", "On CUDA", "no CUDA GPU here")]),
                          StepResult(s3, None, missing)], {})


# ------------------------------------------------------------------ JUnit
def parse_junit(text, tmp_path):
    path = tmp_path / "report.xml"
    path.write_text(text, encoding="utf-8")
    return JUnitXml.fromfile(str(path))


def test_junit_parses_and_counts_match(tmp_path):
    report = synthetic_report()
    xml = parse_junit(junit.junit_xml(report), tmp_path)
    suites = list(xml)
    assert len(suites) == len(report.steps)
    for suite, step in zip(suites, report.steps):
        cases = list(suite)
        assert suite.tests == len(cases) == len(step.checks) + len(step.skipped)
        assert suite.failures == sum(c.status == "failed" for c in step.checks)
        assert suite.skipped == len(step.skipped)
        props = {p.name: p.value for p in suite.properties()}
        assert float(props["score"]) == step.score and float(props["max_score"]) == step.max_score
    assert (xml.tests, xml.failures, xml.skipped) == (7, 3, 1)
    case = next(c for c in suites[1] if c.name.startswith("2.2"))
    (failure,) = case.result
    assert isinstance(failure, Failure) and failure.type == "numbers"
    assert "red" in failure.text and "\\x1b" in failure.text and "\\x00" in failure.text
    assert isinstance(next(c for c in suites[1] if c.name.startswith("2.9")).result[0], Skipped)


def test_junit_points_add_up_to_the_score(tmp_path):
    report = synthetic_report()
    text = junit.junit_xml(report)
    points = [float(v) for v in re.findall(r'<property name="points" value="([^"]+)"', text)]
    assert sum(points) == report.score


# ------------------------------------------------------------------ GitHub Classroom
REPORTER_TEST_FIELDS = {"name", "status", "score", "message", "test_code", "filename", "line_no", "duration"}


def test_classroom_result_is_what_the_grading_reporter_reads():
    report = synthetic_report()
    data = json.loads(base64.b64decode(github.classroom_base64(report)))
    assert data["version"] == 1 and data["status"] == "fail"
    assert data["max_score"] == report.max_score
    assert all(set(t) == REPORTER_TEST_FIELDS for t in data["tests"])
    assert {t["status"] for t in data["tests"]} == {"pass", "fail"}
    # the reporter's total: the sum of the tests' scores
    assert sum(t["score"] for t in data["tests"]) == report.score
    assert next(t for t in data["tests"] if t["name"].startswith("2.2"))["message"].startswith("got")
    assert all(t["test_code"] == "" for t in data["tests"])          # never the hidden code


def test_classroom_status_pass_and_error():
    report = synthetic_report()
    report.steps = report.steps[:1]
    assert github.classroom_result(report)["status"] == "pass"
    report.internal_errors = 1
    assert github.classroom_result(report)["status"] == "error"


# ------------------------------------------------------------------ GitHub Actions
COMMAND = re.compile(r"^::error (?P<props>[^:]*)::(?P<message>.*)$")


def unescape(text):
    return (text.replace("%0A", "\n").replace("%0D", "\r").replace("%3A", ":").replace("%2C", ",")
            .replace("%25", "%"))


def parse_annotations(lines):
    found = []
    for line in lines:
        m = COMMAND.match(line)
        assert m, line
        props = dict(p.split("=", 1) for p in m["props"].split(","))
        found.append(({k: unescape(v) for k, v in props.items()}, unescape(m["message"])))
    return found


FORGED = "::error file=x,title=y::forged ##[error]v1 forged\n::error::forged\n   ::set-output name=score::70\r::warning::x\n##[error]v1 forged\n\x1b[2J\x1b]0;t\x07"


def forged_report():
    """synthetic_report() whose failing checks hold lines that are workflow commands, escape
    sequences and a lone surrogate."""
    report = synthetic_report()
    for c in report.steps[1].checks:
        if c.status == "failed":
            c.output = FORGED + " \ud800"
    return report


def test_student_text_issues_no_workflow_command(tmp_path):
    """Issue 12: whatever the student's text, the runner processes only the grader's annotations."""
    report = forged_report()
    for summary in (None, tmp_path / "summary.md"):      # the summary printed to the log, or to its file
        log = "\n".join([github.log_block(report_module.table(report)),
                         github.write_github(report, {}, summary, env={})])
        log.encode("utf-8")                              # printable: the surrogate came out escaped
        commands = workflow_commands(log)
        assert len(commands) == 2 and all(c.startswith("::error ") for c in commands), commands
        (_props, message), _missing = parse_annotations(commands)
        assert message.startswith("2.2 values <&>: ::error file=x,title=y::forged ##[error]v1")   # shown, as data
        assert "\x1b" not in log and "\\x1b[2J" in log and "\\ud800" in log
    assert "\\x1b[2J" in (tmp_path / "summary.md").read_text(encoding="utf-8")


def test_annotations_one_per_step_that_lost_points_escaped():
    report = synthetic_report()
    found = parse_annotations(github.annotations(report, {"02_scores": "self_attention/02_scores.py"}))
    assert [p.get("file") for p, _ in found] == ["self_attention/02_scores.py", None]
    props, message = found[0]
    assert props["title"] == "Step 2 (2.5/10): Scores Q K^T"
    assert message.startswith("2.2 values <&>: got") and "\n2.3 float32: same as 2.2" in message
    assert "No file for step 3" in found[1][1]


def test_summary_table_and_fences():
    text = github.summary_markdown(synthetic_report())
    assert "## attention-kit: 12.5/30" in text
    assert "| 2. Scores Q K^T | `02_scores.py` | 2.5/10 | ❌ 2 of 3 failed |" in text
    assert "| 3. Scaling by 1/sqrt(d_k) | (missing) | 0/10 |" in text
    assert "`````text\n" + NASTY in text             # a fence longer than any run of backticks inside
    assert "values &lt;&amp;&gt;" in text and "`misconception:scores-transposed`" in text


def test_every_format_in_chinese_keeps_its_structure(tmp_path):
    """In Chinese the labels change, the machine-read parts (JUnit counts and properties, the
    annotation syntax, the table's columns, tags) do not."""
    report = synthetic_report()
    with i18n.language("zh"):
        xml = parse_junit(junit.junit_xml(report), tmp_path)
        summary = github.summary_markdown(report)
        found = parse_annotations(github.annotations(report))
        table = report_module.table(report)
    assert (xml.tests, xml.failures, xml.skipped) == (7, 3, 1)
    assert [s.name for s in xml][1] == "第 2 步：分数 Q K^T"
    assert {p.name: p.value for p in list(xml)[2].properties()}["file"] == "（缺失）"
    assert "| 步骤 | 文件 | 得分 | 检查项 |" in summary and "❌ 3 项中有 2 项未通过" in summary
    assert "`misconception:scores-transposed`" in summary and "| | **总分** | **12.5/30** | |" in summary
    assert found[0][0]["title"] == "第 2 步（2.5/10）：分数 Q K^T" and "2.3 float32: 同 2.2" in found[0][1]
    lines = table.splitlines()
    assert lines[2].split() == ["步骤", "文件", "得分", "检查项"] and "（缺失）" in table and "总计" in table
    # CJK characters take two columns in a terminal: the score column still lines up
    assert len({_columns(ln[:ln.index("/") + 3]) for ln in lines[3:6]}) == 1


def test_every_format_writes_the_message_then_its_diagnosis_in_the_language_asked_for(tmp_path):
    """A result keeps the message and the misconception ids apart; each format writes message, a
    newline, then the diagnosis (with the hint of the step's library), in the language it writes in."""
    from autograder.i18n import _, render
    from autograder.reference import misconceptions
    s6 = contract.STEP_BY_STEM["06_multi_head"]
    message = _("{what} has shape {got}; expected {shape}.", what="out", got=(2, 3), shape=(3, 2))
    check = CheckResult(s6.stem, "6.3", "shapes", "shape", 2, 0, "failed", message, ["softmax-wrong-axis"])
    report = Report("sub", [StepResult(s6, "06_multi_head.py", [check])], {})
    for lang in ("en", "zh"):
        want = render(message, lang) + "\n" + render(misconceptions.describe(["softmax-wrong-axis"], "torch"), lang)
        assert ("dim=" in want) and ("keepdim" in want)              # torch's names, not numpy's axis=
        with i18n.language(lang):
            results = report_module.gradescope(report)
            xml = parse_junit(junit.junit_xml(report), tmp_path)
            classroom = github.classroom_result(report)
            summary = github.summary_markdown(report)
            table = report_module.table(report)
        assert results["tests"][0]["output"] == want
        assert list(list(xml)[0])[0].result[0].text == want
        assert classroom["tests"][0]["message"] == want and want in summary
        assert "\n".join("    " + ln for ln in want.splitlines()) in table
    assert report.steps[0].checks[0].output == message            # the report itself is left as it was


def _columns(text):
    """Terminal columns `text` takes (a CJK character two)."""
    import unicodedata
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


# ------------------------------------------------------------------ through the command line
def grade(tmp_path, *extra, env=None):
    sub = tmp_path / "repo" / contract.ASSIGNMENT
    sub.mkdir(parents=True, exist_ok=True)
    (sub / "02_scores.py").write_text((ROOT / "samples/lesson/02_scores.py").read_text())
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(tmp_path / "repo"), "--results",
                           str(tmp_path / "results.json"), "--isolation", "process", *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout, json.loads((tmp_path / "results.json").read_text())


def test_cli_junit_to_a_file(tmp_path):
    out, results = grade(tmp_path, "--format", "junit", "--out", str(tmp_path / "junit.xml"))
    xml = JUnitXml.fromfile(str(tmp_path / "junit.xml"))
    assert xml.tests == len(results["tests"]) + sum(len(s["skipped"]) for s in results["extra_data"]["steps"].values())
    assert xml.failures == sum(t["status"] == "failed" for t in results["tests"])
    assert "total" in out                                       # the table still goes to the log


def test_cli_classroom_to_stdout_is_just_the_base64(tmp_path):
    out, results = grade(tmp_path, "--format", "classroom")
    data = json.loads(base64.b64decode(out.strip(), validate=True))
    assert sum(t["score"] for t in data["tests"]) == results["score"]
    assert data["max_score"] == results["extra_data"]["max_score"] == 70


def test_cli_github_writes_summary_outputs_and_annotations(tmp_path):
    summary, outputs = tmp_path / "summary.md", tmp_path / "output.txt"
    env = dict(os.environ, GITHUB_STEP_SUMMARY=str(summary), GITHUB_OUTPUT=str(outputs))
    out, results = grade(tmp_path, "--format", "github", env=env)
    found = parse_annotations(workflow_commands(out))     # the commands the runner would process
    assert len(found) == 7                                       # step 2 partial, six steps missing
    assert found[1][0]["file"] == f"{contract.ASSIGNMENT}/02_scores.py"   # relative to the repository
    assert f"## attention-kit: {results['score']:g}/70" in summary.read_text()
    values = dict(ln.split("=", 1) for ln in outputs.read_text().splitlines())
    assert float(values["score"]) == results["score"] and values["max_score"] == "70"
    assert json.loads(base64.b64decode(values["result"]))["max_score"] == 70


def test_a_students_file_path_cannot_break_the_summary_table():
    report = synthetic_report()
    report.steps[1].file = "we`ird|dir/02_scores.py"
    row = next(ln for ln in github.summary_markdown(report).splitlines() if ln.startswith("| 2."))
    assert "| `` we`ird\\|dir/02_scores.py `` |" in row and row.count(" | ") == 3
