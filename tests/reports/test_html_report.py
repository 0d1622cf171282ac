"""`grade --html DIR`: the feedback page holds the scores, the messages and the heatmaps, escapes
everything the student controls, and renders in a real headless browser (Debian's `chromium`)."""
import re
import struct
import subprocess
import zlib
from html import escape
from pathlib import Path

import numpy as np
import pytest

from autograder import i18n
from autograder.reference import misconceptions
from conftest import ROOT, run_grader
from harness.images import _png_pixels

CHROMIUM = "/usr/bin/chromium"
HOSTILE = '''
def softmax(x, axis=-1):
    print("<script>alert(1)</script><img src=x onerror=alert(2)>")
    raise ValueError("</pre><script>alert(3)</script>")
'''


@pytest.fixture(scope="module")
def lesson_page(tmp_path_factory, warm_cli):
    """(page text, results.json) for samples/lesson graded with --html."""
    tmp = tmp_path_factory.mktemp("html")
    code, out, results = run_grader(ROOT / "samples/lesson", tmp, "--html", str(tmp / "pages"), "--quiet", warm=warm_cli)
    assert code == 0, out
    page = tmp / "pages" / "lesson.html"
    assert page.exists(), out
    return page, results


@pytest.fixture(scope="module")
def hostile_page(tmp_path_factory, warm_cli):
    tmp = tmp_path_factory.mktemp("hostile")
    step = tmp / "04_softmax.py"
    step.write_text(HOSTILE)
    code, out, results = run_grader(step, tmp, "--html", str(tmp / "pages"), "--quiet", warm=warm_cli)
    assert code == 0, out
    return tmp / "pages" / "04_softmax.html", results


@pytest.fixture(scope="module")
def chinese_page(tmp_path_factory, warm_cli):
    """(page text, results.json) for the lesson's step 5 graded with --lang zh --html (one step: cheap)."""
    tmp = tmp_path_factory.mktemp("zh")
    step = tmp / "05_weighted_sum.py"
    step.write_text((ROOT / "samples/lesson/05_weighted_sum.py").read_text())
    code, out, results = run_grader(step, tmp, "--html", str(tmp / "pages"), "--quiet", "--lang", "zh", warm=warm_cli)
    assert code == 0, out
    return tmp / "pages" / "05_weighted_sum.html", results


def test_chinese_page_is_in_chinese(chinese_page):
    page, results = chinese_page
    text = page.read_text(encoding="utf-8")
    assert '<html lang="zh-CN">' in text
    assert f"总分 {results['score']:g}/{results['extra_data']['max_score']:g}" in text
    for label in ("<th>检查项</th>", "<th>得分</th>", "第 5 步：加权求和", "一个示例的注意力权重", ">键 &#8594;<", ">查询<"):
        assert label in text, label
    # the named mistake's box: its id as it is, its explanation in Chinese
    with i18n.language("zh"):
        diagnosis = str(i18n.translate(misconceptions.CATALOGUE["scale-by-d-model"].diagnosis))
    assert re.search("[\u4e00-\u9fff]", diagnosis)
    assert f"scale-by-d-model</b>: {escape(diagnosis)}" in text and "<i>提示：" in text
    assert text.count("<svg") == 3
    for english in ("Total ", "Hint:", "Likely cause", "Attention weights for one example", ">check<"):
        assert english not in text, english


def test_page_has_every_score_message_and_heatmap(lesson_page):
    page, results = lesson_page
    text = page.read_text()
    assert f"Total {results['score']:g}/{results['extra_data']['max_score']:g}" in text
    for stem, step in results["extra_data"]["steps"].items():
        assert re.search(rf'id="step-{stem}">.*?{step["score"]:g}/{step["max_score"]:g}', text), stem
    for t in results["tests"]:
        assert f"<td>{t['number']}</td>" in text
    assert "scale-multiplied</b>: you multiplied the scores by sqrt(d_k)" in text
    # the diagnosis in its box only: results.json writes message then diagnosis, the page the message
    told = [t for t in results["tests"] if "misconception:scale-multiplied" in t["tags"]]
    assert told and all("\nLikely cause: you multiplied the scores by sqrt(d_k)" in t["output"] for t in told)
    assert "Likely cause" not in text
    # steps 04 to 07: expected, yours and the difference, each an inline SVG
    assert text.count("<svg") == 4 * 3
    # self-contained: no script, no external file
    assert "<script" not in text and "src=" not in text and "<link" not in text and "http://" not in text.replace(
        'xmlns="http://www.w3.org/2000/svg"', "")


def test_student_strings_are_escaped(hostile_page):
    page, results = hostile_page
    text = page.read_text()
    assert results["score"] == 0
    assert "<script" not in text and "<img" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text          # what it printed
    assert "&lt;/pre&gt;&lt;script&gt;alert(3)" in text               # its exception's message
    # its weights could not be had: the expected map alone, and why
    assert text.count("<svg") == 1 and "could not be drawn" in text


# ------------------------------------------------------------------ a real browser
def _chromium(tmp_path, *args):
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run",
           f"--user-data-dir={tmp_path / 'profile'}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


@pytest.mark.skipif(not Path(CHROMIUM).exists(),
                    reason=f"{CHROMIUM} is absent: install Debian's browser (apt-get install -y chromium)")
def test_page_renders_in_headless_chromium(lesson_page, tmp_path):
    page, results = lesson_page
    dom = _chromium(tmp_path, "--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    # the browser parsed the page: the scores and every heatmap, each with its cells
    assert f"Total {results['score']:g}/{results['extra_data']['max_score']:g}" in html
    svgs = re.findall(r"<svg.*?</svg>", html, re.S)
    assert len(svgs) == 12 and all(s.count("<rect") >= 25 for s in svgs)
    # and drew them: the cells' own colours fill whole cells (25 x 25 pixels) on the screenshot,
    # in the weight maps and in the difference maps
    shot = tmp_path / "page.png"
    run = _chromium(tmp_path, "--window-size=1000,9000", f"--screenshot={shot}", page.as_uri())
    assert shot.exists(), run.stderr[-2000:]
    rgb = _png_pixels(shot)[..., :3].astype(np.int64)
    counts = dict(zip(*np.unique(rgb[..., 0] << 16 | rgb[..., 1] << 8 | rgb[..., 2], return_counts=True)))
    for kind, maps in (("weights", svgs[0::3] + svgs[1::3]), ("difference", svgs[2::3])):
        fills = {int(c, 16) for m in maps for c in re.findall(r'fill="#([0-9a-f]{6})"', m)} - {0xFFFFFF}
        drawn = [c for c in fills if counts.get(c, 0) >= 400]
        assert len(drawn) >= 5, f"the {kind} heatmaps' cells are not on the screenshot"


@pytest.mark.skipif(not Path(CHROMIUM).exists(),
                    reason=f"{CHROMIUM} is absent: install Debian's browser (apt-get install -y chromium)")
def test_chinese_page_renders_in_headless_chromium(chinese_page, tmp_path):
    page, results = chinese_page
    dom = _chromium(tmp_path, "--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    # the browser read the page as UTF-8 Chinese, kept its language, and parsed every heatmap
    assert f"总分 {results['score']:g}/{results['extra_data']['max_score']:g}" in dom.stdout
    assert 'lang="zh-CN"' in dom.stdout
    svgs = re.findall(r"<svg.*?</svg>", dom.stdout, re.S)
    assert len(svgs) == 3 and all(s.count("<rect") >= 25 for s in svgs)


def test_the_pages_examples_come_from_the_graded_run(tmp_path, monkeypatch):
    """One child per step whether the page is asked for or not: the example runs in the graded
    child (the suite's @example function, after its checks), and changes no check."""
    from autograder.grading import run as grading
    started = []
    real_start = grading.StepChild.start

    def counted(self):
        started.append(self.step.stem)
        return real_start(self)
    monkeypatch.setattr(grading.StepChild, "start", counted)
    step = tmp_path / "04_softmax.py"
    step.write_text((ROOT / "samples/lesson/04_softmax.py").read_text())
    plain = grading.grade(step)
    shown = grading.grade(step, examples=True)
    assert started == ["04_softmax", "04_softmax"]
    assert ([(c.number, c.status, c.score, str(c.output)) for c in plain.steps[0].checks]
            == [(c.number, c.status, c.score, str(c.output)) for c in shown.steps[0].checks])
    example = shown.steps[0].example
    assert plain.steps[0].example is None and example is not None and example.problem is None
    assert example.got.shape == example.expected.shape == (5, 7)
    np.testing.assert_allclose(example.got, example.expected, rtol=1e-12)


def test_a_masked_example_hatches_exactly_the_masked_cells():
    """Masked attention's page shows where no weight belongs: one hatch per masked cell, over its colour."""
    from autograder.reports import html as page
    mask = np.tril(np.ones((4, 6), dtype=bool), k=2)          # causal, aligned at the end
    weights = np.where(mask, 1.0 / mask.sum(-1, keepdims=True), 0.0)
    svg = page.heatmap_svg(weights, "w", mask=mask)
    assert svg.count('class="masked"') == int((~mask).sum()) == 6
    assert svg.count("(masked)") == 6 and page.heatmap_svg(weights, "w").count('class="masked"') == 0
