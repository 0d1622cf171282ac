"""The command line: what it accepts, what it writes, and that it exits 0 whatever the student scored."""
import json
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, by_step, run_grader


def test_missing_steps_score_zero_with_the_expected_file_named(tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "04_softmax.py").write_text((ROOT / "samples/lesson/04_softmax.py").read_text())
    code, out, results = run_grader(sub, tmp_path)
    assert code == 0, out
    steps = by_step(results)
    assert all(t["status"] == "passed" for t in steps["04_softmax"])
    for t in steps["01_projection"]:
        assert t["score"] == 0
        assert "expected 01_projection.ipynb or 01_projection.py" in t["output"]
    assert results["score"] == 10
    assert results["extra_data"]["steps"]["01_projection"]["file"] is None


def test_a_single_step_file_is_graded_alone(graded):
    code, out, results = graded("samples/lesson/04_softmax.py")
    assert code == 0, out
    assert set(by_step(results)) == {"04_softmax"}
    assert results["score"] == results["extra_data"]["max_score"] == 10


def test_step_files_are_found_in_subfolders_and_notebooks_preferred(tmp_path):
    sub = tmp_path / "student" / "self_attention"
    sub.mkdir(parents=True)
    (sub / "04_softmax.py").write_text("def softmax(x, axis=-1):\n    return x\n")
    (sub / "04_softmax.ipynb").write_text((ROOT / "source/self_attention/04_softmax.ipynb").read_text())
    code, out, results = run_grader(tmp_path / "student", tmp_path, "--steps", "04_softmax")
    assert code == 0, out
    assert results["extra_data"]["steps"]["04_softmax"]["file"] == "04_softmax.ipynb"
    assert results["score"] == 10


def test_nonexistent_submission_is_a_usage_error(tmp_path):
    code, out, results = run_grader(tmp_path / "nope", tmp_path)
    assert code == 2 and "does not exist" in out and results is None


def test_results_file_is_plain_json_and_table_is_printed(graded):
    code, out, data = graded("samples/lesson")     # results.json, read back with json.loads
    assert code == 0
    assert data["output"].startswith("Total ")
    for line in ("step  file", "07_full_module.py", "total"):
        assert line in out


HOSTILE_STEP = r'''
def softmax(x, axis=-1):
    E = type("\x1b[2J\x1b]0;title\x07Evil", (Exception,), {})
    raise E("\x1b]52;c;ZXZpbA==\x07\x1b[H\x1b[2JTotal 70/70\r::error::forged\n\u202efake")
'''


def test_student_text_reaches_the_terminal_escaped_and_every_report_is_written(tmp_path):
    """Issue 18: escape sequences in exception names and messages, and a submission folder whose
    name is not UTF-8, are shown visibly; `grade` exits 0 and writes the table, the GitHub output
    and the feedback page."""
    import os
    import re
    import subprocess
    import sys
    sub = tmp_path / os.fsdecode(b"stud\xff\x1b[2Jent")
    sub.mkdir()
    (sub / "04_softmax.py").write_text(HOSTILE_STEP)
    for extra in ([], ["--format", "github", "--html", str(tmp_path / "pages")]):
        proc = subprocess.run([sys.executable, "-m", "autograder", "grade", os.fsencode(sub), "--results",
                               str(tmp_path / "results.json"), "--isolation", "process", *extra],
                              cwd=ROOT, capture_output=True, timeout=600, env=dict(os.environ, GITHUB_STEP_SUMMARY=""))
        out = proc.stdout.decode("utf-8")                   # strict: nothing undecodable was printed
        assert proc.returncode == 0, out + proc.stderr.decode("utf-8", "replace")
        assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]", out), "a control character reached the terminal"
        assert "\\x1b[2J\\x1b]0;title\\x07Evil" in out and "stud\\xff\\x1b[2Jent" in out
        assert "\\u202efake" in out
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["score"] == 0
    (page,) = (tmp_path / "pages").iterdir()
    assert page.name.startswith("stud_xff_x1b_2Jent~") and "Evil" in page.read_text(encoding="utf-8")
    # the forged `::error::` line is in the log, but inside ::stop-commands::: only the grader's annotation counts
    from harness.ci import workflow_commands
    assert "::error::forged" in out
    commands = [c.split("::")[1] for c in workflow_commands(out)]
    assert len(commands) == 7 and all(c.startswith("error ") for c in commands)      # one per step
    assert "error file=04_softmax.py,title=Step 4 (0/10)%3A Numerically stable softmax" in commands


def test_one_entry_point_whichever_way_the_grader_is_started():
    """`attention-kit` and `python -m autograder` run the same main (threads, early zygote, fast exit)."""
    from importlib.metadata import entry_points
    script = [e for e in entry_points(group="console_scripts") if e.name == "attention-kit"]
    assert [e.value for e in script] == ["autograder.commands.entry:main"]
    main_module = (ROOT / "autograder" / "__main__.py").read_text()
    assert "from autograder.commands.entry import main" in main_module and "cli" not in main_module
    done = subprocess.run([str(Path(sys.executable).parent / "attention-kit"), "grade", "--help"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and "--results" in done.stdout


def test_build_says_each_stage_as_it_starts(monkeypatch, capsys, tmp_path):
    """`build` takes most of a minute (nbgrader): each stage is a line on stderr as it starts,
    nbgrader's last. The stages themselves are replaced here by a record of their order."""
    from autograder.commands import cli, release
    done = []
    for name in ("check_sources", "write_solutions", "write_template", "generate_assignment"):
        monkeypatch.setattr(release, name, lambda *a, name=name, **k: done.append(name))
    # nothing of the checkout is removed either (build clears the release folders it rewrites)
    import types
    monkeypatch.setattr(release, "shutil", types.SimpleNamespace(rmtree=lambda path: done.append("rmtree")))
    assert cli.main(["build"]) == 0
    err = capsys.readouterr().err.splitlines()
    templates = len(release.kit_assignments())          # one template a registered assignment (three now)
    assert templates >= 3
    assert [line.split("] ", 1)[1].split(" ")[0] for line in err] == ["checking", "writing"] + ["writing"] * templates \
        + ["releasing"]
    assert [line.rsplit(" ", 1)[-1] for line in err[2:-1]] == list(release.kit_assignments())
    assert "nbgrader generate_assignment (en, zh)" in err[-1]
    assert [d for d in done if d != "rmtree"] == ["check_sources", "write_solutions"] + ["write_template"] * templates \
        + ["generate_assignment"]
    assert (ROOT / "assignments" / "self_attention" / "04_softmax.ipynb").is_file()


ZYGOTE_PROBE = """\
import json, sys
from autograder.commands.cli import main      # entry.main ends `grade` with os._exit
from autograder.sandbox import zygote
code = main(sys.argv[1:])
print(json.dumps({"code": code, "zygotes": sorted(zygote.current() or {})}))
"""


def test_grade_starts_the_zygotes_of_the_steps_it_grades_only(tmp_path):
    """`grade` starts its zygotes early, but only for the frameworks of the step files it grades:
    a torch zygote costs some 2 s of CPU, for nothing when only numpy steps are graded."""
    style = ROOT / "samples" / "unusual_style"
    cases = [((str(style), "--steps", "01_projection,04_softmax"), ["numpy"]),
             ((str(style / "07_full_module.py"),), ["torch"]),
             ((str(style),), ["numpy", "torch"])]
    for args, zygotes in cases:
        proc = subprocess.run([sys.executable, "-c", ZYGOTE_PROBE, "grade", *args, "--results",
                               str(tmp_path / "r.json"), "--quiet"], cwd=ROOT, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        got = json.loads(proc.stdout.strip().splitlines()[-1])
        assert got == {"code": 0, "zygotes": zygotes}, args


def test_the_warm_command_line_prints_writes_and_exits_as_a_fresh_one(tmp_path):
    """The tests' warm `python -m autograder` (tests/harness/warm_cli.py, through entry.run) gives
    what a fresh process gives, byte for byte: a graded folder in Chinese with a feedback page, a
    refusal, argparse's own error; and a changed environment is never run warm. A server of its
    own, started here: the worker's (conftest's warm_cli) may have seen its environment change."""
    from harness.warm_cli import WarmCli
    warm_cli = WarmCli(tmp_path / "server")
    try:
        _compare_warm_and_fresh(tmp_path, warm_cli)
    finally:
        warm_cli.close()


def _compare_warm_and_fresh(tmp_path, warm_cli):
    import os
    runs, before = {}, warm_cli.count
    for how, warm in (("fresh", None), ("warm", warm_cli)):
        for i, extra in enumerate([("--lang", "zh", "--html", "PAGES"), ("--steps", "99_nothing"), ("--no-such-flag",)]):
            folder = tmp_path / how / str(i)
            folder.mkdir(parents=True)
            extra = [str(folder / "pages") if e == "PAGES" else e for e in extra]
            code, out, results = run_grader(ROOT / "samples" / "lesson", folder, *extra, warm=warm)
            pages = {p.name: p.read_text() for p in (folder / "pages").glob("*")}
            runs[how, i] = (code, out.replace(str(folder), "FOLDER"), results, pages)
    for i in range(3):
        assert runs["warm", i] == runs["fresh", i]
    assert warm_cli.count == before + 3, f"the warm runs ran warm: {warm_cli.why_not()}"
    assert [runs["fresh", i][0] for i in range(3)] == [0, 2, 2] and runs["fresh", 0][3]
    assert "学生" in runs["fresh", 0][1] or "步" in runs["fresh", 0][1]
    assert warm_cli.usable()
    # what the worker's own libraries set (Dask's nanny, threadpoolctl, the kit's thread counts) keeps
    # it warm; anything else sends the command line to a fresh process
    from harness.line_server import NOT_THE_TESTS
    saved = dict(os.environ)
    try:
        os.environ.update({name: "42" for name in NOT_THE_TESTS})
        assert warm_cli.usable(), warm_cli.why_not()
        os.environ["ATTENTION_KIT_WARM_CLI_PROBE"] = "1"
        assert not warm_cli.usable()
    finally:
        os.environ.clear()
        os.environ.update(saved)
