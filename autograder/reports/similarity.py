"""Which submissions look copied: pairs whose own code is unusually alike, per step and overall.

A reason to look, never a verdict: the class report lists the pairs with the matching lines side
by side and says so.

- **The code that was graded.** grade-all stores, beside each results.json, the code of each
  step file the grader took (`code.json`, `store_code`), through the grader's own intake
  (submitted_files.choose and graded_code): the same file per step, and of a notebook the cells the
  grader runs (every code cell but nbgrader's tests, visible tests and demos), whatever the cells'
  metadata claim. Files are data: nothing here runs or imports them.
- **Fingerprints by copydetect** (`copydetect.utils.filter_code`, `CodeFingerprint`, `compare_files`):
  pygments tokenizes the code and replaces every variable, attribute, function and class name by
  one letter and every string by another, drops comments and whitespace, and hashes every k-gram
  of what is left (k = `K`, window 1: every k-gram is kept, so which k-grams match does not depend
  on the hash values; worker processes share one string-hash seed, as copydetect uses hash()).
  The top-level blocks (functions, classes, imports) are fingerprinted in a canonical order (sorted
  by their filtered text), so renamed variables, changed comments and docstrings, and reordered
  functions change nothing.
- **Boilerplate**: the released stub's code, of the step's own assignment (every cell: imports,
  signatures, docstrings, `raise NotImplementedError`) is copydetect's boilerplate: never counted.
- **Calibrated per step against the class**: a k-gram in more than common_cap(n) of the step's n
  students is the class's common code and weighs nothing (MOSS's `-m`), so the class's forced code
  (the `return scores / np.sqrt(d_k)` of step 3, the module skeleton of step 7) is discounted;
  any other weighs its rarity, log((n + 1) / df), never 0. A pair's similarity is
  the weight of the k-grams both have over the smaller of their two weights. It is flagged at a
  step when it reaches the step's threshold: the median of the class's nearest-neighbour
  similarities plus MAD_FACTOR robust standard deviations (1.4826 MAD), never below FLOOR, and the
  pair shares MIN_OVERLAP distinctive k-grams (in at most common_cap(n) students: MOSS's `-m`).
  No threshold where it would reach 1 (most of the class writes alike there) or fewer than
  MIN_CLASS students have MIN_OWN distinctive k-grams. Overall: the same over all the steps both
  had distinctive code at, with MIN_OVERALL shared distinctive k-grams.
- **Ranked, in any class** (issue 26): the TOP_PAIRS closest pairs are always listed with their
  percentages, most alike first, as MOSS and copydetect list them, and every flagged pair besides;
  the threshold only marks which pairs stand out. A class of near-copies has no threshold (its
  median nearest neighbour is near 100%): `class_writes_alike` says so beside the list.
- **Scale**: candidate pairs come from an inverted index of the distinctive k-grams (each shared by
  at most common_cap students; pairs counted with numpy by group size), so the work grows with
  the pairs that share something, not with n^2; a large class is fingerprinted in parallel
  processes (pygments' tokenizing is most of the time).
"""
import copy
import hashlib
import io
import json
import math
import os
import statistics
from pathlib import Path

import numpy as np

from autograder import atomic, contract, submitted_files

CODE_FILE = "code.json"          # OUT/<results folder>/code.json
MAX_CODE_CHARS = 100_000         # a step's own code kept (a notebook's outputs are never kept)

K = 25                # copydetect's noise threshold: the shortest match counted, in filtered characters
MIN_OWN = 40          # distinctive k-grams (in at most common_cap students) needed to be compared at a step
MIN_OVERLAP = 40      # distinctive k-grams a pair flagged at a step must share there
MIN_OVERALL = 120     # ... and a pair flagged overall, over all steps
COMMON_MIN = 5        # a k-gram in more than max(COMMON_MIN, COMMON_SHARE * n) students is the class's own
COMMON_SHARE = 0.05
FLOOR = 0.6           # the threshold is never below this
MAD_FACTOR = 5        # ... and is the class's median nearest-neighbour similarity + this many robust SDs
SCREEN = 0.2          # candidates sharing less than this share of their distinctive k-grams are not scored
MIN_CLASS = 8         # fewer students than this compared at a step: no threshold can be told there
PARALLEL_CHARS = 400_000   # a class with more code than this is fingerprinted in parallel processes
CHUNK = 100           # codes fingerprinted per task
TOP_PAIRS = 20        # the closest pairs listed in any class, flagged or not (as MOSS and copydetect rank them)


def _stems_of(codes_by_student):
    """The step stems the codes hold, in the registry's order (one assignment's, for a class view)."""
    held = {stem for steps in codes_by_student.values() for stem in steps}
    return [s.stem for s in contract.ALL_STEPS if s.stem in held]


# ------------------------------------------------------------------ the student's own code
# The one intake (submitted_files): the file of each step is the one the grader takes, and of a
# notebook the code is that of the cells the grader runs. Cells the release gives are in the stub,
# which is discounted as boilerplate; a cell a student marks "given" is still their code.
notebook_code = submitted_files.notebook_code


def own_code(files):
    """{step stem: {"file": relative path, "code": text}} from a submission's {relative path: bytes}
    (batch.read_files): each step's file the one submitted_files.choose takes (the grader's), its
    code what the grader runs (submitted_files.graded_code)."""
    found = submitted_files.choose(files)
    return {stem: {"file": f.relative, "code": submitted_files.graded_code(f)[:MAX_CODE_CHARS]}
            for stem, f in sorted(found.files.items())}


def store_code(folder, files):
    """Write folder/code.json (folder: the student's results folder) with their own code per step,
    atomically; only when it changed (a rerun rewrites nothing)."""
    folder = Path(folder)
    data = json.dumps({"version": 1, "steps": own_code(files)}, indent=1, ensure_ascii=False) + "\n"
    path = folder / CODE_FILE
    encoded = data.encode("utf-8", "surrogateescape")
    if not atomic.same_content(path, encoded):
        atomic.write_bytes(path, encoded)
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


def _fingerprint(code):
    """copydetect's fingerprint (CodeFingerprint, k = K, window 1) of `code` with its top-level
    blocks in a canonical order (sorted by their filtered text), so that reordering functions
    changes nothing. copydetect's filter_code tokenizes once; `origin[i]` is the position in the
    student's code of the canonical filtered character i (to show the matching lines)."""
    import numpy as np
    from copydetect import CodeFingerprint
    from copydetect.utils import filter_code
    filtered, offsets = filter_code(code, "student.py", "python")
    idx = np.arange(len(filtered))
    if len(offsets):          # copydetect's own map from a filtered position to the raw code
        raw_of = idx + offsets[:, 1][np.clip(np.searchsorted(offsets[:, 0], idx), 0, len(offsets) - 1)]
    else:
        raw_of = idx
    parts = []
    for a, b in blocks(code):
        lo, hi = np.searchsorted(raw_of, a), np.searchsorted(raw_of, b)
        if hi > lo:
            parts.append((filtered[lo:hi], int(lo), int(hi)))
    parts.sort()
    fp = CodeFingerprint("student.py", K, 1, filter=False, fp=io.StringIO("".join(p[0] for p in parts)))
    fp.raw_code = code
    fp.origin = np.concatenate([raw_of[lo:hi] for _t, lo, hi in parts]) if parts else np.zeros(0, np.int64)
    return fp


def _original(fp, ranges):
    """Ranges in the canonical filtered code (copydetect's slices) -> ranges in the student's code."""
    out = []
    for s, e in ranges:
        s, e = max(0, s), min(len(fp.origin), e)
        if s < e:
            chunk = np.sort(fp.origin[s:e])
            breaks = np.flatnonzero(np.diff(chunk) > 40)       # a jump: another block of the code
            for lo, hi in zip(np.r_[0, breaks + 1], np.r_[breaks, len(chunk) - 1]):
                out.append([int(chunk[lo]), int(chunk[hi]) + 1])
    return sorted(out)


def _hash_array(code, stem):
    """The sorted k-gram hashes of `code` (copydetect's), without the stub's (boilerplate)."""
    fp = _fingerprint(code)
    hashes = np.fromiter(fp.hashes, dtype=np.int64, count=len(fp.hashes))
    return np.setdiff1d(hashes, boilerplate(stem), assume_unique=True)


_boilerplate = {}


def boilerplate(stem):
    """The k-gram hashes (a sorted array) of the released stub's code for `stem` (every cell of its
    notebook), from its own assignment's stubs (contract.Assignment.stub_folder)."""
    if stem not in _boilerplate:
        owner = contract.assignment_of_step(stem)
        code = ""
        if owner is not None:
            for name in contract.STEP_BY_STEM[stem].files:     # the released stub: its notebook, or its .py
                try:
                    data = (owner.stub_folder / name).read_bytes()
                except OSError:
                    continue
                code = submitted_files.notebook_code(data, every_cell=True) if name.endswith(".ipynb") \
                    else data.decode("utf-8", "replace")
                break
        found = _fingerprint(code).hashes if code.strip() else set()
        _boilerplate[stem] = np.unique(np.fromiter(found, dtype=np.int64, count=len(found)))
    return _boilerplate[stem]


def _hash_task(args):
    """Worker: the hashes of some codes of one step: [(key, hashes)]."""
    stem, items = args
    return stem, [(key, _hash_array(code, stem)) for key, code in items]


def _slices_task(args):
    """Worker: the matching distinctive lines of some pairs of one step: [(ranges a, ranges b)]."""
    stem, common, pairs = args
    common = set(common.tolist())
    out = []
    for code_a, code_b in pairs:
        from copydetect import compare_files
        fa, fb = _fingerprint(code_a), _fingerprint(code_b)
        drop = common | set(boilerplate(stem).tolist())
        _o, _sims, slices = compare_files(_without(fa, drop), _without(fb, drop))
        out.append((_original(fa, _ranges(slices[0])), _original(fb, _ranges(slices[1]))))
    return out


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


def _ranges(sl):
    """copydetect's 2 x N array of slice starts and ends -> [[start, end], ...]."""
    return [[int(a), int(b)] for a, b in zip(sl[0], sl[1])] if len(sl) == 2 else []


def threshold(nearest):
    """The flagging threshold for one step (or overall) from the class's nearest-neighbour
    similarities: their median plus MAD_FACTOR robust standard deviations (1.4826 MAD), never
    below FLOOR; None (nothing stands out) when that reaches 1 or when the median itself is at
    FLOOR or above (most students have a near-copy): where most of the class writes alike, no
    threshold tells one pair from the others, and the ranking is the list to read."""
    if not nearest:
        return None
    med = statistics.median(nearest)
    mad = statistics.median(abs(v - med) for v in nearest)
    limit = max(FLOOR, med + MAD_FACTOR * 1.4826 * mad)
    return limit if limit < 1 and med < FLOOR else None


def _spread(values):
    """(median, MAD) of the nearest-neighbour similarities, for the record."""
    if not values:
        return None, None
    med = statistics.median(values)
    return round(med, 4), round(statistics.median(abs(v - med) for v in values), 4)


def _pairs_sharing(groups, n_students):
    """Pairs of students and how many of the given k-grams they share: `groups` is a list of
    arrays, the students (indices) who have each k-gram. Vectorised by group size."""
    by_size = {}
    for g in groups:
        if len(g) > 1:
            by_size.setdefault(len(g), []).append(g)
    codes = []
    for size, gs in by_size.items():
        m = np.sort(np.stack(gs), axis=1)
        a, b = np.triu_indices(size, 1)
        codes.append((m[:, a].astype(np.int64) * n_students + m[:, b]).ravel())
    if not codes:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.unique(np.concatenate(codes), return_counts=True)


def score_step(stem, student_keys, hashes):
    """One step's scores: `student_keys` {student: code key}, `hashes` {code key: sorted array}.
    Each k-gram weighs its rarity in the class, log((n + 1) / df), 0 when more than common_cap(n)
    students have it; a pair's
    similarity is the weight of the k-grams both have over the smaller of their two weights."""
    students = sorted(student_keys)
    n = len(students)
    cap = common_cap(n)
    arrays = [hashes[student_keys[s]] for s in students]
    if not n:
        return {"stem": stem, "n": 0, "eligible": 0, "common_cap": cap, "common_kgrams": 0, "threshold": None,
                "mass": {}, "eligible_students": [], "pairs": [], "common": np.zeros(0, np.int64)}
    allh = np.concatenate(arrays) if arrays else np.zeros(0, np.int64)
    owner = np.repeat(np.arange(n), [len(a) for a in arrays])
    uniq, inverse, df = np.unique(allh, return_inverse=True, return_counts=True)
    # MOSS's -m: code in more than `cap` students is the class's own and weighs nothing; any other
    # k-gram weighs its rarity, log((n + 1) / df), never 0 (in a small class where all copied, the
    # copies are still alike)
    weight = np.where(df <= cap, np.log((n + 1) / df), 0.0)
    ids = np.split(inverse, np.cumsum([len(a) for a in arrays])[:-1])
    mass = np.array([weight[i].sum() for i in ids])
    rare_count = np.bincount(owner[df[inverse] <= cap], minlength=n)
    eligible = rare_count >= MIN_OWN
    # the students who have each distinctive k-gram (df between 2 and the cap), eligible ones only
    keep = (df[inverse] <= cap) & (df[inverse] > 1) & eligible[owner]
    order = np.argsort(inverse[keep], kind="stable")
    inv_k, own_k = inverse[keep][order], owner[keep][order]
    cuts = np.flatnonzero(np.diff(inv_k)) + 1
    pair_codes, counts = _pairs_sharing(np.split(own_k, cuts) if len(own_k) else [], n)
    pairs = []
    for code, count in zip(pair_codes.tolist(), counts.tolist()):
        a, b = divmod(code, n)
        if count < SCREEN * min(rare_count[a], rare_count[b]):
            continue
        both = np.intersect1d(ids[a], ids[b], assume_unique=True)
        shared = float(weight[both].sum())
        low = min(mass[a], mass[b])
        sim = float(min(1.0, shared / low)) if low > 0 else 0.0
        pairs.append([students[a], students[b], round(sim, 4), round(shared, 3), int(count)])
    names = [students[i] for i in np.flatnonzero(eligible)]
    nearest = dict.fromkeys(names, 0.0)
    for p in pairs:
        nearest[p[0]] = max(nearest[p[0]], p[2])
        nearest[p[1]] = max(nearest[p[1]], p[2])
    limit = threshold(list(nearest.values())) if len(names) >= MIN_CLASS else None
    spread = _spread(list(nearest.values()))
    return {"stem": stem, "n": n, "eligible": len(names), "common_cap": cap, "common_kgrams": int((df > cap).sum()),
            "threshold": limit, "median": spread[0], "mad": spread[1], "mass": {s: float(m) for s, m in zip(students, mass)}, "eligible_students": names,
            "pairs": pairs, "common": uniq[df > cap]}


class _Runner:
    """Runs worker tasks here, or in spawned processes that share one string-hash seed (copydetect
    hashes k-grams with Python's hash(), which differs between processes unless the seed is fixed)."""

    def __init__(self, jobs):
        self.pool = None
        if jobs > 1:
            import concurrent.futures
            import multiprocessing
            self.before = os.environ.get("PYTHONHASHSEED")
            os.environ["PYTHONHASHSEED"] = "1"
            self.pool = concurrent.futures.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"))

    def map(self, fn, tasks):
        return list(self.pool.map(fn, tasks)) if self.pool else [fn(t) for t in tasks]

    def close(self):
        if self.pool:
            self.pool.shutdown()
            if self.before is None:
                os.environ.pop("PYTHONHASHSEED", None)
            else:
                os.environ["PYTHONHASHSEED"] = self.before


def analyse(codes_by_student, jobs=None):
    """Similarity of a class. `codes_by_student` {student id: {stem: code}} (ids: the results
    folders). Returns {"steps": {stem: summary}, "overall_threshold", "pairs": [flagged pairs, most
    alike first], "parameters"}; a flagged pair is {"a", "b", "overall", "flagged_overall",
    "flagged_steps", "steps": {stem: {"similarity", "shared", "shared_kgrams", "flagged", "slices_a",
    "slices_b"}}} (slices: character ranges of the matching distinctive code in each one's code)."""
    keys, texts = {}, {}
    stems = _stems_of(codes_by_student)
    for stem in stems:
        keys[stem] = {}
        for student, steps in codes_by_student.items():
            code = steps.get(stem, "")
            if code.strip():
                k = hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()
                keys[stem][student] = k
                texts.setdefault(stem, {})[k] = code
    size = sum(len(c) for per in texts.values() for c in per.values())
    jobs = jobs or os.cpu_count() or 1
    runner = _Runner(jobs if size > PARALLEL_CHARS else 1)
    try:
        tasks = []
        for stem, per in texts.items():
            items = list(per.items())
            for i in range(0, len(items), CHUNK):
                tasks.append((stem, items[i:i + CHUNK]))
        hashes = {stem: {} for stem in stems}
        for stem, found in runner.map(_hash_task, tasks):
            hashes[stem].update(found)
        steps = {stem: score_step(stem, keys[stem], hashes[stem]) for stem in stems if keys[stem]}
        result = combine(steps, stems)
        # the matching lines of the pairs shown
        wanted = [(p, stem) for p in result["pairs"] for stem in p["steps"]]
        tasks = [(stem, steps[stem]["common"], [(texts[stem][keys[stem][p["a"]]], texts[stem][keys[stem][p["b"]]])])
                 for p, stem in wanted]
        for (p, stem), [(sl_a, sl_b)] in zip(wanted, runner.map(_slices_task, tasks)):
            p["steps"][stem]["slices_a"], p["steps"][stem]["slices_b"] = sl_a, sl_b
    finally:
        runner.close()
    return result


def combine(steps, stems=None):
    """Per-step scores -> the closest pairs, ranked (all steps' code together: the weight both
    share over the smaller of the two students' weights, at the steps where both had distinctive
    code), each marked where it stands out: flagged at a step (at or above the step's threshold,
    MIN_OVERLAP shared distinctive k-grams) or overall (the overall threshold, MIN_OVERALL). Every
    flagged pair is listed, and the TOP_PAIRS closest ones in any class: where most of the class
    writes alike there is no threshold, and the ranking is what the instructor reads."""
    stems = stems or list(steps)
    pair_steps = {}
    for stem in stems:
        r = steps.get(stem)
        if not r:
            continue
        for sa, sb, sim, shared, count in r["pairs"]:
            pair_steps.setdefault((sa, sb), {})[stem] = {
                "similarity": sim, "shared": shared, "shared_kgrams": count,
                "flagged": r["threshold"] is not None and sim >= r["threshold"] and count >= MIN_OVERLAP}
    eligible = {stem: set(r["eligible_students"]) for stem, r in steps.items()}
    overall = {}
    for (sa, sb), found in pair_steps.items():
        at = [stem for stem in steps if sa in eligible[stem] and sb in eligible[stem]]
        low = min(sum(steps[stem]["mass"][sa] for stem in at), sum(steps[stem]["mass"][sb] for stem in at))
        shared = sum(found[stem]["shared"] for stem in at if stem in found)
        overall[sa, sb] = (min(1.0, shared / low) if low > 0 else 0.0,
                           sum(v["shared_kgrams"] for v in found.values()), len(at))
    students = sorted({s for names in eligible.values() for s in names})
    nearest = dict.fromkeys(students, 0.0)
    for (sa, sb), (sim, _count, _steps) in overall.items():
        nearest[sa] = max(nearest[sa], sim)
        nearest[sb] = max(nearest[sb], sim)
    overall_limit = threshold(list(nearest.values())) if len(students) >= MIN_CLASS else None
    ranked = []
    for (sa, sb), found in pair_steps.items():
        sim, count, compared = overall[sa, sb]
        flagged_steps = [stem for stem in stems if found.get(stem, {}).get("flagged")]
        flagged_overall = overall_limit is not None and sim >= overall_limit and count >= MIN_OVERALL
        shown = flagged_steps or sorted(found, key=lambda st: (-found[st]["similarity"], st))[:2]
        ranked.append({"a": sa, "b": sb, "overall": round(sim, 4), "flagged_overall": flagged_overall,
                       "flagged_steps": flagged_steps, "shared_kgrams": count,
                       "steps": {stem: dict(found[stem], slices_a=[], slices_b=[]) for stem in shown}})
    ranked.sort(key=lambda p: (-p["overall"], -p["shared_kgrams"], p["a"], p["b"]))
    flagged = [p for i, p in enumerate(ranked) if i < TOP_PAIRS or p["flagged_steps"] or p["flagged_overall"]]
    for i, p in enumerate(flagged, 1):
        p["rank"] = i
    summary = {stem: {k: r[k] for k in ("n", "eligible", "common_cap", "common_kgrams", "median", "mad")}
               | {"threshold": None if r["threshold"] is None else round(r["threshold"], 4),
                  "flagged_pairs": sum(1 for p in flagged if stem in p["flagged_steps"]),
                  # most of the class writes alike here: a note beside the ranking, never a reason to hide it
                  "writes_alike": r["threshold"] is None and r["eligible"] >= MIN_CLASS}
               for stem, r in steps.items()}
    return {"steps": summary, "overall_threshold": None if overall_limit is None else round(overall_limit, 4),
            "pairs": flagged, "class_writes_alike": overall_limit is None and len(students) >= MIN_CLASS,
            "median_nearest": _spread(list(nearest.values()))[0], "nearest_overall": {s: round(v, 4) for s, v in nearest.items()},
            "parameters": {"k": K, "window": 1, "min_own": MIN_OWN, "min_overlap": MIN_OVERLAP, "min_overall": MIN_OVERALL,
                           "common_min": COMMON_MIN, "common_share": COMMON_SHARE, "floor": FLOOR,
                           "mad_factor": MAD_FACTOR, "min_class": MIN_CLASS,
                           "top_pairs": TOP_PAIRS}}


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
