"""The feedback page (`grade --html`) and the class view pass axe-core's automated accessibility
check with no serious or critical violation, in English and in Chinese (issue 29).

axe-core (through `axe-playwright-python`, which bundles it: nothing is downloaded) runs in Debian's
chromium (/usr/bin/chromium, which .ci/run installs), driven by Playwright as
tests/e2e/test_student_browser.py drives it. The feedback page is a real grade of the lesson's code
(failed checks, diagnoses, heatmaps); the class view is a synthetic class written the way
grade-all leaves one (benchmarks/class_report_speed.py), built by `class-report`."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.reports import class_view

from conftest import ROOT

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
BLOCKING = ("serious", "critical")

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent: install Debian's "
                                "browser (apt-get install -y chromium), as .ci/run does")


def violations(paths):
    """{page name: [(rule id, impact, the first offending element)]} of axe-core's serious and
    critical violations on each local page."""
    from axe_playwright_python.sync_playwright import Axe
    from playwright.sync_api import sync_playwright
    axe, found = Axe(), {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            for path in paths:
                page.goto(path.resolve().as_uri())
                result = axe.run(page)
                found[path.name] = [(v["id"], v["impact"], v["nodes"][0]["html"][:200] if v["nodes"] else "")
                                    for v in result.response["violations"] if v["impact"] in BLOCKING]
        finally:
            browser.close()
    return found


def kit(*args, cwd):
    done = subprocess.run([sys.executable, "-m", "autograder", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_feedback_page_has_no_serious_violation(tmp_path, lang, warm_cli):
    code, output = warm_cli.run(["grade", ROOT / "samples" / "lesson", "--html", tmp_path / "pages", "--results",
                                 tmp_path / "r.json", "--lang", lang])
    assert code == 0, output[-3000:]
    (page,) = (tmp_path / "pages").glob("*.html")
    assert f'lang="{"zh" if lang == "zh" else "en"}' in page.read_text(encoding="utf-8")[:300]
    assert violations([page]) == {page.name: []}


def synthetic_class(out, n=12):
    spec = importlib.util.spec_from_file_location("class_report_speed", ROOT / "benchmarks" / "class_report_speed.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.write_synthetic_class(out, n)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_class_view_has_no_serious_violation(tmp_path, lang):
    out = tmp_path / "out"
    synthetic_class(out)
    kit("class-report", out, "--lang", lang, "--jobs", "1", cwd=tmp_path)
    pages = [class_view.page_path(out), next(out.glob("*/feedback.html"))]
    assert violations(pages) == {p.name: [] for p in pages}


def test_the_check_can_fail(tmp_path):
    """The same check on a page with an image without alternative text and an unlabelled input."""
    page = tmp_path / "bad.html"
    page.write_text('<!DOCTYPE html><html><head><title>x</title></head><body><main><img src="a.png">'
                    '<input type="text"></main></body></html>')
    (found,) = violations([page]).values()
    assert {rule for rule, _impact, _html in found} >= {"image-alt"}
