"""The class view (issue 16): `grade-all ... --report PAGE`, `class-report OUT`.

From the results grade-all wrote (OUT/<results folder>/results.json, and the student's own code
in code.json beside it), with no grading:

- OUT/_class.json: the numbers, machine-readable (per student, per step, per check, per
  misconception, similarity);
- the page (default OUT/_class.html): one self-contained file, readable offline, in the chosen
  language: the totals and each step's scores (matplotlib, inline SVG), the step x misconception
  heatmap with the catalogue's diagnosis and hint, the most-failed checks with a representative
  message, correct-but-slow and forbidden-API counts, the students' table (sortable; each name
  links to the student's feedback page), the submissions that could not be graded, and the pairs
  whose code looks alike (similarity.py), side by side;
- OUT/<results folder>/feedback.html: each student's feedback page (html_report.render, from
  their results: scores, every message and diagnosis; the attention heatmaps need the student's
  code run again, which only `grade --html` does).

The class-level files never share a name with a student's results folder (issue 25): they start
with "_", which no results folder name does (safe_text.file_name), and a page asked for directly
in OUT gets that "_" too. A class that mixes assignments is viewed per assignment (issue 26): one
page and one numbers file each (`_class.<assignment>.json`), every one with that assignment's
steps, maxima, misconceptions and similarity; OUT/_class.json then lists them.

Every text is written in the chosen language from graded.json (reports/stored.py: the results as
data, messages unrendered), whatever language grade-all wrote results.json in. Only a graded.json
this grader signed counts (`Stored.authentic`, as grade-all's resume): a folder whose graded.json
is missing, changed, or another grader's (a student child that could write OUT, a hand edit, an
older grader's results) is not shown as graded, and the command says so; its results.json alone,
which anyone who can write OUT can forge, is never read as a grade.

Everything from a results file or a student's code is untrusted text: html.escape everywhere,
names only in text nodes and escaped attributes, links through the safe results-folder names,
and a Content-Security-Policy that allows no request at all (the one script, which sorts the
table and holds no student text, is allowed by its hash).
"""
import base64
import hashlib
import html
import io
import json
import math
import os
import re
import sys
import time
import warnings
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import quote

from autograder import __version__, atomic, contract, i18n, safe_text
from autograder.reference import misconceptions
from autograder.reports import similarity, stored
from autograder.i18n import _, join, translate

FEEDBACK_PAGE = "feedback.html"
MAX_MESSAGE = 600               # characters of a representative message shown
TOP_CHECKS = 15                 # the most-failed checks listed on the page
OPEN_PAIRS = 3                  # the most alike pairs are shown open, side by side
MAX_RESULTS_BYTES = 16 << 20    # a results.json larger than this is not read


# ------------------------------------------------------------------ reading OUT
NOT_THIS_GRADERS = _("its graded.json is missing, changed or not signed by this grader (stored.py): not shown "
                     "as graded; run grade-all again on this folder to grade the submission")


def load(out_dir, keys=None):
    """([entry], [(folder, why)] skipped): one entry per OUT/<folder>/results.json (only the
    folders in `keys` when given), sorted by student name. An entry: key, student, results."""
    out_dir = Path(out_dir)
    entries, skipped = [], []
    folders = sorted(keys) if keys is not None else sorted(
        p.name for p in out_dir.iterdir() if p.is_dir() and not p.is_symlink())
    for key in folders:
        path = out_dir / key / "results.json"
        try:
            if path.is_symlink() or not path.is_file():
                continue
            if path.stat().st_size > MAX_RESULTS_BYTES:
                raise ValueError("too large")
            results = json.loads(path.read_text(encoding="utf-8", errors="replace"))
            if not isinstance(results, dict) or not isinstance(results.get("tests", []), list):
                raise ValueError("not a results file")
        except (OSError, ValueError) as exc:
            skipped.append((key, str(exc)))
            continue
        results["tests"] = [t for t in results.get("tests", []) if isinstance(t, dict)]
        for t in results["tests"]:
            if not isinstance(t.get("tags"), list):
                t["tags"] = []
        extra = results.get("extra_data") if isinstance(results.get("extra_data"), dict) else {}
        batch = extra.get("batch") if isinstance(extra.get("batch"), dict) else {}
        graded = stored.read(out_dir / key)
        if graded is None or not graded.authentic:
            skipped.append((key, i18n.render(NOT_THIS_GRADERS)))
            continue
        results = graded.results()          # the same results, written now in this language
        extra = results["extra_data"]
        extra["batch"] = batch
        # the name the grader signed (results.json's copy of it is as forgeable as the rest of that file)
        entries.append(SimpleNamespace(key=key, student=graded.student, results=results,
                                       extra=extra, report=graded.report, results_mtime=path.stat().st_mtime))
    entries.sort(key=lambda e: (e.student, e.key))
    return _once_each(entries), skipped


def _once_each(entries):
    """Each student listed once, whatever the folder's history: a student whose results folder was
    renamed (a classmate named like them but for case came, and both plain names got a hash)
    keeps the folder grade-all writes now (safe_text.file_name with the class's case twins), else
    the most recently written one."""
    from autograder import safe_text
    folded = Counter(e.student.casefold() for e in {e.student: e for e in entries}.values()
                     if safe_text.is_plain(e.student))
    by_student = {}
    for e in entries:
        by_student.setdefault(e.student, []).append(e)
    out = []
    for student, found in by_student.items():
        if len(found) > 1:
            now = safe_text.file_name(student, hashed=folded[student.casefold()] > 1)
            found.sort(key=lambda e: (e.key != now, -_mtime(e)))
        out.append(found[0])
    return out


def _mtime(entry):
    return entry.results_mtime if hasattr(entry, "results_mtime") else 0.0


def entry_assignment(entry):
    """The assignment an entry was graded as (gradescope_json.results_assignment), or None."""
    from autograder.reports.gradescope_json import results_assignment
    return results_assignment(entry.results)


def assignment_of_class(entries):
    """The assignment most of the entries were graded as (the default one when none was)."""
    counts = Counter(a for a in map(entry_assignment, entries) if a)
    return max(counts, key=lambda a: (counts[a], -list(contract.REGISTRY).index(a))) if counts \
        else contract.DEFAULT_ASSIGNMENT


def by_assignment(entries):
    """{assignment: [entries]} in the registry's order: a class that mixes assignments is viewed
    per assignment. An entry that could not be graded (no assignment known) is in every group."""
    known = {e.key: entry_assignment(e) for e in entries}
    present = [a for a in contract.REGISTRY if a in known.values()] or [contract.DEFAULT_ASSIGNMENT]
    return {a: [e for e in entries if known[e.key] in (a, None)] for a in present}


def _num(value, default=0.0):
    try:
        v = float(value)
        return v if math.isfinite(v) else default
    except (TypeError, ValueError):
        return default


def _tags(test, prefix):
    return [t[len(prefix):] for t in test.get("tags", []) if isinstance(t, str) and t.startswith(prefix)]


def _step_of(test):
    found = _tags(test, "step:")
    return found[0] if found else None


def _kind_of(test):
    found = _tags(test, "kind:")
    return found[0] if found else ""


def _check_title(test):
    """The check's own title: results name it "<number> <step title>: <check title>"."""
    name = str(test.get("name", ""))
    return name.split(": ", 1)[1] if ": " in name else name


# ------------------------------------------------------------------ the numbers
def step_state(entry, stem):
    """"missing", "unreadable" (the file could not be read: not JSON, not UTF-8, a syntax error; its
    checks are no misconception and no forbidden API), "stub" (no check passed and a part still
    raises NotImplementedError) or "attempted"."""
    info = entry.extra.get("steps", {}).get(stem) if isinstance(entry.extra.get("steps"), dict) else None
    if not isinstance(info, dict) or not info.get("file"):
        return "missing"
    tests = [t for t in entry.results["tests"] if _step_of(t) == stem]
    if any("unreadable" in t.get("tags", []) for t in tests):
        return "unreadable"
    if tests and not any(t.get("status") == "passed" for t in tests) and any(
            "not-implemented" in t.get("tags", []) for t in tests):
        return "stub"
    return "attempted"


def step_score(entry, stem):
    info = entry.extra.get("steps", {}).get(stem) if isinstance(entry.extra.get("steps"), dict) else None
    return _num(info.get("score")) if isinstance(info, dict) else 0.0


def compute(entries, assignment=None):
    """The class's numbers for one assignment (what _class.json holds, similarity aside): its steps,
    its maximum, its misconceptions (default: the assignment the entries were graded as)."""
    assignment = assignment or assignment_of_class(entries)
    step_list = contract.ASSIGNMENTS[assignment]
    stem_list = [s.stem for s in step_list]
    graded = [e for e in entries if not e.extra.get("error")]
    not_graded = [e for e in entries if e.extra.get("error")]
    n = len(graded)
    max_total = float(contract.REGISTRY[assignment].max_score)
    steps, checks, told = {}, {}, {}
    for step in step_list:
        stem = step.stem
        scores = [step_score(e, stem) for e in graded]
        states = Counter(step_state(e, stem) for e in graded)
        slow = forbidden = 0
        for e in graded:
            if step_state(e, stem) != "attempted":
                continue
            tests = [t for t in e.results["tests"] if _step_of(t) == stem]
            failed = [t for t in tests if t.get("status") != "passed"]
            if failed and all(_kind_of(t) == "complexity" for t in failed):
                slow += 1
            if any(_kind_of(t) == "api" for t in failed):
                forbidden += 1
        hist = Counter(_bin(s, step.points) for s in scores)
        steps[stem] = {
            "number": step.number, "title": step.title, "max_score": step.points, "graded": n,
            "mean": round(sum(scores) / n, 3) if n else None,
            "median": _median(scores), "full_marks": sum(1 for s in scores if s >= step.points),
            "full_marks_share": round(sum(1 for s in scores if s >= step.points) / n, 4) if n else None,
            "histogram": {str(b): hist.get(b, 0) for b in range(step.points + 1)},
            "missing": states["missing"], "stub": states["stub"], "attempted": states["attempted"],
            "unreadable": states["unreadable"],
            "correct_but_slow": slow, "forbidden_api": forbidden}
    attempted = {(e.key, stem) for e in graded for stem in stem_list if step_state(e, stem) == "attempted"}
    for e in graded:
        seen = set()
        for t in e.results["tests"]:
            stem = _step_of(t)
            number = str(t.get("number", ""))
            if stem not in stem_list or not number:
                continue
            c = checks.setdefault(number, {"number": number, "step": stem, "title": _check_title(t),
                                           "kind": _kind_of(t), "max_score": _num(t.get("max_score")),
                                           "failed": 0, "passed": 0, "attempted": 0, "messages": Counter()})
            if (e.key, stem) in attempted:
                c["attempted"] += 1
                if t.get("status") == "passed":
                    c["passed"] += 1
                else:
                    c["failed"] += 1
                    c["messages"][str(t.get("output", ""))] += 1
            for mid in _tags(t, "misconception:"):
                if (mid, stem) not in seen:
                    seen.add((mid, stem))
                    told.setdefault(mid, Counter())[stem] += 1
    check_list = []
    for c in sorted(checks.values(), key=lambda c: _number_key(c["number"])):
        messages = c.pop("messages")
        c["failed_share"] = round(c["failed"] / c["attempted"], 4) if c["attempted"] else None
        c["representative"] = (min(messages.items(), key=lambda kv: (-kv[1], len(kv[0]), kv[0]))[0]
                               if messages else None)
        check_list.append(c)
    by_mistake = {}
    for mid, per_step in told.items():
        students = sum(1 for e in graded if any(f"misconception:{mid}" in t.get("tags", [])
                                                for t in e.results["tests"]))
        by_mistake[mid] = {"students": students, "share": round(students / n, 4) if n else None,
                           "steps": {stem: per_step[stem] for stem in stem_list if per_step.get(stem)},
                           "shares": {stem: round(per_step[stem] / n, 4) for stem in stem_list if per_step.get(stem)}}
    totals = [_num(e.results.get("score")) for e in graded]
    return {
        "assignment": assignment, "graded": n, "not_graded": len(not_graded), "max_score": max_total,
        "totals": {"mean": round(sum(totals) / n, 3) if n else None, "median": _median(totals),
                   "min": min(totals) if totals else None, "max": max(totals) if totals else None,
                   "full_marks": sum(1 for t in totals if t >= max_total), "values": sorted(totals)},
        "steps": steps, "checks": check_list,
        "misconceptions": dict(sorted(by_mistake.items(), key=lambda kv: (-kv[1]["students"], kv[0]))),
        "students": [{"student": e.student, "results": e.key, "total": _num(e.results.get("score")),
                      "max_score": _num(e.extra.get("max_score"), max_total),
                      "steps": {stem: step_score(e, stem) for stem in stem_list},
                      "error": str(e.extra.get("error", "")) or None} for e in entries],
    }


def _bin(score, points):
    return min(points, max(0, int(math.floor(score + 1e-9))))


def _median(values):
    if not values:
        return None
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def _number_key(number):
    return tuple(int(p) if p.isdigit() else 0 for p in number.split("."))


# ------------------------------------------------------------------ similarity
def similar_pairs(out_dir, entries, jobs=None):
    """similarity.analyse over the graded students' stored code, the pairs named by student."""
    graded = [e for e in entries if not e.extra.get("error")]
    codes = {e.key: similarity.load_code(Path(out_dir) / e.key) for e in graded}
    found = similarity.analyse({k: v for k, v in codes.items() if v}, jobs)
    names = {e.key: e.student for e in graded}
    for p in found["pairs"]:
        p["student_a"], p["student_b"] = names[p["a"]], names[p["b"]]
    found["students_with_code"] = sum(1 for v in codes.values() if v)
    return found, codes


# ------------------------------------------------------------------ plots (matplotlib, inline SVG)
BLUE, GREEN, GREY = "#3b6ea8", "#2e8540", "#999999"


def _svg(fig, prefix, label):
    """A matplotlib figure as inline SVG: text kept as text (the page's fonts draw Chinese),
    no XML prolog, no namespace or metadata URLs, ids made unique on the page; `label` is what a
    screen reader says for it (an image needs a name: axe-core's svg-img-alt)."""
    buf = io.StringIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # "Glyph missing from DejaVu Sans": the browser draws it
        fig.savefig(buf, format="svg", metadata={"Creator": None, "Date": None, "Format": None, "Type": None})
    svg = buf.getvalue()
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r'\s+xmlns(:xlink)?="[^"]*"', "", svg, count=2)
    svg = re.sub(r"<metadata>.*?</metadata>", "", svg, flags=re.S)
    ids = set(re.findall(r'id="([^"]+)"', svg))
    svg = re.sub(r'id="([^"]+)"', lambda m: f'id="{prefix}-{m.group(1)}"', svg)
    svg = re.sub(r"#([A-Za-z_][\w.-]*)", lambda m: f"#{prefix}-{m.group(1)}" if m.group(1) in ids else m.group(0), svg)
    svg = re.sub(r">\s+<", "><", svg)
    return svg.replace("<svg ", f'<svg class="plot" role="img" aria-label="{_e(label)}" ', 1)


def _figure(width, height):
    import matplotlib
    matplotlib.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "attention-kit", "font.size": 9,
                                "axes.spines.top": False, "axes.spines.right": False})
    from matplotlib.figure import Figure
    return Figure(figsize=(width, height), layout="constrained")


def totals_plot(data):
    """The class's totals: a histogram in bins of 5 points, full marks in green."""
    top = data["max_score"]
    width = 5 if top >= 20 else 1
    edges = list(range(0, int(math.ceil(top)) + width, width))
    counts = [0] * (len(edges) - 1)
    for v in data["totals"]["values"]:
        counts[min(len(counts) - 1, int(v // width))] += 1
    fig = _figure(7.2, 2.4)
    ax = fig.add_subplot()
    colours = [GREEN if edges[i + 1] >= top else BLUE for i in range(len(counts))]
    ax.bar(edges[:-1], counts, width=width * 0.92, align="edge", color=colours)
    ax.set_xlim(0, top)
    ax.set_xticks(edges)
    ax.set_xlabel(_("total points"))
    ax.set_ylabel(_("students"))
    ax.yaxis.get_major_locator().set_params(integer=True)
    return _svg(fig, "totals", _("Histogram of the class's total points"))


def steps_plot(data):
    """Each step's score distribution (bins of one point; full marks in green), one panel a step."""
    step_list = contract.ASSIGNMENTS[data["assignment"]]
    fig = _figure(7.4, 1.8 * math.ceil(len(step_list) / 4) or 1.8)
    rows = max(1, math.ceil(len(step_list) / 4))
    axes = fig.subplots(rows, 4, sharey=True, squeeze=False).ravel()
    for ax in axes[len(step_list):]:
        ax.axis("off")
    for ax, step in zip(axes, step_list):
        st = data["steps"][step.stem]
        counts = [st["histogram"][str(b)] for b in range(step.points + 1)]
        ax.bar(range(step.points + 1), counts, width=0.85,
               color=[GREEN if b == step.points else BLUE for b in range(step.points + 1)])
        ax.set_title(_("step {number}", number=step.number), fontsize=9)
        ax.set_xticks([0, step.points // 2, step.points])
        ax.yaxis.get_major_locator().set_params(integer=True)
    fig.supxlabel(_("points at the step"), fontsize=9)
    fig.supylabel(_("students"), fontsize=9)
    return _svg(fig, "steps", _("Histograms of the points at each step"))


# ------------------------------------------------------------------ the page
STYLE = """
body { font: 15px/1.45 system-ui, "PingFang SC", "Microsoft YaHei", "Noto Sans CJK SC", sans-serif; margin: 2em auto;
  max-width: 1100px; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; margin-bottom: .2em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; } td, th { padding: 3px 7px; border-bottom: 1px solid #eee; vertical-align: top;
  text-align: left; } th { background: #f4f4f4; } td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
.note { color: #555; font-size: 13px; } pre { white-space: pre-wrap; word-break: break-word; margin: 0; font-size: 12px; }
.plot { max-width: 100%; height: auto; } .plot text { font-family: inherit; }
.heat td.cell { text-align: right; min-width: 3.2em; } .heat td.id { white-space: nowrap; } .heat td.na { color: #595959; text-align: center; }
.full { color: #17672d; font-weight: bold; } .zero { color: #a31515; }
th button { font: inherit; border: 0; background: none; cursor: pointer; padding: 0; }
th button::after { content: " \\2195"; color: #595959; }
.warn { background: #fff6d6; border-left: 4px solid #e0a800; padding: 6px 10px; }
.pair { border: 1px solid #ddd; margin: 8px 0; padding: 4px 8px; } .pair summary { cursor: pointer; }
.side { display: grid; grid-template-columns: 1fr 1fr; gap: 8px; } .side pre { background: #f8f8f8; padding: 4px; }
.side .hit { background: #ffe08a; display: block; } .side .gap { color: #595959; display: block; }
.side .ln { color: #595959; user-select: none; }
"""

# the page's one script: sorts the students' table by the column clicked (no student text in it)
SCRIPT = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  var buttons = table.querySelectorAll("th button");
  buttons.forEach(function (button, col) {
    button.addEventListener("click", function () {
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      var numeric = button.hasAttribute("data-numeric");
      var dir = button.getAttribute("data-dir") || (numeric ? "up" : "down");
      var up = dir !== "up";
      rows.sort(function (a, b) {
        var x = a.cells[col].getAttribute("data-v"), y = b.cells[col].getAttribute("data-v");
        var c = numeric ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
        return up ? c : -c;
      });
      button.setAttribute("data-dir", up ? "up" : "down");
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
  var wanted = /^#sort=([\\w.-]+)$/.exec(window.location.hash);
  buttons.forEach(function (button) {
    if (wanted && button.getAttribute("data-key") === wanted[1]) { button.click(); }
  });
});
"""


def _e(text):
    return html.escape(str(text), quote=True)


def _fmt(x):
    return f"{x:g}"


def _pct(x):
    return "" if x is None else f"{100 * x:.0f}%"


def _heat_colour(share, top):
    t = 0.0 if not top else min(1.0, share / top)
    r, g, b = int(255 - 30 * t), int(255 - 150 * t), int(255 - 200 * t)
    return f"#{r:02x}{g:02x}{b:02x}"


def _feedback_href(report_dir, out_dir, key):
    target = Path(out_dir).resolve() / key / FEEDBACK_PAGE
    return quote(os.path.relpath(target, Path(report_dir).resolve()).replace(os.sep, "/"))


def _summary(data):
    t = data["totals"]
    n = data["graded"]
    parts = [_("{n} submissions graded, {m} could not be graded.", n=n, m=data["not_graded"])]
    if n:
        parts.append(_("Total: mean {mean}, median {median}, from {low} to {high} of {top}; {full} at full marks.",
                       mean=f"{t['mean']:.1f}", median=_fmt(t["median"]), low=_fmt(t["min"]), high=_fmt(t["max"]),
                       top=_fmt(data["max_score"]), full=t["full_marks"]))
    return join(" ", parts)


def _mean(value):
    return "" if value is None else f"{value:.1f}"


def _steps_table(data):
    head = "".join(f"<th>{_e(label)}</th>" for label in (
        _("step"), _("title"), _("mean"), _("at full marks"), _("correct but slow"), _("forbidden API"),
        _("still a stub"), _("no file"), _("file unreadable")))
    rows = []
    for step in contract.ASSIGNMENTS[data["assignment"]]:
        st = data["steps"][step.stem]
        rows.append(f'<tr id="step-{step.stem}"><td>{step.number}</td><td>{_e(step.shown_title)}</td>'
                    f'<td class="n">{_mean(st["mean"])} / {step.points}</td>'
                    f'<td class="n">{st["full_marks"]} ({_pct(st["full_marks_share"])})</td>'
                    f'<td class="n">{st["correct_but_slow"]}</td><td class="n">{st["forbidden_api"]}</td>'
                    f'<td class="n">{st["stub"]}</td><td class="n">{st["missing"]}</td>'
                    f'<td class="n">{st.get("unreadable", 0)}</td></tr>')
    return f'<table id="steps-table"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _heatmap(data):
    mistakes = data["misconceptions"]
    if not mistakes:
        return f'<p>{_e(_("No mistake from the catalogue was named in this class."))}</p>'
    top = max(s for m in mistakes.values() for s in m["shares"].values())
    step_list = contract.ASSIGNMENTS[data["assignment"]]
    head = (f"<th>{_e(_('mistake'))}</th>" + "".join(f'<th class="n">{s.number}</th>' for s in step_list)
            + f"<th class=\"n\">{_e(_('students'))}</th><th>{_e(_('diagnosis and hint'))}</th>")
    rows = []
    for mid, m in mistakes.items():
        cat = misconceptions.CATALOGUE.get(mid)
        cells = []
        for step in step_list:
            share = m["shares"].get(step.stem)
            if share:
                cells.append(f'<td class="cell" style="background:{_heat_colour(share, top)}" '
                             f'title="{_e(_("{count} of {n} students", count=m["steps"][step.stem], n=data["graded"]))}">'
                             f'{_pct(share)}</td>')
            elif cat is not None and step.stem not in cat.stems:
                cells.append('<td class="na">&middot;</td>')
            else:
                cells.append('<td class="cell"></td>')
        text = (f'{_e(translate(cat.diagnosis))} <i>{_e(_("Hint: {hint}", hint=translate(cat.hint)))}</i>'
                if cat else "")
        rows.append(f'<tr data-mistake="{_e(mid)}"><td class="id"><b>{_e(mid)}</b></td>{"".join(cells)}'
                    f'<td class="n">{m["students"]} ({_pct(m["share"])})</td><td class="note">{text}</td></tr>')
    note = _e(_("Each cell: the share of the graded students told this mistake at this step; a dot: the mistake "
                "cannot occur at that step. Sorted by how many students were told it."))
    return (f'<table class="heat" id="heatmap"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
            f'<p class="note">{note}</p>')


def _checks_table(data):
    failing = sorted((c for c in data["checks"] if c["failed"]), key=lambda c: (-c["failed"], _number_key(c["number"])))
    if not failing:
        return f'<p>{_e(_("No check failed for a student who handed in code for its step."))}</p>'
    head = "".join(f"<th>{_e(label)}</th>" for label in (_("check"), _("what"), _("failed"), _("a typical message")))
    rows = []
    for c in failing[:TOP_CHECKS]:
        message = c["representative"] or ""
        if len(message) > MAX_MESSAGE:
            message = message[:MAX_MESSAGE] + " ..."
        rows.append(f'<tr data-check="{_e(c["number"])}"><td>{_e(c["number"])}</td><td>{_e(c["title"])}<br>'
                    f'<span class="note">{_e(c["kind"])}</span></td>'
                    f'<td class="n">{c["failed"]} / {c["attempted"]} ({_pct(c["failed_share"])})</td>'
                    f'<td><pre>{_e(message)}</pre></td></tr>')
    note = _e(_("Counted among the students who handed in code for the check's step (not a stub, not missing); "
                "the message is the one most of them got."))
    return (f'<table id="checks"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
            f'<p class="note">{note}</p>')


def _students_table(data, report_dir, out_dir):
    step_list = contract.ASSIGNMENTS[data["assignment"]]
    head = ([("student", _("student"), False)] + [(s.stem, str(s.number), True) for s in step_list]
            + [("total", _("total"), True), ("error", _("error"), False)])
    cells = "".join(f'<th{" class=n" if num else ""}><button type="button" data-key="{key}"'
                    f'{" data-numeric" if num else ""}>{_e(label)}</button></th>' for key, label, num in head)
    rows = []
    for s in data["students"]:
        href = _feedback_href(report_dir, out_dir, s["results"])
        step_cells = "".join(
            f'<td class="n{" full" if v >= st.points else " zero" if v == 0 else ""}" data-v="{v:g}">{_fmt(v)}</td>'
            for st, v in ((st, s["steps"].get(st.stem, 0.0)) for st in step_list))
        rows.append(f'<tr data-results="{_e(s["results"])}"><td data-v="{_e(s["student"])}"><a href="{_e(href)}">'
                    f'{_e(s["student"])}</a></td>{step_cells}<td class="n" data-v="{s["total"]:g}"><b>{_fmt(s["total"])}'
                    f'</b></td><td data-v="{_e(s["error"] or "")}" class="note">{_e(s["error"] or "")}</td></tr>')
    note = _e(_("Click a column to sort by it; each name opens that student's feedback page."))
    return (f'<table class="sortable" id="students"><thead><tr>{cells}</tr></thead><tbody>{"".join(rows)}</tbody>'
            f'</table><p class="note">{note}</p>')


def _not_graded(data):
    rows = [s for s in data["students"] if s["error"]]
    if not rows:
        return f'<p>{_e(_("Every submission was graded."))}</p>'
    body = "".join(f'<tr><td>{_e(s["student"])}</td><td>{_e(s["error"])}</td></tr>' for s in rows)
    return (f'<table id="not-graded-table"><thead><tr><th>{_e(_("submission"))}</th><th>{_e(_("reason"))}</th></tr></thead>'
            f'<tbody>{body}</tbody></table>')


def _side(code, slices):
    lines = similarity.excerpt(similarity.matched_lines(code, slices))
    out = []
    for item in lines:
        if item is None:
            out.append('<span class="gap">...</span>')
            continue
        number, text, hit = item
        out.append(f'<span class="{"hit" if hit else "ctx"}"><span class="ln">{number:>4} </span>{_e(text)}</span>')
    return "".join(s if s.startswith('<span class="hit"') or s.startswith('<span class="gap"') else s + "\n"
                   for s in out)


def _threshold_text(v):
    if v.get("eligible", similarity.MIN_CLASS) < similarity.MIN_CLASS:
        return _("too few to compare")
    if v["threshold"] is None:
        return _("none: most of the class writes alike here")
    return _pct(v["threshold"])


def _similarity_section(sim, codes):
    if sim is None:
        return f'<p>{_e(_("Similarity was not computed (--no-similarity)."))}</p>'
    verdict = _e(_("Similarity is a reason to look, never a verdict: short or forced code, a shared tutorial or "
                   "working together as allowed make code alike. Read the code side by side before concluding "
                   "anything."))
    how = _e(_("Compared: the code each student was graded on (the step files the grader took; of a notebook the "
               "cells the grader runs), "
               "with variable and function names, comments and strings ignored, without the stub's code and "
               "without the code more than {cap} students share at a step (the class's common code). The closest "
               "pairs are listed, most alike first, with the share of their distinctive code that the other also "
               "has; a pair marked \"stands out\" is far above the class's usual (the step's threshold below).",
               cap=min((v["common_cap"] for v in sim["steps"].values()), default=0)))
    intro = f'<p class="warn" id="not-a-verdict">{verdict}</p><p class="note">{how}</p>'
    head = "".join(f"<th>{_e(x)}</th>" for x in (_("step"), _("students compared"), _("threshold"), _("pairs")))
    rows = "".join(f'<tr><td>{contract.STEP_BY_STEM[stem].number}</td><td class="n">{v["eligible"]} / {v["n"]}</td>'
                   f'<td class="n">{_e(_threshold_text(v))}</td><td class="n">{v["flagged_pairs"]}</td></tr>'
                   for stem, v in sim["steps"].items())
    rows += (f'<tr><td>{_e(_("overall"))}</td><td></td><td class="n">{_e(_threshold_text({"threshold": sim["overall_threshold"]}))}</td>'
             f'<td class="n">{sum(1 for p in sim["pairs"] if p["flagged_overall"])}</td></tr>')
    table = f'<table id="similarity-steps"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
    if sim.get("class_writes_alike"):
        table += (f'<p class="warn" id="writes-alike">{_e(_("Most of this class writes alike (the median student has a classmate {share} alike): no threshold can tell who stands out, so read the ranking below from the top.", share=_pct(sim.get("median_nearest"))))}</p>')
    if not sim["pairs"]:
        return intro + table + f'<p id="no-pairs">{_e(_("No two submissions share distinctive code."))}</p>'
    pairs = []
    for p in sim["pairs"]:
        steps = ", ".join(str(contract.STEP_BY_STEM[s].number) for s in p["flagged_steps"])
        stands_out = p["flagged_steps"] or p["flagged_overall"]
        summary = _("{rank}. {a} and {b}: {overall} alike overall; stands out at steps {steps}", rank=p.get("rank", ""),
                    a=p["student_a"], b=p["student_b"], overall=_pct(p["overall"]), steps=steps or "-") \
            if stands_out else _("{rank}. {a} and {b}: {overall} alike overall", rank=p.get("rank", ""),
                                 a=p["student_a"], b=p["student_b"], overall=_pct(p["overall"]))
        views = []
        shown = p["flagged_steps"] or sorted(p["steps"], key=lambda st: -p["steps"][st]["similarity"])[:2]
        for stem in shown:
            v = p["steps"][stem]
            code_a, code_b = codes[p["a"]].get(stem, ""), codes[p["b"]].get(stem, "")
            head = _e(_("Step {number}: {share} alike", number=contract.STEP_BY_STEM[stem].number,
                        share=_pct(v["similarity"])))
            views.append(f'<p>{head}</p>'
                         f'<div class="side"><div><b>{_e(p["student_a"])}</b><pre>{_side(code_a, v["slices_a"])}</pre></div>'
                         f'<div><b>{_e(p["student_b"])}</b><pre>{_side(code_b, v["slices_b"])}</pre></div></div>')
        opened = " open" if len(pairs) < OPEN_PAIRS else ""
        pairs.append(f'<details class="pair"{opened} data-stands-out="{"yes" if stands_out else "no"}" data-a="{_e(p["a"])}" data-b="{_e(p["b"])}"><summary>{_e(summary)}</summary>'
                     f'{"".join(views)}</details>')
    return (intro + table + f'<p>{_e(_("Highlighted: the lines of distinctive code found in both."))}</p>'
            + "".join(pairs))


def render(data, sim, codes, report_dir, out_dir):
    """The page, as a string (in the current language)."""
    from autograder.reports.html import HTML_LANG
    script_hash = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    csp = f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{script_hash}'; img-src data:"
    title = _e(_("attention-kit: the class"))
    steps_note = _("Correct but slow: every check passed but the complexity one. Forbidden API: the step's code "
                   "called a library function the step asks students to write.")
    sections = [
        (_("Totals"), f'<p id="summary">{_e(_summary(data))}</p>' + (totals_plot(data) if data["graded"] else "")),
        (_("Steps"), (steps_plot(data) if data["graded"] else "") + _steps_table(data)
         + f'<p class="note">{_e(steps_note)}</p>'),
        (_("Common mistakes"), _heatmap(data)),
        (_("Most-failed checks"), _checks_table(data)),
        (_("Code that looks alike"), _similarity_section(sim, codes)),
        (_("Students"), _students_table(data, report_dir, out_dir)),
        (_("Not graded"), _not_graded(data)),
    ]
    body = "".join(f'<section id="{_anchor(i)}"><h2>{_e(h)}</h2>{content}</section>' for i, (h, content) in enumerate(sections))
    nav = " | ".join(f'<a href="#{_anchor(i)}">{_e(h)}</a>' for i, (h, _content) in enumerate(sections))
    return (f'<!DOCTYPE html><html lang="{HTML_LANG[i18n.get_language()]}"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{title}</title>'
            f'<style>{STYLE}</style></head><body><h1>{title}</h1><p class="note">{nav}</p>{body}'
            f'<script>{SCRIPT}</script></body></html>\n')


SECTION_IDS = ("totals", "steps", "mistakes", "checks", "similarity", "students", "not-graded")


def _anchor(i):
    return SECTION_IDS[i]


# ------------------------------------------------------------------ each student's feedback page
def feedback_report(entry):
    """The report html_report.render reads: graded.json's (messages and diagnoses apart), else one
    rebuilt from a results.json as written (its messages hold their diagnoses already: no boxes)."""
    if getattr(entry, "report", None) is not None:
        return entry.report
    steps = []
    info = entry.extra.get("steps") if isinstance(entry.extra.get("steps"), dict) else {}
    assignment = entry_assignment(entry) or contract.DEFAULT_ASSIGNMENT
    for step in contract.ASSIGNMENTS[assignment]:
        tests = [t for t in entry.results["tests"] if _step_of(t) == step.stem]
        if step.stem not in info and not tests:
            continue
        si = info.get(step.stem) if isinstance(info.get(step.stem), dict) else {}
        checks = [SimpleNamespace(number=str(t.get("number", "")), name=_check_title(t), kind=_kind_of(t),
                                  status=str(t.get("status", "")), score=_num(t.get("score")),
                                  max_score=_num(t.get("max_score")), output=str(t.get("output", "")),
                                  misconceptions=[]) for t in tests]
        skipped = [(str(s.get("number", "")), str(s.get("name", "")), str(s.get("reason", "")))
                   for s in si.get("skipped", []) if isinstance(s, dict)]
        steps.append(SimpleNamespace(step=step, file=si.get("file"), checks=checks, skipped=skipped,
                                     printed=str(si.get("printed", "")), score=_num(si.get("score")),
                                     max_score=_num(si.get("max_score"), step.points), example=None))
    return SimpleNamespace(steps=steps, score=_num(entry.results.get("score")),
                           max_score=_num(entry.extra.get("max_score"), contract.REGISTRY[assignment].max_score))


def write_feedback(out_dir, entry):
    """OUT/<key>/feedback.html for one student (rewritten only when it changed)."""
    from autograder.reports import html as html_report
    if entry.extra.get("error"):
        report = SimpleNamespace(steps=[], score=0.0, max_score=_num(entry.extra.get("max_score")))
        page = html_report.render(report, entry.student).replace(
            "</body>", f'<pre class="failed">{html.escape(str(entry.extra.get("error")))}</pre></body>')
    else:
        page = html_report.render(feedback_report(entry), entry.student)
    path = Path(out_dir) / entry.key / FEEDBACK_PAGE
    data = page.encode("utf-8", "backslashreplace")
    if not atomic.same_content(path, data):
        atomic.write_bytes(path, data)
    return path


# ------------------------------------------------------------------ build
RESERVED = "_class"      # OUT/_class.json, OUT/_class.html: no results folder can take a name that starts with "_"
                        # (a plain name starts with a letter or digit, any other holds "~": safe_text.file_name)


def numbers_path(out_dir, assignment=None):
    """OUT/_class.json (OUT/_class.<assignment>.json for one assignment of a mixed class)."""
    return Path(out_dir) / (f"{RESERVED}.json" if assignment is None else f"{RESERVED}.{assignment}.json")


def page_path(out_dir, report=None, assignment=None):
    """The page: `report` (default OUT/_class.html; a page directly in OUT gets a leading "_"); of one assignment of a mixed class, its name
    before the suffix (class.html -> class.modern_attention.html)."""
    report = Path(report) if report else Path(out_dir) / f"{RESERVED}.html"
    if report.parent.resolve() == Path(out_dir).resolve() and not report.name.startswith("_"):
        report = report.with_name("_" + report.name)    # beside the results folders: a name none can take
    return report if assignment is None else report.with_name(f"{report.stem}.{assignment}{report.suffix or '.html'}")


def build(out_dir, report=None, keys=None, lang=None, with_similarity=True, jobs=None):
    """Write the class view: the numbers (numbers_path), the page (page_path) and every student's
    feedback page, in `lang` (default: the current language). A class that mixes assignments gets
    one page and one numbers file per assignment (each with its steps, maxima, misconceptions and
    similarity against its own stubs) and OUT/_class.json lists them. Returns (page path, timings):
    the one page, or the first assignment's of a mixed class."""
    out_dir = Path(out_dir)
    with i18n.language(lang or i18n.get_language()):
        timings = {}
        start = time.perf_counter()
        entries, skipped = load(out_dir, keys)
        for key, why in skipped:      # said, not only listed in the numbers' "unreadable"
            print(i18n.render(_("{folder}: not in the class view: {why}", folder=safe_text.for_terminal(
                key, newlines=False), why=why)), file=sys.stderr)
        groups = by_assignment(entries)
        timings["numbers"] = time.perf_counter() - start
        pages = {}
        for assignment, its_entries in groups.items():
            mixed = len(groups) > 1
            page, numbers = (page_path(out_dir, report, assignment if mixed else None),
                             numbers_path(out_dir, assignment if mixed else None))
            _build_one(out_dir, page, numbers, its_entries, assignment, skipped, with_similarity, jobs, timings)
            pages[assignment] = (page, numbers)
        t = time.perf_counter()
        for entry in entries:
            write_feedback(out_dir, entry)
        timings["feedback_pages"] = time.perf_counter() - t
        if len(groups) > 1:
            index = {"version": 1, "grader": f"attention-kit {__version__}", "mixed": True,
                     "assignments": {a: {"page": str(p), "numbers": n.name} for a, (p, n) in pages.items()}}
            _write(numbers_path(out_dir), json.dumps(index, indent=1, ensure_ascii=False) + "\n")
        timings["total"] = time.perf_counter() - start
    return next(iter(pages.values()))[0], timings


def _build_one(out_dir, report, numbers, entries, assignment, skipped, with_similarity, jobs, timings):
    """One assignment's page and numbers."""
    data = compute(entries, assignment)
    sim, codes = None, {}
    if with_similarity:
        t = time.perf_counter()
        sim, codes = similar_pairs(out_dir, entries, jobs)
        timings["similarity"] = timings.get("similarity", 0.0) + time.perf_counter() - t
    t = time.perf_counter()
    page = render(data, sim, codes, report.parent, out_dir)
    report.parent.mkdir(parents=True, exist_ok=True)
    _write(report, page)
    timings["page"] = timings.get("page", 0.0) + time.perf_counter() - t
    machine = dict(data, version=1, grader=f"attention-kit {__version__}", language=i18n.get_language(),
                   unreadable=[{"results": k, "why": w} for k, w in skipped],
                   similarity=None if sim is None else _sim_json(sim, codes))
    machine["totals"] = {k: v for k, v in data["totals"].items() if k != "values"} | {
        "histogram": _totals_histogram(data)}
    _write(numbers, json.dumps(machine, indent=1, ensure_ascii=False) + "\n")


def _totals_histogram(data):
    top = data["max_score"]
    hist = Counter(min(int(top), int(v)) for v in data["totals"]["values"])
    return {str(b): hist.get(b, 0) for b in range(int(top) + 1)}


def _sim_json(sim, codes):
    """The pairs for _class.json: matched line numbers instead of character offsets."""
    pairs = []
    for p in sim["pairs"]:
        steps = {}
        for stem, v in p["steps"].items():
            la = [n for n, _t, hit in similarity.matched_lines(codes[p["a"]].get(stem, ""), v["slices_a"]) if hit]
            lb = [n for n, _t, hit in similarity.matched_lines(codes[p["b"]].get(stem, ""), v["slices_b"]) if hit]
            steps[stem] = {k: v[k] for k in ("similarity", "shared", "shared_kgrams", "flagged")} | {
                "lines_a": la, "lines_b": lb}
        pairs.append({"rank": p.get("rank"), "student_a": p["student_a"], "student_b": p["student_b"],
                      "results_a": p["a"], "results_b": p["b"], "overall": p["overall"],
                      "flagged_overall": p["flagged_overall"],
                      "flagged_steps": p["flagged_steps"], "steps": steps})
    return {"steps": sim["steps"], "overall_threshold": sim["overall_threshold"], "parameters": sim["parameters"],
            "class_writes_alike": sim.get("class_writes_alike"), "median_nearest": sim.get("median_nearest"),
            "students_with_code": sim.get("students_with_code"), "pairs": pairs}


def _write(path, text):
    atomic.write_text(path, text, errors="backslashreplace")
