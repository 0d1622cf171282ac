"""The documentation where Python projects keep it (issue 29): a README of a few screens, and a
MkDocs (Material) site built from docs/ in strict mode, so a broken link, a link to a heading
that is not there, or a page left out of the navigation fails here (and so in CI). The student
page says only what a student can run in the environment it gives them."""
import re
import subprocess
import sys
import zipfile

import pytest

from conftest import ROOT

README = ROOT / "README.md"
README_LIMIT = 12 * 1024


def test_the_readme_fits_a_few_screens_and_its_links_resolve():
    text = README.read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) < README_LIMIT, "README.md is over 12 KB: move the detail into docs/"
    for command in ("bash scripts/grade_samples.sh", "bash scripts/test.sh", "bash scripts/student_env.sh"):
        assert command in text
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    assert links, "the README links to the documentation"
    missing = [link for link in links if not link.startswith("http") and not (ROOT / link).exists()]
    assert not missing, missing


def test_the_site_builds_in_strict_mode(tmp_path):
    pytest.importorskip("mkdocs", reason="the dev extra (mkdocs-material) is not installed")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-3000:]
    for page in ("contract", "student", "instructor", "courses", "grade-all", "class-view", "grading",
                 "security", "audit", "benchmark", "architecture"):
        assert (tmp_path / "site" / page / "index.html").is_file(), page
    # the generated tables made it into the pages
    contract = (tmp_path / "site" / "contract" / "index.html").read_text(encoding="utf-8")
    assert "project_qkv" in contract and "flash_attention" in contract


def test_a_page_left_out_of_the_navigation_fails_the_strict_build(tmp_path):
    """The check above can fail: the same build with one page more, outside the navigation."""
    pytest.importorskip("mkdocs")
    import shutil
    copy = tmp_path / "kit"
    shutil.copytree(ROOT / "docs", copy / "docs", ignore=shutil.ignore_patterns("*.json"))
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    (copy / "docs" / "orphan.md").write_text("# Orphan\n\n[nowhere](missing.md)\n")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=copy, capture_output=True, text=True, timeout=300,
                          env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"})
    assert done.returncode != 0 and "missing.md" in done.stderr


def code_blocks(markdown):
    return re.findall(r"```(?:bash|sh)?\n(.*?)```", markdown, re.S)


@pytest.mark.parametrize("text", ["student page", "README's student section"])
def test_the_student_path_runs_only_what_the_student_environment_has(text):
    """The student environment (scripts/student_env.sh, requirements-student.txt) holds numpy,
    torch and JupyterLab: no kit, no nbgrader. Its commands are the path's only commands."""
    if text == "student page":
        markdown = (ROOT / "docs" / "student.md").read_text(encoding="utf-8")
    else:
        readme = README.read_text(encoding="utf-8")
        markdown = readme[readme.index("## Students"):readme.index("## Instructors")]
    requirements = (ROOT / "requirements-student.txt").read_text()
    assert "attention-kit" not in requirements and "nbgrader" not in requirements
    commands = [line.split("#")[0].strip() for block in code_blocks(markdown) for line in block.splitlines()]
    commands = [c for c in commands if c]
    assert commands
    for command in commands:
        assert "autograder" not in command and "nbgrader" not in command and ".venv/" not in command, command


def test_the_gradescope_zip_ships_no_documentation(tmp_path):
    from autograder.commands import gradescope_zip
    names = gradescope_zip.build_zip(tmp_path / "g.zip")
    docs = [n for n in names if n.endswith((".md", ".png", ".rst")) or n.startswith("docs/")]
    assert docs == ["README.md"], docs                    # pyproject's `readme`, one line
    with zipfile.ZipFile(tmp_path / "g.zip") as zf:
        assert len(zf.read("README.md")) < 200
