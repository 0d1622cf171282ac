"""The CI templates hold together: the GitHub workflow feeds the Classroom reporter the output
the kit writes, the GitLab job publishes the JUnit file the kit writes, both install the torch
the kit is tested with, and neither grades a folder that holds the kit's own notebooks."""
import re
import shlex

import yaml

from autograder.commands.cli import FORMATS
from conftest import ROOT

TEMPLATES = ROOT / "templates"
TORCH = re.search(r"^TORCH_VERSION=(\S+)", (ROOT / "scripts/setup.sh").read_text(), re.M).group(1)


def grade_args(command):
    """{"submission": ..., "--format": ..., ...} from the `attention-kit grade ...` line of a command."""
    line = next(ln for ln in command.splitlines() if "attention-kit grade" in ln)
    words = shlex.split(line)
    words = words[words.index("grade") + 1:]
    args = {"submission": words[0]}
    for i, word in enumerate(words[1:], 1):
        if word.startswith("--") and i + 1 < len(words) and not words[i + 1].startswith("--"):
            args[word] = words[i + 1]
    return args


def test_github_workflow_feeds_the_classroom_reporter():
    wf = yaml.safe_load((TEMPLATES / "github" / "classroom.yml").read_text())
    assert wf["permissions"]["checks"] == "write"
    (job,) = wf["jobs"].values()
    assert job["name"] == "Autograding Tests"          # the check run the reporter looks for
    steps = job["steps"]
    grade = next(s for s in steps if "attention-kit grade" in s.get("run", ""))
    args = grade_args(grade["run"])
    assert args["--format"] == "github" and "github" in FORMATS
    reporter = next(s for s in steps if s.get("uses", "").startswith("classroom-resources/autograding-grading-reporter@"))
    runner = reporter["with"]["runners"]
    # the reporter reads process.env[`${RUNNER.toUpperCase()}_RESULTS`] as base64 JSON
    assert reporter["env"][f"{runner.upper()}_RESULTS"] == f"${{{{ steps.{grade['id']}.outputs.result }}}}"
    checkouts = [s for s in steps if s.get("uses", "").startswith("actions/checkout@")]
    submission = next(s for s in checkouts if "repository" not in s["with"])["with"]["path"]
    kit = next(s for s in checkouts if "repository" in s["with"])["with"]
    assert args["submission"] == submission and kit["path"] != submission
    assert "secrets." in kit["token"]
    install = next(s for s in steps if "pip install" in s.get("run", ""))["run"]
    assert f"torch=={TORCH} " in install and "download.pytorch.org/whl/cpu" in install


def test_gitlab_job_publishes_the_junit_file_the_kit_writes():
    ci = yaml.safe_load((TEMPLATES / "gitlab" / ".gitlab-ci.yml").read_text())
    job = ci["grade"]
    args = grade_args("\n".join(job["script"]))
    assert args["--format"] == "junit"
    assert job["artifacts"]["reports"]["junit"] == args["--out"]
    assert job["artifacts"]["when"] == "always"
    setup = "\n".join(job["before_script"])
    clone_target = re.search(r"git clone .* (\S+)$", setup, re.M).group(1)
    assert not clone_target.startswith("$CI_PROJECT_DIR")   # the kit outside the graded folder
    assert f"torch=={TORCH} " in setup and "download.pytorch.org/whl/cpu" in setup


def test_gradescope_run_autograder_grades_where_gradescope_looks():
    text = (TEMPLATES / "gradescope" / "run_autograder").read_text()
    assert 'ROOT="${AUTOGRADER_ROOT:-/autograder}"' in text
    assert '"$ROOT/submission" --results "$ROOT/results/results.json"' in text


def test_every_template_passes_the_course_language():
    """Each CI template grades with `--lang` from ATTENTION_KIT_LANG, English unless the course sets it."""
    from autograder import i18n
    wf = yaml.safe_load((TEMPLATES / "github" / "classroom.yml").read_text())
    grade = next(s for s in next(iter(wf["jobs"].values()))["steps"] if "attention-kit grade" in s.get("run", ""))
    assert grade_args(grade["run"])["--lang"] == "$ATTENTION_KIT_LANG"
    assert grade["env"]["ATTENTION_KIT_LANG"] == "${{ vars.ATTENTION_KIT_LANG || 'en' }}"
    job = yaml.safe_load((TEMPLATES / "gitlab" / ".gitlab-ci.yml").read_text())["grade"]
    assert grade_args("\n".join(job["script"]))["--lang"] == "$ATTENTION_KIT_LANG"
    assert job["variables"]["ATTENTION_KIT_LANG"] in i18n.LANGUAGES
    script = (TEMPLATES / "gradescope" / "run_autograder").read_text()
    assert 'LANGUAGE="${ATTENTION_KIT_LANG:-en}"' in script and script.rstrip().endswith('--lang "$LANGUAGE"')
