"""The student's path, in JupyterLab in a real browser (issue 17).

JupyterLab runs from the student's environment (requirements-student.txt, built once by
scripts/student_env.sh: numpy, torch and JupyterLab, nothing of the kit) on loopback, with a token,
over a temporary folder holding a copy of the released notebooks. Playwright drives Debian's chromium
(no browser download) through what a student does, for step 4 (numpy) and step 6 (torch) in English
and step 4 in Chinese: open the notebook from the file browser, Run All and read the stub's message
naming the step; paste a correct solution into each solution cell, Run All and read "All visible tests
for step N passed." with no error anywhere; save. The notebook the browser saved then passes
`nbgrader validate` (from the kit's own environment) and the stub does not.

Screenshots of every stage land in $ATTENTION_KIT_ARTIFACTS (default: artifacts/student-path/ at the
repo root, ignored by git); the path is printed. Waits are for conditions (120 s each), never for speed.
"""
import ast
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import expect, sync_playwright

from autograder.commands import release

ROOT = Path(__file__).resolve().parent.parent.parent
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
WAIT_MS = 120_000
RELEASES = {"en": Path("assignments/self_attention"), "zh": Path("assignments/zh/self_attention")}
# what nbgrader's instructor side puts in JupyterLab (nbgrader#1645): none of it may show
INSTRUCTOR_TOOLS = ["Nbgrader", "Create Assignment", "Formgrader", "Course List", "Assignment List"]

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent: install Debian's "
                                "browser (apt-get install -y chromium), as .ci/run does")


# ------------------------------------------------------------------ what the test pastes and expects
def solution_cells(stem):
    """{cell id: source} of a step's solution cells, from the master in source/ with nbgrader's
    solution markers dropped: the reference code, as a student who solved the step would paste it."""
    nb = nbformat.read(str(release.SOURCE / f"{stem}.ipynb"), as_version=4)
    return {cell.id: "\n".join(ln for ln in cell.source.split("\n")
                               if release.BEGIN not in ln and release.END not in ln).strip("\n")
            for cell in nb.cells if release.is_solution_cell(cell)}


def _string_args(source, func):
    """The string literals passed to `func(...)` in a cell's source, in the source's order."""
    calls = [node for node in ast.walk(ast.parse(source))
             if isinstance(node, ast.Call) and getattr(node.func, "id", None) == func
             and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)]
    return [call.args[0].value for call in sorted(calls, key=lambda c: (c.lineno, c.col_offset))]


def expected_messages(course, lang, stem):
    """(the stub's message, the passed message) a student reads in this release of the step, read
    from the releases as copied into `course` (untouched by the browser).

    In English these are "Step N: implement ..." and "All visible tests for step N passed."; another
    language's release has the same cell ids, so its messages are the literals in the same cells."""
    step = int(stem[:2])
    english = nbformat.read(str(course / RELEASES["en"] / f"{stem}.ipynb"), as_version=4)
    passed_en = f"All visible tests for step {step} passed."
    passed_cell = next(c.id for c in english.cells if passed_en in c.source)
    nb = nbformat.read(str(course / RELEASES[lang] / f"{stem}.ipynb"), as_version=4)
    first_stub = next(c for c in nb.cells if release.is_solution_cell(c))
    stub = _string_args(first_stub.source, "NotImplementedError")[0]
    passed = _string_args(next(c.source for c in nb.cells if c.id == passed_cell), "print")[-1]
    assert str(step) in stub and str(step) in passed, (stub, passed)
    if lang != "en":        # a translated release, not the English one under another folder
        english_stub = _string_args(next(c.source for c in english.cells if c.id == first_stub.id),
                                    "NotImplementedError")[0]
        assert stub != english_stub and passed != passed_en, f"the {lang} release shows English: {stub}, {passed}"
    return stub, passed


# ------------------------------------------------------------------ the student's environment and JupyterLab
@pytest.fixture(scope="module")
def student_venv():
    """The student's venv, built by scripts/student_env.sh on first use (about a minute), then reused."""
    out = subprocess.run(["bash", str(ROOT / "scripts/student_env.sh")], capture_output=True, text=True,
                         timeout=1800)
    assert out.returncode == 0, out.stdout + out.stderr
    return Path(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def artifacts():
    folder = Path(os.environ.get("ATTENTION_KIT_ARTIFACTS") or ROOT / "artifacts" / "student-path")
    folder.mkdir(parents=True, exist_ok=True)
    print(f"\nscreenshots of the student path: {folder}")
    return folder


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(student_venv, tmp_path_factory):
    """JupyterLab from the student's venv on loopback, over a copy of the releases; yields a dict with
    url and token, root (the folder it serves), pristine (the releases as copied, untouched), env (what its
    kernels inherit) and python (the student's interpreter)."""
    tmp = tmp_path_factory.mktemp("student")
    root, home, pristine = tmp / "course", tmp / "home", tmp / "pristine"
    for rel in RELEASES.values():
        if (ROOT / rel).is_dir():
            shutil.copytree(ROOT / rel, pristine / rel)      # the stubs, as released, for nbgrader validate
    shutil.copytree(pristine, root)
    # A fresh home and Jupyter folders: no workspace, kernel or setting of this machine's user leaks in;
    # the news prompt is answered "no" so that it does not cover the notebook in the screenshots.
    settings = home / "jupyter" / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("JUPYTER", "PYTHON", "VIRTUAL_ENV", "CONDA"))}
    env.update(HOME=str(home), JUPYTER_CONFIG_DIR=str(home / "jupyter"), JUPYTER_DATA_DIR=str(home / "data"),
               JUPYTER_RUNTIME_DIR=str(home / "runtime"), PATH=f"{student_venv / 'bin'}{os.pathsep}/usr/bin:/bin")
    port, token = _free_port(), os.urandom(16).hex()
    cmd = [str(student_venv / "bin" / "jupyter"), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
           "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")              # CI runs as root
    log = (tmp / "jupyterlab.log").open("w")
    server = subprocess.Popen(cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + WAIT_MS / 1000
        while True:
            assert server.poll() is None, f"JupyterLab exited: {(tmp / 'jupyterlab.log').read_text()[-3000:]}"
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5)
                break
            except OSError:
                assert time.monotonic() < deadline, "JupyterLab never answered on loopback"
                time.sleep(0.3)
        yield {"url": base, "token": token, "root": root, "pristine": pristine, "env": env,
               "python": student_venv / "bin" / "python"}
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


@pytest.fixture(scope="module")
def page(lab):
    """A chromium page on JupyterLab's file browser in the English release, as `jupyter lab
    assignments/self_attention` opens it."""
    expect.set_options(timeout=WAIT_MS)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        pg = browser.new_page(viewport={"width": 1280, "height": 900})
        pg.set_default_timeout(WAIT_MS)
        pg.goto(f"{lab['url']}/lab/tree/{RELEASES['en'].as_posix()}?token={lab['token']}")
        expect(pg.locator(".jp-DirListing-item", has_text="04_softmax.ipynb")).to_be_visible()
        yield pg
        browser.close()


# ------------------------------------------------------------------ the tests
def test_the_student_environment_has_nothing_of_the_kit(lab):
    """The kernels' interpreter, in the kernels' environment and folder, imports numpy (torch is the
    torch stage's to show) and none of the kit, its references or nbgrader."""
    probe = ("import importlib, json\n"
             "def found(m):\n"
             "    try:\n"
             "        importlib.import_module(m)\n"
             "        return True\n"
             "    except ModuleNotFoundError:\n"
             "        return False\n"
             "print(json.dumps({m: found(m) for m in "
             "['numpy', 'autograder', 'solutions', 'nbgrader']}))")
    run = subprocess.run([str(lab["python"]), "-c", probe], cwd=lab["root"] / RELEASES["en"], env=lab["env"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == {"numpy": True, "autograder": False, "solutions": False, "nbgrader": False}


def test_jupyterlab_shows_no_instructor_tools(page):
    """No nbgrader extension is loaded and nothing of the instructor's side shows (nbgrader#1645)."""
    config = json.loads(page.locator("#jupyter-config-data").text_content())
    extensions = [e["name"] for e in config.get("federated_extensions", [])]
    assert not [e for e in extensions if "nbgrader" in e.lower()], extensions
    menus = page.locator(".lm-MenuBar-itemLabel").all_inner_texts()
    assert {"File", "Run", "Kernel"} <= set(menus), menus           # the menu bar is there to look at
    text = page.content()
    shown = [tool for tool in INSTRUCTOR_TOOLS if tool in menus or tool in text]
    assert not shown, f"instructor tools in the student's JupyterLab: {shown}"


def _open(page, path):
    """Double-click through the file browser from its home folder to `path`, as a student would."""
    page.locator(".jp-BreadCrumbs-home").click()
    crumbs = page.locator(".jp-BreadCrumbs")
    for i, part in enumerate(path.parts):
        page.locator(".jp-DirListing-content").get_by_text(part, exact=True).dblclick()
        if i < len(path.parts) - 1:     # wait for the folder just opened, not the listing it replaces
            expect(crumbs).to_have_text(re.compile(rf"/{re.escape(part)}/\s*$"))   # deep paths shorten to …


def _run_all(page):
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()


def _wait_until_saved(path, cell_ids, texts):
    """Poll the notebook on disk until every filled cell holds what was pasted.

    jupyter_server saves a notebook by writing over the file in place (its "atomic" writing only keeps a
    backup to restore on failure), so a read can meet a file it has only begun to write: that read
    means "not saved yet", as an older content does.
    """
    deadline = time.monotonic() + WAIT_MS / 1000
    while True:
        try:
            cells = {c.id: c.source for c in nbformat.read(str(path), as_version=4).cells}
        except ValueError:              # a write in flight: empty or cut short (NotJSONError is one)
            cells = None
        if cells is not None and all(cells[i] == texts[i] for i in cell_ids):
            return
        assert time.monotonic() < deadline, f"{path.name} was never saved with the pasted solution"
        time.sleep(0.3)


STAGES = [("en", "04_softmax"), ("en", "06_multi_head"), ("zh", "04_softmax")]


@pytest.mark.parametrize("lang,stem", STAGES, ids=[f"{lang}-{stem}" for lang, stem in STAGES])
def test_the_student_path(page, lab, artifacts, lang, stem):
    """Open, Run All on the stub, paste the solutions, Run All, save; then nbgrader validate (step 4)."""
    try:
        _student_path(page, lab, artifacts, lang, stem)
    except Exception:
        page.screenshot(path=artifacts / f"{lang}-{stem}-failed.png")     # what the browser showed
        raise


def _student_path(page, lab, artifacts, lang, stem):
    rel = RELEASES[lang]                                   # both releases are required: none may be absent
    saved = lab["root"] / rel / f"{stem}.ipynb"            # the copy JupyterLab serves
    assert saved.exists(), f"the {lang} release {rel}/{stem}.ipynb is missing"
    stub_message, passed_message = expected_messages(lab["pristine"], lang, stem)
    nb = nbformat.read(str(saved), as_version=4)
    solutions = solution_cells(stem)
    assert solutions and set(solutions) <= {c.id for c in nb.cells}, "the release lost a solution cell"

    _open(page, rel / f"{stem}.ipynb")
    panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    cells = panel.locator(".jp-Notebook .jp-Cell")
    expect(cells).to_have_count(len(nb.cells))
    # the status bar names the kernel once it has started from the student's environment
    expect(page.locator(".jp-StatusBar-Widget", has_text="Python 3 (ipykernel) | Idle")).to_be_visible()

    # 1. the untouched stub: Run All stops at the stub, whose message names the step
    _run_all(page)
    error = panel.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']",
                          has_text=stub_message)
    expect(error.first).to_be_visible()
    assert "NotImplementedError" in error.first.text_content()
    # the traceback's last line, "NotImplementedError: <message>", in the middle of the screenshot
    error.first.locator("span", has_text="NotImplementedError").last.evaluate(
        "e => e.scrollIntoView({block: 'center'})")
    page.screenshot(path=artifacts / f"{lang}-{stem}-1-stub.png")

    # 2. a correct solution pasted into each solution cell: select the cell's text, paste over it
    #    (Playwright's insert_text is one input event, as a paste is: no per-key auto-indent or brackets)
    index = {c.id: i for i, c in enumerate(nb.cells)}
    for cell_id, text in solutions.items():
        editor = cells.nth(index[cell_id]).locator(".cm-content")
        editor.click()
        page.keyboard.press("Control+a")
        page.keyboard.insert_text(text)
    _run_all(page)
    passed = panel.locator(".jp-OutputArea-output", has_text=passed_message)
    expect(passed.first).to_be_visible()
    # every cell ran (no prompt left at [*]) and none of them shows an error, the demos included
    expect(panel.locator(".jp-InputPrompt", has_text="[*]")).to_have_count(0)
    expect(panel.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")).to_have_count(0)
    passed.first.evaluate("e => e.scrollIntoView({block: 'center'})")
    page.screenshot(path=artifacts / f"{lang}-{stem}-2-passed.png")

    # 3. saved as a student saves it: what is on disk is what was pasted
    page.keyboard.press("Control+s")
    # the tab drops its unsaved mark once the server has answered the save, that is, once it wrote the file
    expect(page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current.jp-mod-dirty")).to_have_count(0)
    _wait_until_saved(saved, solutions, solutions)
    page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabCloseIcon").click()

    if stem == "04_softmax" and lang == "en":
        _validate(saved, lab["pristine"] / rel / saved.name, stub_message)


def _validate(filled, stub, stub_message):
    """`nbgrader validate`, as the README tells a student to run it, from the kit's own environment.

    --Validator.validate_all=True checks every cell: without it nbgrader runs only the graded cells,
    and a step's one graded cell is the hidden tests' placeholder, so an untouched stub "passes" (the
    README says so; the second, plain run checks it). One after the other: two kernels started at
    once can pick the same free TCP port (jupyter_client's choice), and one dies with "Address already
    in use" (seen in a fresh-clone run)."""
    def validate(*args):
        return subprocess.Popen([sys.executable, "-m", "nbgrader", "validate", *map(str, args)], cwd=stub.parent,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    outputs = []
    for args in (("--Validator.validate_all=True", filled, stub), (stub,)):
        run = validate(*args)
        out, err = run.communicate(timeout=600)
        assert run.returncode == 0, out + err
        outputs.append(out)
    filled_says, _, stub_says = outputs[0].partition("\n")          # one verdict per notebook, in order
    assert filled_says == "Success! Your notebook passes all the tests.", outputs[0]
    assert "VALIDATION FAILED" in stub_says and stub_message in stub_says, outputs[0]
    assert outputs[1].startswith("Success! Your notebook passes all the tests."), outputs[1]
