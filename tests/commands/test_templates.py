"""The CI templates hold together: the GitHub workflow feeds the Classroom reporter the output
the kit writes, the GitLab job publishes the JUnit file the kit writes, both install the torch
the kit is tested with, and neither grades a folder that holds the kit's own notebooks. The same
two files serve a repository of either assignment: their grading commands, run as the CI would,
grade a modern_attention repository as that assignment."""
import base64
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import yaml

from autograder.commands.cli import FORMATS
from conftest import ROOT
from harness.ci import grade_args, run_as_ci

TEMPLATES = ROOT / "templates"
TORCH = re.search(r"^TORCH_VERSION=(\S+)", (ROOT / "scripts/setup.sh").read_text(), re.M).group(1)


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


def modern_repository(folder):
    """A student's repository of the second assignment: step 1 done (the master), step 2 a stub,
    the other stubs not handed in."""
    folder.mkdir()
    shutil.copy(ROOT / "source/modern_attention/01_masks.ipynb", folder)
    shutil.copy(ROOT / "assignments/modern_attention/02_cross_attention.ipynb", folder)
    (folder / "README.md").write_text("my work\n")
    return folder


def test_both_templates_grade_a_repository_of_the_second_assignment(tmp_path):
    """The Grade step of the GitHub workflow and the GitLab job's script, run on a modern_attention
    repository: graded as that assignment (its six steps, 60 points), step 1 full, step 2 zero."""
    wf = yaml.safe_load((TEMPLATES / "github" / "classroom.yml").read_text())
    step = next(s for s in next(iter(wf["jobs"].values()))["steps"] if "attention-kit grade" in s.get("run", ""))
    workspace = tmp_path / "github"
    workspace.mkdir()
    modern_repository(workspace / grade_args(step["run"])["submission"])
    outputs, summary = workspace / "outputs", workspace / "summary.md"
    run_as_ci(step["run"], workspace, {"ATTENTION_KIT_LANG": "en", "GITHUB_OUTPUT": str(outputs),
                                       "GITHUB_STEP_SUMMARY": str(summary)})
    out = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    assert (out["score"], out["max_score"]) == ("10", "60")
    result = json.loads(base64.b64decode(out["result"]))      # what the Classroom reporter posts
    assert result["max_score"] == 60 and sum(t["score"] for t in result["tests"]) == 10
    assert {t["name"].split(".")[0] for t in result["tests"]} == {"1", "2", "3", "4", "5", "6"}
    assert "Causal and padding masks" in summary.read_text()

    job = yaml.safe_load((TEMPLATES / "gitlab" / ".gitlab-ci.yml").read_text())["grade"]
    project = modern_repository(tmp_path / "gitlab")
    run_as_ci("\n".join(job["script"]), project, {"CI_PROJECT_DIR": str(project), **job["variables"]})
    suites = ET.parse(project / grade_args("\n".join(job["script"]))["--out"]).getroot().iter("testsuite")
    by_step = {s.get("name"): s for s in suites}
    assert list(by_step)[0] == "Step 1: Causal and padding masks" and len(by_step) == 6, list(by_step)
    assert by_step["Step 1: Causal and padding masks"].get("failures") == "0"
    results = json.loads((project / "results.json").read_text())
    assert results["score"] == 10 and results["extra_data"]["max_score"] == 60
