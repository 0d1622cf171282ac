"""`grade --html DIR`: one self-contained feedback page per submission.

The page shows each step's score, every check with its message and the mistake it named, and,
for steps 04 to 07, the expected attention weights of one example beside the student's and
their difference, as inline SVG heatmaps (no JavaScript, no external file, no plotting library).

The examples come from the graded run itself: each attention suite has one `@example` function
(checks.expect.show_example), which `grading.run.grade(..., examples=True)` runs in the step's
own child right after its checks; the report carries it (StepResult.example). Nothing of the
student's is imported or run here, and no child is started for the page.

Every string that may hold something the student controls (messages quote their output and
exception texts; file names) goes through `html.escape`.
"""
import html
import math
from pathlib import Path

import numpy as np

from autograder import i18n, safe_text
from autograder.reference import misconceptions
from autograder.i18n import _, translate
from autograder.reports.gradescope_json import MAX_PRINTED
from autograder.reports.text import check_text, clipped, mistakes

CELL = 26                                          # pixels per heatmap cell
MIN_DIFF = 0.05                                    # the difference map's colour scale never goes below this


# ------------------------------------------------------------------ SVG heatmaps
def _colour(v, scale, diverging):
    """White -> dark blue for weights in [0, scale]; blue <- white -> red for differences in [-scale, scale]."""
    if not math.isfinite(v):
        return "#999999"
    v = v / scale
    if diverging:
        t = max(-1.0, min(1.0, v))
        r, g, b = (255, int(255 * (1 - t)), int(255 * (1 - t))) if t >= 0 else \
                  (int(255 * (1 + t)), int(255 * (1 + t)), 255)
    else:
        t = max(0.0, min(1.0, v))
        r, g, b = (int(255 - 230 * t), int(255 - 180 * t), int(255 - 80 * t))
    return f"#{r:02x}{g:02x}{b:02x}"


def heatmap_svg(matrix, title, scale=1.0, diverging=False, mask=None):
    """An inline SVG heatmap: rows are queries, columns keys; each cell's value in its tooltip.

    `scale` is the value drawn in full colour (weights of 5 keys are near 0.2: a [0, 1] scale
    would leave them all pale). `mask` (bool, the matrix's shape, True = may attend): the other
    cells are hatched over their colour, so a weight where none belongs still shows through."""
    m = np.asarray(matrix, dtype=np.float64)
    rows, cols = m.shape
    blocked = None if mask is None else ~np.broadcast_to(np.asarray(mask, dtype=bool), m.shape)
    left, top = 24, 34
    width, height = left + cols * CELL + 4, top + rows * CELL + 4
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="heatmap" width="{width}" height="{height}" '
             f'role="img" aria-label="{_e(title)}">',
             f'<text x="{left}" y="14" class="t">{_e(title)}</text>',
             f'<text x="{left}" y="29" class="a">{_e(_("keys"))} &#8594;</text>',
             f'<text x="12" y="{top + rows * CELL // 2}" class="a" '
             f'transform="rotate(-90 12 {top + rows * CELL // 2})" text-anchor="middle">{_e(_("queries"))}</text>']
    for i in range(rows):
        for j in range(cols):
            v = m[i, j]
            label = "NaN" if math.isnan(v) else f"{v:.4g}"
            masked = blocked is not None and blocked[i, j]
            note = f" ({_e(_('masked'))})" if masked else ""
            parts.append(f'<rect x="{left + j * CELL}" y="{top + i * CELL}" width="{CELL - 1}" '
                         f'height="{CELL - 1}" fill="{_colour(v, scale, diverging)}"><title>[{i}, {j}] = {label}{note}'
                         '</title></rect>')
            if masked:       # two grey diagonals: the cell's colour stays visible between them
                x, y = left + j * CELL, top + i * CELL
                parts.append(f'<path class="masked" d="M{x} {y + CELL - 1}L{x + CELL - 1} {y}'
                             f'M{x} {y + (CELL - 1) // 2}L{x + (CELL - 1) // 2} {y}'
                             f'M{x + (CELL - 1) // 2} {y + CELL - 1}L{x + CELL - 1} {y + (CELL - 1) // 2}" '
                             'stroke="#777" stroke-width="1" fill="none"/>')
    parts.append("</svg>")
    return "".join(parts)


# ------------------------------------------------------------------ the page
STYLE = """
body { font: 15px/1.45 system-ui, "PingFang SC", "Microsoft YaHei", "Noto Sans CJK SC", sans-serif; margin: 2em auto; max-width: 980px; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; margin-bottom: .2em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; width: 100%; } td, th { padding: 4px 8px; min-width: 3em; border-bottom: 1px solid #eee;
  vertical-align: top; text-align: left; } th { background: #f4f4f4; }
.score { font-weight: bold; white-space: nowrap; } .passed { color: #17672d; } .failed { color: #a31515; }
pre { white-space: pre-wrap; word-break: break-word; margin: 0; font-size: 13px; }
.mistake { background: #fff6d6; border-left: 4px solid #e0a800; padding: 6px 10px; margin-top: 6px; }
.maps { display: flex; flex-wrap: wrap; gap: 18px; align-items: flex-start; margin: 10px 0; }
.heatmap .t { font-size: 13px; font-weight: bold; } .heatmap .a { font-size: 11px; fill: #555; }
.note { color: #555; font-size: 13px; } .printed { background: #f6f6f6; padding: 6px; }
"""


def _e(text):
    return html.escape(str(text))


def _check_rows(step):
    """The step's checks as table rows: each message, and below it a box per mistake it named (the
    diagnosis is kept apart from the message in the results, and shown only in its box)."""
    rows, seen = [], {}
    framework = getattr(step.step, "framework", None)     # the step's library: its hints speak it
    for c in step.checks:
        # one broken file fails many checks alike: say it once (as the terminal table does, whose
        # text is message and diagnosis together)
        full = check_text(c, framework)
        output = (_("(same message as {check})", check=seen[full]) if full in seen and c.status != "passed"
                  else c.output)
        seen.setdefault(full, c.number)
        boxes = "".join(_mistake_box(m, framework) for m in mistakes(c))
        rows.append(f'<tr class="{_e(c.status)}"><td>{_e(c.number)}</td><td>{_e(c.name)}<br>'
                    f'<span class="note">{_e(c.kind)}</span></td>'
                    f'<td class="score {_e(c.status)}">{c.score:g}/{c.max_score:g}</td>'
                    f'<td><pre>{_e(output)}</pre>{boxes}</td></tr>')
    for number, name, reason in step.skipped:
        rows.append(f'<tr><td>{_e(number)}</td><td>{_e(name)}</td><td class="score">{_e(_("skipped"))}</td>'
                    f'<td><pre>{_e(reason)}</pre></td></tr>')
    return "".join(rows)


def _mistake_box(mid, framework=None):
    """The named mistake: its id, then diagnosis, explanation and hint in the current language (the
    hint in the names of the step's library)."""
    m = misconceptions.CATALOGUE[mid]
    return (f'<div class="mistake"><b>{_e(mid)}</b>: {_e(translate(m.diagnosis))} {_e(translate(m.why))} '
            f'<i>{_e(_("Hint: {hint}", hint=translate(m.hint_for(framework))))}</i></div>')


def _maps(example):
    """The example's heatmaps (checks.expect.Example): expected, the student's, their difference."""
    what, expected, got, problem = example.what, example.expected, example.got, example.problem
    both = [a for a in (expected, got) if a is not None]
    top = min(1.0, max(float(np.max(a[np.isfinite(a)], initial=0.0)) for a in both)) or 1.0
    mask = example.mask
    maps = [heatmap_svg(expected, _("expected"), top, mask=mask)]
    caption = _("Darkest blue: {top} or more.", top=f"{top:.2g}")
    if mask is not None:
        caption += _(" Hatched cells are masked: no weight belongs there.")
    if got is not None:
        diff = got - expected
        worst = float(np.max(np.abs(diff[np.isfinite(diff)]), initial=0.0))
        # a floor, so that rounding noise (1e-16) stays white instead of filling the scale
        maps += [heatmap_svg(got, _("yours"), top, mask=mask),
                 heatmap_svg(diff, _("yours - expected"), max(MIN_DIFF, worst), diverging=True, mask=mask)]
        caption += _(" In the difference, red is more weight than expected, blue less; full colour at "
                     "+-{scale}. Largest difference: {worst}", scale=f"{max(MIN_DIFF, worst):.2g}", worst=f"{worst:.3g}")
        caption += _(" (grey cells: NaN or infinite).") if not np.isfinite(got).all() else _(".")
    else:
        caption += _(" Your weights could not be drawn:")
    return (f'<p class="note">{_e(_("Attention weights for one example: {what}.", what=what))} {_e(caption)}</p>'
            + (f'<pre class="printed">{_e(problem)}</pre>' if got is None else "") +
            f'<div class="maps">{"".join(maps)}</div>')


def render(report, name):
    """The page, as a string."""
    summary = "".join(
        f'<tr><td>{s.step.number}</td><td>{_e(s.step.shown_title)}</td><td>{_e(s.file or _("(missing)"))}</td>'
        f'<td class="score">{s.score:g}/{s.max_score:g}</td></tr>' for s in report.steps)
    sections = []
    for s in report.steps:
        heading = _e(_("Step {step}: {title}", step=s.step.number, title=s.step.shown_title))
        if s.file is None:          # a missing step: its one message, not a table of copies
            message = s.checks[0].output if s.checks else _("missing")
            sections.append(f'<section id="step-{s.step.stem}"><h2>{heading} '
                            f'<span class="score">{s.score:g}/{s.max_score:g}</span></h2>'
                            f'<pre class="failed">{_e(message)}</pre></section>')
            continue
        body = _maps(s.example) if s.example is not None else ""
        if i18n.render(s.printed).strip():
            body += (f'<p class="note">{_e(_("What your code printed:"))}</p>'
                     f'<pre class="printed">{_e(clipped(s.printed, MAX_PRINTED))}</pre>')
        sections.append(f'<section id="step-{s.step.stem}"><h2>{heading} '
                        f'<span class="score">{s.score:g}/{s.max_score:g}</span></h2>{body}'
                        f'<table>{_header_row(_("check"), _("what"), _("points"), _("message"))}'
                        f'{_check_rows(s)}</table></section>')
    title = _e(_("attention-kit feedback: {name}", name=name))
    total = _e(_("Total {score}/{max_score}", score=f"{report.score:g}", max_score=f"{report.max_score:g}"))
    return (f'<!DOCTYPE html><html lang="{HTML_LANG[i18n.get_language()]}"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<title>{title}</title><style>{STYLE}</style></head><body>'
            f'<h1>{title}</h1>'
            f'<p class="score" id="total">{total}</p>'
            f'<table>{_header_row(_("step"), _("title"), _("file"), _("score"))}{summary}</table>'
            f'{"".join(sections)}</body></html>\n')


HTML_LANG = {"en": "en", "zh": "zh-CN"}      # the page's lang attribute: fonts and screen readers follow it


def _header_row(*labels):
    return "<tr>" + "".join(f"<th>{_e(label)}</th>" for label in labels) + "</tr>"


def page_name(submission):
    """The page's file name: the submission's folder (or file stem), named as grade-all names
    its results folder (safe_text.file_name): a plain name as it is, any other (Chinese,
    punctuation, a formula) a readable part and a hash of the exact name, so two submissions'
    names never give one page."""
    return safe_text.file_name(_shown_name(submission) or "submission") + ".html"


def _shown_name(submission):
    """The submission's folder name, or its file's stem (the page's title shows it, escaped)."""
    path = Path(submission).resolve()
    return path.stem if path.is_file() else path.name


def write_html(report, submission, out_dir):
    """Write DIR/<submission name>.html for a report graded with `examples=True`; return its path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / page_name(submission)
    page = render(report, _shown_name(submission))
    path.write_text(page, encoding="utf-8", errors="backslashreplace")   # a lone surrogate: escaped, not a failure
    return path
