"""Issue 16: the class view. A generated class (tests/harness/class_maker.py: correct code in many styles,
mistakes the grader names, slow loops, a forbidden shortcut, stubs, two copied pairs disguised by
renaming, reordering and recommenting, a link, a stray file, a name that is HTML and one in
Chinese) is graded once with `grade-all --report`; the page and _class.json must match the CSV
gradebook and the results, show the planted mistakes where they were planted, flag exactly the
copied pairs, link every student to their feedback page, escape every name and message, ask for
nothing outside the page, and render in headless chromium in English and Chinese.
"""
import csv
import html
import json
from html.parser import HTMLParser
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest

from harness import class_maker  # noqa: E402
from conftest import ROOMY_TIMEOUT, ROOT  # noqa: E402

from autograder import i18n, submitted_files  # noqa: E402
from autograder.reference import misconceptions  # noqa: E402
from autograder.reports import class_view as class_report, similarity  # noqa: E402

LIMITS = [*ROOMY_TIMEOUT, "--memory-gib", "1"]   # far above honest calls on a busy machine
CHROMIUM = "/usr/bin/chromium"
HOSTILE_NAME = '<img src=x onerror=alert(1)>"quoted"'
CHINESE_NAME = "张伟"
STEMS = class_maker.STEMS


def run(*args):
    proc = subprocess.run([sys.executable, "-m", "autograder", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("classview")
    root, out = tmp / "class", tmp / "out"
    plan = class_maker.class_plan()
    class_maker.write_class(root, plan)
    # two more independent correct students with names only HTML and Chinese can hold
    extra = [(HOSTILE_NAME, dict.fromkeys(STEMS, "correct"), "hostile-0", "hostile-style", False, None),
             (CHINESE_NAME, dict.fromkeys(STEMS, "correct"), "zhang-0", "zhang-style", True, None)]
    class_maker.write_class(root, extra)
    plan += extra
    (root / "linked").symlink_to(root / "correct00")
    (root / "notes.txt").write_text("not a submission")
    page = out / "class.html"      # asked for beside the results folders: written as _class.html
    # one worker: what the class view shows is the subject here; tests/commands/test_batch.py grades on two
    proc = run("grade-all", str(root), "--results-dir", str(out), "--csv", str(tmp / "grades.csv"), "--jobs", "1",
               "--report", str(page), *LIMITS)
    chinese = run("class-report", str(out), "--lang", "zh", "--report", str(tmp / "class-zh.html"))
    return {"root": root, "out": out, "csv": tmp / "grades.csv", "page": class_report.page_path(out, page), "zh": tmp / "class-zh.html",
            "plan": plan, "log": proc.stdout + proc.stderr, "zh_log": chinese.stdout, "tmp": tmp,
            }


def rows_of(page_text):
    """{results folder: (name shown, [step scores], total, error)} from the students' table."""
    table = re.search(r'<table class="sortable" id="students">.*?</table>', page_text, re.S).group()
    out = {}
    for row in re.findall(r"<tr data-results=.*?</tr>", table, re.S):
        key = html.unescape(re.search(r'data-results="([^"]*)"', row).group(1))
        cells = re.findall(r'<td[^>]*data-v="([^"]*)"[^>]*>(.*?)</td>', row, re.S)
        name = html.unescape(re.sub(r"<[^>]+>", "", cells[0][1]))
        scores = [float(v) for v, _ in cells[1:1 + len(STEMS)]]
        total = float(cells[1 + len(STEMS)][0])
        error = html.unescape(cells[2 + len(STEMS)][0])
        out[key] = (name, scores, total, error)
    return out


def gradebook(path):
    with open(path, encoding="utf-8-sig", newline="") as f:
        return list(csv.DictReader(f))


def results(out):
    found = {}
    for path in sorted(Path(out).glob("*/results.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        found[data["extra_data"]["batch"]["student"]] = data
    return found


# ------------------------------------------------------------------ the numbers
def test_the_page_matches_the_gradebook_and_the_results(klass):
    text = klass["page"].read_text(encoding="utf-8")
    rows = rows_of(text)
    book = gradebook(klass["csv"])
    res = results(klass["out"])
    assert len(rows) == len(book) == len(res) == len(klass["plan"]) + 2
    by_name = {name: (scores, total, error) for name, scores, total, error in rows.values()}
    for r in book:
        name = r["student"].removeprefix("'") if r["student"].startswith("'") else r["student"]
        scores, total, error = by_name[name]
        assert scores == [float(r[s]) for s in STEMS], name
        assert total == float(r["total"]) and (error or "") == (r["error"] or ""), name
    for name, data in res.items():
        key = data["extra_data"]["batch"]["results"]
        assert rows[key][0] == name and rows[key][2] == data["score"]
    # the two that could not be graded, with their reasons
    for name in ("linked", "notes.txt"):
        assert by_name[name][2] and by_name[name][1] == 0
        assert html.escape(by_name[name][2], quote=True) in text.split('id="not-graded-table"')[1]


def test_class_json_counts_what_the_results_say(klass):
    data = json.loads(class_report.numbers_path(klass["out"]).read_text(encoding="utf-8"))
    res = {k: v for k, v in results(klass["out"]).items() if not v["extra_data"].get("error")}
    assert data["graded"] == len(res) and data["not_graded"] == 2
    # per misconception and step: the students whose results name it there
    told = {}
    for name, r in res.items():
        for t in r["tests"]:
            stem = next(tag[5:] for tag in t["tags"] if tag.startswith("step:"))
            for tag in t["tags"]:
                if tag.startswith("misconception:"):
                    told.setdefault(tag[14:], {}).setdefault(stem, set()).add(name)
    assert {m: v["steps"] for m, v in data["misconceptions"].items()} == {
        m: {stem: len(names) for stem, names in per.items()} for m, per in told.items()}
    # sorted by how many students were told it
    counts = [v["students"] for v in data["misconceptions"].values()]
    assert counts == sorted(counts, reverse=True)
    # per check: failures among those who handed in code for its step
    from autograder import i18n
    with i18n.language(data["language"]):     # its messages: in the language _class.json was written in
        entries = {e.student: e for e in class_report.load(klass["out"])[0]}
    for c in data["checks"]:
        attempted = [n for n, r in res.items() if class_report.step_state(entries[n], c["step"]) == "attempted"]
        failed = [n for n in attempted for t in res[n]["tests"] if t["number"] == c["number"] and t["status"] != "passed"]
        assert (c["attempted"], c["failed"]) == (len(attempted), len(failed)), c["number"]
        if c["failed"]:
            assert any(t["output"] == c["representative"] for n in failed for t in entries[n].results["tests"]
                       if t["number"] == c["number"])
    # each step's distribution adds up to the class
    for stem, st in data["steps"].items():
        assert sum(st["histogram"].values()) == len(res)
        assert st["full_marks"] == sum(1 for r in res.values() if r["extra_data"]["steps"][stem]["score"] >= 10)


def test_the_planted_mistakes_are_where_they_were_planted(klass):
    """The class's common mistakes at a glance: each planted mistake, at its step, for exactly the
    students who made it; slow code is correct-but-slow, the shortcut a forbidden API."""
    data = json.loads(class_report.numbers_path(klass["out"]).read_text(encoding="utf-8"))
    want, slow, forbidden = {}, {}, {}
    for name, kinds, *_ in klass["plan"]:
        for stem, kind in kinds.items():
            if kind in ("correct", "stub", "missing"):
                continue
            mid = "not-vectorized" if kind == "slow" else kind
            want.setdefault(mid, {}).setdefault(stem, 0)
            want[mid][stem] += 1
            if kind in ("slow", "broadcast-weighted-sum"):
                slow[stem] = slow.get(stem, 0) + 1
            if kind == "forbidden-api":
                forbidden[stem] = forbidden.get(stem, 0) + 1
    assert {m: v["steps"] for m, v in data["misconceptions"].items()} == want
    assert {s: v["correct_but_slow"] for s, v in data["steps"].items() if v["correct_but_slow"]} == slow
    assert {s: v["forbidden_api"] for s, v in data["steps"].items() if v["forbidden_api"]} == forbidden
    # on the page: the heatmap's rows in that order, each with the catalogue's diagnosis and hint
    text = klass["page"].read_text(encoding="utf-8")
    shown = re.findall(r'<tr data-mistake="([^"]+)">', text)
    assert shown == list(data["misconceptions"])
    assert "you multiplied the scores by sqrt(d_k) instead of dividing by it." in text
    hint = html.escape(str(i18n.render(misconceptions.CATALOGUE["scale-multiplied"].hint, "en")), quote=False)
    assert f"<i>Hint: {hint}</i>" in text      # the catalogue's own words, never pasted here


# ------------------------------------------------------------------ similarity
def copied_pairs(plan):
    keys = {name: similarity_key(name) for name, *_ in plan}
    return {tuple(sorted((keys[name], keys[copy]))) for name, _k, _s, _st, _nb, copy in plan if copy}


def similarity_key(name):
    from autograder import safe_text
    return safe_text.file_name(name)


def stands_out(pairs):
    return [p for p in pairs if p["flagged_steps"] or p["flagged_overall"]]


def test_exactly_the_copied_pairs_are_flagged(klass):
    data = json.loads(class_report.numbers_path(klass["out"]).read_text(encoding="utf-8"))
    pairs = data["similarity"]["pairs"]
    flagged = {tuple(sorted((p["results_a"], p["results_b"]))) for p in stands_out(pairs)}
    assert flagged == copied_pairs(klass["plan"]) and len(flagged) == 2
    # ranked: the copies first, then the closest of the others (at most TOP_PAIRS listed), each once
    assert {tuple(sorted((p["results_a"], p["results_b"]))) for p in pairs[:2]} == flagged
    assert [p["rank"] for p in pairs] == list(range(1, len(pairs) + 1)) and len(pairs) <= similarity.TOP_PAIRS
    assert [p["overall"] for p in pairs] == sorted((p["overall"] for p in pairs), reverse=True)
    for p in stands_out(pairs):
        assert p["flagged_overall"] and p["overall"] > 0.9
        # the side-by-side view: matching lines on both sides of every step shown
        assert all(v["lines_a"] and v["lines_b"] for v in p["steps"].values())
    text = klass["page"].read_text(encoding="utf-8")
    assert text.count('data-stands-out="yes"') == 2 and 'class="hit"' in text
    assert text.count("<details class=\"pair\"") == len(pairs)
    assert "Similarity is a reason to look, never a verdict" in text
    # the copier renamed and reordered: their code is not the original's text
    plan = {name: copy for name, *_, copy in klass["plan"]}
    for copier, original in ((n, c) for n, c in plan.items() if c):
        mine = similarity.load_code(klass["out"] / copier)
        theirs = similarity.load_code(klass["out"] / original)
        assert all(mine[s] != theirs[s] for s in mine if mine[s].strip() and "def " in mine[s])


def test_grade_all_stores_only_the_students_own_code(klass):
    for name, kinds, seed, style, notebook, _copy in klass["plan"]:
        code = similarity.load_code(klass["out"] / similarity_key(name))
        for stem, kind in kinds.items():
            if kind == "stub":       # the released notebook: its solution cells, nothing else
                assert "raise NotImplementedError" in code[stem] and "Hidden tests" not in code[stem]
                continue
            written = class_maker.code_for(stem, kind, seed, style)
            if notebook:             # visible tests, demos and the prose are not compared; the given cells
                # are, as the grader runs them (the stub's code, which similarity discounts)
                assert written.strip() in code[stem], (name, stem)
                given = submitted_files.notebook_code((class_maker.STUBS / f"{stem}.ipynb").read_bytes())
                rest = code[stem].replace(written.strip(), "").replace("# see above", "")
                assert all(line.strip() in given for line in rest.splitlines()), (name, stem)
                assert "Hidden tests" not in code[stem] and "assert " not in rest
            else:
                assert code[stem] == written, (name, stem)


def test_forced_code_flags_nobody_and_a_disguised_copy_is_found():
    """Without grading: 30 students' scaling step written the one way it is written, and longer
    steps in independent styles, plus one copy renamed, reordered and recommented."""
    codes = {}
    for i in range(30):
        codes[f"s{i:02d}"] = {stem: class_maker.code_for(stem, "correct", f"i{i}", f"i{i}-style") for stem in STEMS}
        codes[f"s{i:02d}"]["03_scaling"] = "import numpy as np\n\ndef scale_scores(scores, d_k):\n" \
                                          "    return scores / np.sqrt(d_k)\n"
    codes["copy"] = {stem: class_maker.code_for(stem, "correct", "i7", "another-style") for stem in STEMS}
    codes["copy"]["03_scaling"] = codes["s07"]["03_scaling"]
    found = similarity.analyse(codes, jobs=1)
    assert [(p["a"], p["b"]) for p in stands_out(found["pairs"])] == [("copy", "s07")]
    assert (found["pairs"][0]["a"], found["pairs"][0]["b"]) == ("copy", "s07")
    assert found["steps"]["03_scaling"]["flagged_pairs"] == 0
    assert found["pairs"][0]["flagged_overall"]


def test_a_class_of_near_copies_shows_its_pairs_ranked():
    """Issue 26: nine students, near-copies of two bases (one-line changes, and per base one copy
    renamed and reordered): no threshold can be told (the median student has a near-copy), so
    nothing "stands out", but every pair within a base is listed, most alike first, above every
    pair across the bases, and the class is said to write alike."""
    codes = {}
    for base, n in (("a", 5), ("b", 4)):
        original = {stem: class_maker.code_for(stem, "correct", base, f"{base}-style") for stem in STEMS}
        codes[f"{base}0"] = original
        for i in range(1, n - 1):
            codes[f"{base}{i}"] = {stem: code + f"\nEXTRA_{i} = {i}  # changed\n" for stem, code in original.items()}
        codes[f"{base}{n - 1}"] = {stem: class_maker.code_for(stem, "correct", base, f"{base}-disguised")
                                   for stem in STEMS}
    found = similarity.analyse(codes, jobs=1)
    within = {tuple(sorted((a, b))) for a in codes for b in codes if a < b and a[0] == b[0]}
    assert len(within) == 16
    ranked = [tuple(sorted((p["a"], p["b"]))) for p in found["pairs"]]
    assert set(ranked[:16]) == within, ranked
    assert all(p["overall"] >= 0.9 for p in found["pairs"][:16])
    assert found["class_writes_alike"] and found["overall_threshold"] is None
    assert not stands_out(found["pairs"])


def test_own_code_of_a_notebook_is_what_the_grader_runs():
    stub = (class_maker.STUBS / "04_softmax.ipynb").read_bytes()
    filled = class_maker.notebook_with("04_softmax", "def softmax(x, axis=-1):\n    return x  # mine\n")
    code = similarity.own_code({"work/04_softmax.ipynb": filled.encode(), "04_softmax.py": b"print(1)\n",
                                "deep/er/04_softmax.py": b"x = 2\n"})
    assert code["04_softmax"]["file"] == "04_softmax.py"          # the shallowest file, as the grader takes it
    code = similarity.own_code({"work/04_softmax.ipynb": filled.encode()})["04_softmax"]["code"]
    assert "def softmax(x, axis=-1):\n    return x  # mine" in code
    assert "assert" not in code                                    # tests and demos: never run, never compared
    assert "import numpy" in code                                  # the given imports cell runs: compared (the
    # stub's code, discounted as boilerplate)
    # a cell the student marks as given (locked, not a solution) still runs, so it is still compared
    nb = json.loads(filled)
    decoy = {"cell_type": "code", "metadata": {"nbgrader": {"locked": True, "solution": False, "grade": False,
                                                            "grade_id": "imports"}},
             "source": "def softmax(x, axis=-1):\n    return hidden(x)\n", "outputs": [], "execution_count": None}
    nb["cells"].append(decoy)
    code = similarity.own_code({"04_softmax.ipynb": json.dumps(nb).encode()})["04_softmax"]["code"]
    assert "return hidden(x)" in code
    assert "NotImplementedError" in similarity.notebook_code(stub)
    assert similarity.notebook_code(b"{not json") == "" and similarity.notebook_code(b"[1, 2]") == ""


# ------------------------------------------------------------------ links, escaping, self-contained
class Tags(HTMLParser):
    """The tags, attribute names and link targets of a page, as a browser's parser reads them."""

    def __init__(self):
        super().__init__()
        self.names, self.attributes, self.links = [], [], []

    def handle_starttag(self, tag, attrs):
        self.names.append(tag)
        self.attributes += [a for a, _v in attrs]
        self.links += [(a, v or "") for a, v in attrs if a in ("href", "src", "action", "xlink:href")]


def test_every_student_links_to_their_feedback_page(klass):
    text = klass["page"].read_text(encoding="utf-8")
    table = re.search(r'<table class="sortable" id="students">.*?</table>', text, re.S).group()
    links = re.findall(r'<tr data-results="([^"]*)"><td data-v="[^"]*"><a href="([^"]*)">', table)
    assert len(links) == len(klass["plan"]) + 2
    res = results(klass["out"])
    by_key = {r["extra_data"]["batch"]["results"]: r for r in res.values()}
    for key, href in links:
        page = klass["page"].parent / unquote(html.unescape(href))
        assert page.resolve() == (klass["out"] / html.unescape(key) / "feedback.html").resolve()
        body = page.read_text(encoding="utf-8")
        r = by_key[html.unescape(key)]
        # in the language the class view was last written in (Chinese: the fixture's second build)
        assert re.search(f"(Total|总分) {r['score']:g}/{r['extra_data']['max_score']:g}", body)
        for t in r["tests"]:
            assert f"<td>{t['number']}</td>" in body


def test_names_and_messages_are_escaped_and_nothing_is_fetched(klass):
    for path in (klass["page"], klass["zh"]):
        text = path.read_text(encoding="utf-8")
        assert HOSTILE_NAME not in text and html.escape(HOSTILE_NAME, quote=True) in text
        assert "<img" not in text
        assert not re.search(r"https?://", text), re.search(r".{60}https?://.{60}", text).group()
        # one script (no student text in it), no inline event handler anywhere
        tags = Tags()
        tags.feed(text)
        assert tags.names.count("script") == 1 and tags.names.count("img") == 0
        assert not [a for a in tags.attributes if a.startswith("on")]
        assert not [v for a, v in tags.links if not v.startswith("#") and re.match(r"[a-z]+:", v)]
        assert re.search(r"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none';", text)
        assert "<link" not in text and "src=" not in text.replace("src=x", "")
    feedback = (klass["out"] / similarity_key(HOSTILE_NAME) / "feedback.html").read_text(encoding="utf-8")
    assert HOSTILE_NAME not in feedback and "&lt;img src=x onerror=alert(1)&gt;" in feedback


def test_the_chinese_page(klass):
    text = klass["zh"].read_text(encoding="utf-8")
    assert '<html lang="zh-CN">' in text
    for label in ("全班概览", "常见错误", "失败最多的检查项", "相似的代码", "相似度只是值得查看的理由，绝不是结论", "满分人数"):
        assert label in text, label
    for english in ("Common mistakes", "never a verdict", "at full marks", ">Students<"):
        assert english not in text, english
    zh = json.loads(class_report.numbers_path(klass["out"]).read_text(encoding="utf-8"))
    assert zh["language"] == "zh"
    # every message from the results too, written now from graded.json (grade-all wrote English)
    typical = [c["representative"] for c in zh["checks"] if c["representative"]]
    assert typical and all(re.search("[\u4e00-\u9fff]", m) for m in typical)
    assert "可能的原因：" in text and "Likely cause" not in text
    # the same numbers in both languages; the reasons a submission was not graded in each one's
    zh_rows, en_rows = rows_of(text), rows_of(klass["page"].read_text(encoding="utf-8"))
    assert {k: v[:3] for k, v in zh_rows.items()} == {k: v[:3] for k, v in en_rows.items()}
    assert zh_rows["linked"][3] == "linked 是一个符号链接；评分程序不跟随链接，因此没有评分"
    assert en_rows["linked"][3] == "linked is a symbolic link; links are not followed, so it was not graded"


def test_class_report_rebuilds_the_same_view_without_grading(klass, tmp_path):
    before = {p: p.stat().st_mtime_ns for p in klass["out"].glob("*/results.json")}
    first = json.loads(class_report.numbers_path(klass["out"]).read_text(encoding="utf-8"))
    page = tmp_path / "again.html"
    run("class-report", str(klass["out"]), "--report", str(page))
    again = json.loads(class_report.numbers_path(klass["out"]).read_text(encoding="utf-8"))
    assert (first["language"], again["language"]) == ("zh", "en")
    for data in (first, again):      # the same numbers; titles and messages in each one's language
        data.pop("language")
        for c in data["checks"]:
            c.pop("representative"), c.pop("title")
        for st in data["students"]:
            st.pop("error")
    assert again == first
    assert rows_of(page.read_text(encoding="utf-8")) == rows_of(klass["page"].read_text(encoding="utf-8"))
    assert {p: p.stat().st_mtime_ns for p in klass["out"].glob("*/results.json")} == before


def test_a_large_synthetic_class_flags_exactly_the_planted_pairs(tmp_path):
    """300 students' results and code, no grading (benchmarks/class_report_speed.py does 1,000)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import class_report_speed
    planted = class_report_speed.write_synthetic_class(tmp_path / "out", 300)
    # how long it takes is the benchmark's (benchmarks/class_report_speed.py), never a test's verdict
    page, timings = class_report.build(tmp_path / "out", jobs=1)
    data = json.loads(class_report.numbers_path(tmp_path / "out").read_text(encoding="utf-8"))
    assert len(data["students"]) == 300
    flagged = {(p["results_a"], p["results_b"]) for p in stands_out(data["similarity"]["pairs"])}
    assert flagged == planted


# ------------------------------------------------------------------ a real browser
def _chromium(tmp_path, *args):
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run",
           f"--user-data-dir={tmp_path / 'profile'}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


needs_chromium = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is absent: install Debian's "
                                    "browser (apt-get install -y chromium)")


@needs_chromium
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_page_renders_in_headless_chromium(klass, tmp_path, lang):
    page = klass["page"] if lang == "en" else klass["zh"]
    dom = _chromium(tmp_path, "--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    text = dom.stdout
    # parsed: every student's row with the gradebook's numbers, both plots with their bars, the
    # heatmap, the pairs
    assert rows_of(text) == rows_of(page.read_text(encoding="utf-8"))
    assert len(rows_of(text)) == len(klass["plan"]) + 2
    svgs = re.findall(r"<svg.*?</svg>", text, re.S)
    assert len(svgs) == 2 and all(s.count("<path") > 10 for s in svgs)
    listed = json.loads(class_report.numbers_path(klass["out"]).read_text(encoding="utf-8"))["similarity"]["pairs"]
    assert text.count("<details") == len(listed) > 2 and text.count('data-stands-out="yes"') == 2
    assert 'id="heatmap"' in text
    assert ('lang="zh-CN"' in text) == (lang == "zh")
    # drawn: the plots' bar colours fill pixels of the screenshot
    from harness.images import _png_pixels
    shot = tmp_path / "page.png"
    _chromium(tmp_path, "--window-size=1200,2600", f"--screenshot={shot}", page.as_uri())
    rgb = _png_pixels(shot)[..., :3].astype(int)
    for colour in (class_report.BLUE, class_report.GREEN):
        r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
        assert ((rgb[..., 0] == r) & (rgb[..., 1] == g) & (rgb[..., 2] == b)).sum() > 500, colour


@needs_chromium
def test_the_students_table_sorts_in_the_browser(klass, tmp_path):
    """The page's one script: #sort=total on the address sorts the table by total, highest first."""
    dom = _chromium(tmp_path, "--dump-dom", klass["page"].as_uri() + "#sort=total")
    assert dom.returncode == 0, dom.stderr[-2000:]
    totals = [total for _name, _scores, total, _error in rows_of(dom.stdout).values()]
    assert totals == sorted(totals, reverse=True) and totals != sorted(totals)
