"""Which submissions look copied: pairs whose own code is unusually alike, per step and overall.

A reason to look, never a verdict: the class report lists the pairs with the matching lines side
by side and says so.

- **The student's own code only.** grade-all stores, beside each results.json, the code of each
  step file the grader took (`code.json`, `store_code`): a `.py` file whole; of a notebook only
  the cells the student writes (nbgrader solution cells, and cells they added), never the visible
  tests, demos, given cells or prose. Files are data: nothing here runs or imports them; they
  come from `batch.read_files` (submitted_files.find for folders, the checked zip reader).
- **Fingerprints by copydetect** (`copydetect.CodeFingerprint`, `compare_files`): pygments
  tokenizes the code and replaces every variable, attribute, function and class name by one
  letter and every string by another, drops comments and whitespace, and hashes every k-gram of
  what is left (k = `K`, window 1: every k-gram is kept, so the result does not depend on
  Python's per-process string hashing). Renamed variables, changed comments, docstrings and
  reordered functions change nothing but the k-grams that straddle a moved boundary.
- **Boilerplate**: the released stub notebook's code (signatures, docstrings, `raise
  NotImplementedError`) is copydetect's boilerplate: never counted.
- **Calibrated per step against the class**: a k-gram that more than `common_cap(n)` of the
  step's students share (the forced `return scores / np.sqrt(d_k)` of step 3, the module
  skeleton of step 7) is the class's common code, not evidence: it is dropped like the
  boilerplate. What is left is each student's distinctive code; a student with less than
  `MIN_OWN` characters of it (after filtering) at a step is not compared there ("too little own
  code"). A pair's similarity at a step is the larger of the two shares of distinctive code the
  other one also has (copydetect's similarity); it is flagged when it reaches the step's
  threshold: Tukey's far-out fence over the class's nearest-neighbour similarities (Q3 + 3 IQR),
  kept within [FLOOR, CEILING], and the matched distinctive code is at least `MIN_OVERLAP`
  characters. Overall: the same over all steps' code together.
- **Scale**: pairs are found through an inverted index of the distinctive k-grams (each shared
  by at most common_cap students, so the work grows with the pairs that share something, not with
  n^2); copydetect compares only those candidates. Steps are analysed in parallel processes.
"""
import copy
import hashlib
import io
import json
import math
import os
import statistics
from collections import Counter
from pathlib import Path

from . import contract

KIT_ROOT = Path(__file__).resolve().parent.parent
STUBS = KIT_ROOT / "assignments" / contract.ASSIGNMENT
CODE_FILE = "code.json"          # OUT/<results folder>/code.json
MAX_CODE_CHARS = 100_000         # a step's own code kept (a notebook's outputs are never kept)

K = 25                # copydetect's noise threshold: the shortest match counted, in filtered characters
MIN_OWN = 40          # distinctive k-grams (in at most common_cap students) needed to be compared at a step
MIN_OVERLAP = 40      # distinctive k-grams a flagged pair must share (at a step, or overall)
COMMON_MIN = 5        # a k-gram in more than max(COMMON_MIN, COMMON_SHARE * n) students is the class's own
COMMON_SHARE = 0.02
FLOOR = 0.6           # the threshold is never below this
MAD_FACTOR = 4        # ... and is the class's median nearest-neighbour similarity + this many robust SDs
SCREEN = 0.2          # candidates sharing less than this share of their distinctive k-grams are not scored
OVERALL_SHOWN = 0.6   # pairs this alike at a step get their matching lines computed (to be shown)
MIN_CLASS = 8         # fewer students than this compared at a step: no threshold can be told there
PARALLEL_CHARS = 400_000   # a class with more code than this is analysed in parallel processes
STEP_STEMS = [s.stem for s in contract.STEPS]


# ------------------------------------------------------------------ the student's own code
def _is_given_cell(cell):
    """A notebook cell the student does not write: nbgrader's tests, visible tests and demos
    (the rule of child/runner.py's _is_test_cell), and the locked cells the release gives
    (imports, experiments). Solution cells and cells without nbgrader metadata are the student's."""
    meta = (cell.get("metadata") or {}).get("nbgrader") or {}
    if not isinstance(meta, dict) or not meta:
        return False
    grade_id = str(meta.get("grade_id", ""))
    if meta.get("solution"):
        return grade_id.endswith("_tests") or grade_id.endswith("_demo")
    return True


def _cell_source(cell):
    src = cell.get("source", "")
    if isinstance(src, list):
        src = "".join(s for s in src if isinstance(s, str))
    lines = [ln for ln in str(src).split("\n") if not ln.lstrip().startswith(("%", "!", "?"))]
    return "\n".join(lines).strip("\n")


def notebook_code(data):
    """The student's own cells of a notebook (bytes or text), joined; "" when it is no notebook."""
    try:
        nb = json.loads(data)
        cells = nb.get("cells", []) if isinstance(nb, dict) else []
    except (ValueError, TypeError, RecursionError):
        return ""
    parts = [_cell_source(c) for c in cells if isinstance(c, dict) and c.get("cell_type") == "code"
             and not _is_given_cell(c)]
    return "\n\n".join(p for p in parts if p.strip())


def _text(data):
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)


def own_code(files):
    """{step stem: {"file": relative path, "code": text}} from a submission's {relative path: bytes}
    (batch.read_files), each step's file chosen as submitted_files.find chooses it (shallowest,
    then a notebook before a .py)."""
    best = {}
    for rel in files:
        name = rel.rsplit("/", 1)[-1]
        stem, suffix = os.path.splitext(name)
        if stem not in contract.STEP_BY_STEM or name not in contract.STEP_BY_STEM[stem].files:
            continue
        rank = (rel.count("/"), suffix != ".ipynb", rel)
        if stem not in best or rank < best[stem]:
            best[stem] = rank
    out = {}
    for stem, (_depth, _not_nb, rel) in sorted(best.items()):
        code = notebook_code(files[rel]) if rel.endswith(".ipynb") else _text(files[rel])
        out[stem] = {"file": rel, "code": code[:MAX_CODE_CHARS]}
    return out


def store_code(folder, files):
    """Write folder/code.json (folder: the student's results folder) with their own code per step,
    atomically; only when it changed (a rerun rewrites nothing)."""
    folder = Path(folder)
    data = json.dumps({"version": 1, "steps": own_code(files)}, indent=1, ensure_ascii=False) + "\n"
    path = folder / CODE_FILE
    try:
        if path.read_text(encoding="utf-8", errors="surrogateescape") == data:
            return path
    except OSError:
        pass
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{CODE_FILE}.tmp"
    tmp.write_text(data, encoding="utf-8", errors="surrogateescape")
    os.replace(tmp, path)
    return path


def load_code(folder):
    """{stem: code text} stored for one student ({} when none was stored)."""
    try:
        data = json.loads((Path(folder) / CODE_FILE).read_text(encoding="utf-8", errors="replace"))
        steps = data.get("steps", {})
        return {stem: str(v.get("code", ""))[:MAX_CODE_CHARS] for stem, v in steps.items()
                if stem in contract.STEP_BY_STEM and isinstance(v, dict)}
    except (OSError, ValueError, AttributeError):
        return {}


# ------------------------------------------------------------------ fingerprints (copydetect)
def blocks(code):
    """The code's top-level statements (a function or class with its decorators, an import ...) as
    [(start, end)] character ranges covering it all; the whole code as one block when it does
    not parse. The code is read (ast), never run."""
    import ast
    import warnings
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return [(0, len(code))]
    starts = sorted({min([n.lineno] + [d.lineno for d in getattr(n, "decorator_list", [])]) for n in tree.body})
    if not starts:
        return [(0, len(code))]
    line_at = [0]
    for line in code.split("\n"):
        line_at.append(line_at[-1] + len(line) + 1)
    cuts = [0] + [line_at[s - 1] for s in starts[1:]] + [len(code)]
    return [(a, min(b, len(code))) for a, b in zip(cuts, cuts[1:]) if a < b]


def _fingerprint(code, boilerplate=()):
    """copydetect's fingerprint of `code` with its top-level blocks in a canonical order (sorted by
    their filtered text), so that reordering functions changes nothing. The CodeFingerprint gets
    `block_map` [(canonical start, original start, length)] to map copydetect's slices back."""
    import numpy as np
    from copydetect import CodeFingerprint
    from copydetect.utils import filter_code
    parts = []
    for a, b in blocks(code):
        filtered, offsets = filter_code(code[a:b], "student.py", "python")
        parts.append((filtered, a, b, offsets))
    parts.sort(key=lambda p: (p[0], p[1]))
    raw, filtered, rows, block_map = [], [], [], []
    raw_len = filtered_len = 0
    for text, a, b, offsets in parts:
        block_map.append((raw_len, a, b - a))
        for i, off in (offsets if len(offsets) else [(0, 0)]):
            rows.append((filtered_len + int(i), int(off) + raw_len - filtered_len))
        raw.append(code[a:b])
        filtered.append(text)
        raw_len += b - a
        filtered_len += len(text)
    fp = CodeFingerprint("student.py", K, 1, boilerplate=np.asarray(sorted(boilerplate), dtype=np.int64),
                         filter=False, fp=io.StringIO("".join(filtered)))
    fp.raw_code = "".join(raw)
    fp.offsets = np.asarray(sorted(set(rows)), dtype=np.int64).reshape(-1, 2)
    fp.block_map = block_map
    return fp


def _original(fp, ranges):
    """Character ranges in the canonical code (copydetect's slices) -> ranges in the student's code."""
    out = []
    for s, e in ranges:
        for canon, orig, length in fp.block_map:
            lo, hi = max(s, canon), min(e, canon + length)
            if lo < hi:
                out.append([orig + lo - canon, orig + hi - canon])
    return sorted(out)


_boilerplate = {}


def boilerplate(stem):
    """The k-gram hashes of the released stub notebook's code for `stem` (every code cell)."""
    if stem not in _boilerplate:
        try:
            nb = json.loads((STUBS / f"{stem}.ipynb").read_text(encoding="utf-8"))
            code = "\n\n".join(_cell_source(c) for c in nb.get("cells", []) if c.get("cell_type") == "code")
        except (OSError, ValueError):
            code = ""
        _boilerplate[stem] = set(_fingerprint(code).hashes) if code.strip() else set()
    return _boilerplate[stem]


def common_cap(n):
    """More students than this sharing a k-gram at a step make it the class's common code: it is
    not used to find pairs, and it is not highlighted."""
    return max(COMMON_MIN, math.ceil(COMMON_SHARE * n))


def _without(fp, drop):
    """A copy of a CodeFingerprint without the hashes in `drop` (copydetect's boilerplate removal,
    done after the fact: the class's common k-grams are known only once every student is read)."""
    from copydetect.utils import get_token_coverage
    out = copy.copy(fp)
    out.hash_idx = {h: i for h, i in fp.hash_idx.items() if h not in drop}
    out.hashes = set(out.hash_idx)
    out.token_coverage = get_token_coverage(out.hash_idx, fp.k, len(fp.filtered_code))
    return out


def threshold(nearest):
    """The flagging threshold for one step (or overall) from the class's nearest-neighbour
    similarities: their median plus MAD_FACTOR robust standard deviations (1.4826 MAD), never
    below FLOOR. Above 1 nothing is flagged: where most of the class writes alike, alike is no
    sign of copying."""
    if not nearest:
        return 1.0
    med = statistics.median(nearest)
    mad = statistics.median(abs(v - med) for v in nearest)
    return max(FLOOR, med + MAD_FACTOR * 1.4826 * mad)


def _key(code):
    return hashlib.sha256(code.encode("utf-8", "surrogatepass")).digest()


def analyse_step(stem, codes):
    """One step: `codes` {student: code}. Returns a plain dict (it crosses a process boundary):
    n, eligible, common_cap, threshold, weight {student: distinctive weight}, and the pairs
    compared: (a, b, similarity, shared weight, shared distinctive k-grams, slices_a, slices_b)."""
    from copydetect import compare_files
    bp = boilerplate(stem)
    by_text, fps = {}, {}
    for student, code in codes.items():
        if not code.strip():
            continue
        key = _key(code)
        if key not in by_text:
            by_text[key] = _fingerprint(code, bp)
        fps[student] = by_text[key]
    n = len(fps)
    cap = common_cap(n)
    df = Counter(h for fp in fps.values() for h in fp.hashes)
    # a k-gram's weight: its rarity in the class (log n/df: 0 when everybody has it)
    weight = {h: math.log(n / c) for h, c in df.items()}
    mass = {s: sum(weight[h] for h in fp.hashes) for s, fp in fps.items()}
    rare = {s: {h for h in fp.hashes if df[h] <= cap} for s, fp in fps.items()}
    eligible = sorted(s for s in fps if len(rare[s]) >= MIN_OWN)
    index = {}
    for i, s in enumerate(eligible):
        for h in rare[s]:
            index.setdefault(h, []).append(i)
    shared = Counter()
    for members in index.values():
        if len(members) > 1:
            for x in range(len(members)):
                a = members[x]
                for b in members[x + 1:]:
                    shared[a, b] += 1
    pairs = []
    for (a, b), count in shared.items():
        sa, sb = eligible[a], eligible[b]
        if count < SCREEN * min(len(rare[sa]), len(rare[sb])):
            continue
        common_w = sum(weight[h] for h in fps[sa].hashes & fps[sb].hashes)
        sim = common_w / min(mass[sa], mass[sb]) if min(mass[sa], mass[sb]) > 0 else 0.0
        pairs.append([sa, sb, round(sim, 4), round(common_w, 3), count, None, None])
    nearest = dict.fromkeys(eligible, 0.0)
    for p in pairs:
        nearest[p[0]] = max(nearest[p[0]], p[2])
        nearest[p[1]] = max(nearest[p[1]], p[2])
    limit = threshold(list(nearest.values()))
    common = {h for h, c in df.items() if c > cap}
    for p in pairs:          # the matching lines (distinctive code only) of the pairs that may be shown
        if p[2] >= min(limit, OVERALL_SHOWN):
            _o, _sims, slices = compare_files(_without(fps[p[0]], common), _without(fps[p[1]], common))
            p[5] = _original(fps[p[0]], _ranges(slices[0]))
            p[6] = _original(fps[p[1]], _ranges(slices[1]))
    return {"stem": stem, "n": n, "eligible": len(eligible), "common_cap": cap, "common_kgrams": len(common),
            "threshold": limit, "mass": mass, "eligible_students": eligible, "pairs": pairs}


def _ranges(sl):
    """copydetect's 2 x N array of slice starts and ends -> [[start, end], ...]."""
    return [[int(a), int(b)] for a, b in zip(sl[0], sl[1])] if len(sl) == 2 else []


def _analyse(args):
    return analyse_step(*args)


def analyse(codes_by_student, jobs=None):
    """Similarity of a class. `codes_by_student` {student id: {stem: code}} (ids: the results
    folders). Returns {"steps": {stem: summary}, "overall_threshold", "pairs": [flagged pairs, most
    alike first], "parameters"}; a flagged pair is {"a", "b", "overall", "flagged_overall",
    "flagged_steps", "steps": {stem: {"similarity", "shared", "flagged", "slices_a", "slices_b"}}}."""
    per_step = {stem: {s: c[stem] for s, c in codes_by_student.items() if c.get(stem, "").strip()}
                for stem in STEP_STEMS}
    tasks = [(stem, codes) for stem, codes in per_step.items() if codes]
    size = sum(len(c) for _stem, codes in tasks for c in codes.values())
    jobs = jobs or min(len(tasks), os.cpu_count() or 1)
    if jobs > 1 and size > PARALLEL_CHARS:        # a large class: the steps in parallel processes
        import concurrent.futures
        import multiprocessing
        tasks.sort(key=lambda t: -sum(len(c) for c in t[1].values()))
        with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            results = list(pool.map(_analyse, tasks))
    else:
        results = [analyse_step(*t) for t in tasks]
    return combine({r["stem"]: r for r in results})


def combine(steps):
    """Per-step analyses -> the pairs flagged at a step or overall (all steps' code together:
    the shared weight over the smaller of the two students' weights)."""
    pair_steps = {}
    for stem in STEP_STEMS:
        r = steps.get(stem)
        if not r:
            continue
        for sa, sb, sim, common_w, count, sl_a, sl_b in r["pairs"]:
            pair_steps.setdefault((sa, sb), {})[stem] = {
                "similarity": sim, "shared": common_w, "shared_kgrams": count, "slices_a": sl_a, "slices_b": sl_b,
                "flagged": sim >= r["threshold"] and count >= MIN_OVERLAP and r["eligible"] >= MIN_CLASS}
    students = sorted({s for r in steps.values() for s in r["eligible_students"]})
    totals = {s: sum(r["mass"].get(s, 0.0) for r in steps.values()) for s in students}
    overall = {}
    for (sa, sb), found in pair_steps.items():
        both = min(sum(r["mass"][sa] for r in steps.values() if sa in r["mass"] and sb in r["mass"]),
                   sum(r["mass"][sb] for r in steps.values() if sa in r["mass"] and sb in r["mass"]))
        overall[sa, sb] = (sum(v["shared"] for v in found.values()) / both if both > 0 else 0.0,
                           sum(v["shared_kgrams"] for v in found.values()))
    nearest = dict.fromkeys(totals, 0.0)
    for (sa, sb), (sim, _count) in overall.items():
        nearest[sa] = max(nearest[sa], sim)
        nearest[sb] = max(nearest[sb], sim)
    overall_limit = threshold(list(nearest.values()))
    flagged = []
    for (sa, sb), found in pair_steps.items():
        sim, count = overall[sa, sb]
        flagged_steps = [stem for stem in STEP_STEMS if found.get(stem, {}).get("flagged")]
        flagged_overall = sim >= overall_limit and count >= MIN_OVERLAP
        if flagged_steps or flagged_overall:
            shown = {stem: v for stem, v in found.items() if v["slices_a"] is not None}
            flagged.append({"a": sa, "b": sb, "overall": round(sim, 4), "flagged_overall": flagged_overall,
                            "flagged_steps": flagged_steps, "steps": shown})
    flagged.sort(key=lambda p: (-p["overall"], p["a"], p["b"]))
    summary = {stem: {k: r[k] for k in ("n", "eligible", "common_cap", "common_kgrams")}
               | {"threshold": round(r["threshold"], 4),
                  "flagged_pairs": sum(1 for p in flagged if stem in p["flagged_steps"])}
               for stem, r in steps.items()}
    return {"steps": summary, "overall_threshold": round(overall_limit, 4), "pairs": flagged,
            "nearest_overall": {s: round(v, 4) for s, v in nearest.items()},
            "parameters": {"k": K, "window": 1, "min_own": MIN_OWN, "min_overlap": MIN_OVERLAP,
                           "common_min": COMMON_MIN, "common_share": COMMON_SHARE, "floor": FLOOR,
                           "mad_factor": MAD_FACTOR, "min_class": MIN_CLASS}}


# ------------------------------------------------------------------ the matching lines, for the page
def matched_lines(code, slices):
    """(line number, text, matched?) of every line of `code`; a line is matched when a copied
    slice (character offsets into the code) covers any of its non-blank characters."""
    marks = bytearray(len(code) + 1)
    for start, end in slices:
        for i in range(max(0, start), min(len(code), end)):
            marks[i] = 1
    out, pos = [], 0
    for number, line in enumerate(code.split("\n"), 1):
        hit = any(marks[pos + i] for i, ch in enumerate(line) if not ch.isspace())
        out.append((number, line, hit))
        pos += len(line) + 1
    return out


def excerpt(lines, context=1, limit=80):
    """The matched lines with `context` lines around them, at most `limit` lines; None marks a gap."""
    keep = set()
    for i, (_n, _t, hit) in enumerate(lines):
        if hit:
            keep.update(range(max(0, i - context), min(len(lines), i + context + 1)))
    out, last = [], -1
    for i in sorted(keep):
        if len(out) >= limit:
            break
        if last >= 0 and i != last + 1:
            out.append(None)
        out.append(lines[i])
        last = i
    return out
