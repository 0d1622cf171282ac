"""The mutation audit: `python -m autograder audit [--steps ...] [--jobs N] [--report FILE]`.

Proves the hidden suites: every mutant of the references (autograder/reference/mutants.py) is handed in as
a submission, the reference's own files for the other six steps beside it, and graded by the real
grader (warm workers, the same isolation and limits as `grade-all`). Each mutant is then:

  killed      it lost points at its own step (and only there)
  crashed     it raises on ordinary inputs where the reference does not, and lost points
  equivalent  the same outputs, inputs-after and gradients as the reference on every probe
              (autograder/reference/equivalence.py): not a mistake, excluded from the score
  survived    full marks, yet not equivalent: a hole in the suite

The mutation score of a step is (killed + crashed) / (mutants - equivalent). Two more findings
are listed apart because each is a bug of the kit: an equivalent mutant that lost points (correct
code marked wrong) and a mutant that lost points at another step than its own.

One run is one assignment's. `audit` alone audits every assignment, one run after another;
`--steps` names steps (e.g. `audit --steps 01_masks,02_cross_attention` for modern_attention), and
steps of two assignments are audited per assignment. A mutant's submission is its assignment's
references, for its steps that have a hidden suite, with the mutant at its own step; the
equivalence probes of the second assignment's steps are `probes()` in
autograder/reference/modern/<name>.py (see reference/equivalence.py).

`--record` writes each audited assignment's record (`record_path`: docs/mutation_audit.json for the
first, docs/mutation_audit_<assignment>.json for another) and its README table, between its own
markers (`readme_markers`); it records whole assignments only (all their steps, no --sample).
"""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from autograder import contract
from autograder.reference import mutants as mutation

KIT_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Outcome:
    mutant: mutation.Mutant
    verdict: str = ""              # killed, crashed, equivalent, survived
    equivalence: dict = field(default_factory=dict)
    score: float = 0.0             # at its own step
    max_score: float = 0.0
    failed: list = field(default_factory=list)        # numbers of the checks that lost points
    passed: list = field(default_factory=list)        # names of the checks that gave full points
    misconceptions: list = field(default_factory=list)
    other_steps: dict = field(default_factory=dict)   # {stem: score} for other steps below full marks

    def as_dict(self, with_diff):
        m = self.mutant
        d = {"id": m.id, "step": m.stem, "operator": m.operator, "function": m.function, "line": m.line,
             "change": m.change, "verdict": self.verdict, "equivalence": self.equivalence.get("why", ""),
             "score": self.score, "max_score": self.max_score, "failed_checks": self.failed,
             "misconceptions": self.misconceptions, "other_steps_lost": self.other_steps}
        if with_diff:
            d["diff"] = m.diff()
            d["passed_checks"] = self.passed
        return d


def assignment_of(steps=None):
    """The one assignment whose steps `steps` are (default: the registry's default); ValueError when
    they are of two."""
    if not steps:
        return contract.DEFAULT_ASSIGNMENT
    found = {contract.ASSIGNMENT_OF[s] for s in steps}
    if len(found) > 1:
        raise ValueError(f"steps of two assignments ({', '.join(sorted(found))}): one audit is one assignment's")
    return found.pop()


def audited_steps(assignment):
    """The stems of an assignment the audit covers: its steps that have a hidden suite."""
    from autograder.grading import run as grading
    return [s.stem for s in contract.ASSIGNMENTS[assignment] if grading.suite_file(s).exists()]


def plan(steps=None):
    """{assignment: [stems]}, one run each, in contract.ASSIGNMENTS' order: every assignment's audited
    steps when `steps` is empty, else the named steps grouped by their assignment."""
    if not steps:
        return {a: audited_steps(a) for a in contract.ASSIGNMENTS if audited_steps(a)}
    return {a: [s.stem for s in contract.ASSIGNMENTS[a] if s.stem in steps]
            for a in contract.ASSIGNMENTS if any(contract.ASSIGNMENT_OF[s] == a for s in steps)}


def select(steps=None, sample=None, seed=0, operators=None):
    """The mutants to audit: all of each step's, or `sample` of them drawn with `seed`; made by
    `operators`, by default its assignment's (contract.Assignment.operators: every one unless said)."""
    chosen = []
    for step in contract.ASSIGNMENTS[assignment_of(steps)]:
        if steps and step.stem not in steps:
            continue
        found = mutation.mutants(step.stem, operators or mutation.operators_of(step.stem))
        if sample is not None and sample < len(found):
            found = sorted(random.Random(f"{seed}:{step.stem}").sample(found, sample), key=lambda m: m.number)
        chosen += found
    return chosen


def equivalence(chosen):
    """{mutant id: verdict} from one plain subprocess (autograder/reference/equivalence.py): mutants are the
    audit's own programs, not student code, but a mutant may still loop or eat memory."""
    request = {}
    for m in chosen:
        request.setdefault(m.stem, {})[m.id] = m.source
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-m", "autograder.reference.equivalence"], input=json.dumps(request),
                          capture_output=True, text=True, cwd=KIT_ROOT, env=env, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"the equivalence check failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def graded_steps(mutant):
    """The stems a mutant's submission holds: its assignment's steps that have a hidden suite (every
    step of the first assignment; of another, those written so far)."""
    from autograder.grading import run as grading
    steps = contract.ASSIGNMENTS[contract.ASSIGNMENT_OF[mutant.stem]]
    return [s.stem for s in steps if s.stem == mutant.stem or grading.suite_file(s).exists()]


def submission(mutant):
    """The files of one mutant's submission: the reference for every step, the mutant at its own."""
    files = {}
    for stem in graded_steps(mutant):
        text = mutant.source if stem == mutant.stem else mutation.reference_source(stem)
        files[f"{stem}.py"] = text.encode("utf-8")
    return files


def grade_files(student, files, limits, steps):
    """batch.grade_files for the given `steps` only (in a warm batch worker): a folder of another
    assignment is graded for its steps that have a hidden suite, not all of them."""
    from pathlib import PurePosixPath
    from autograder import i18n
    from autograder.commands import batch
    from autograder.grading.run import Report
    from autograder.reports import gradescope_json
    with batch._worker_lock, batch.in_hand():
        batch.warm_up()
        scratch = tempfile.mkdtemp(prefix="attention-kit-audit-")
        try:
            folder = Path(scratch) / student
            folder.mkdir()
            for name, data in files.items():
                folder.joinpath(*PurePosixPath(name).parts).write_bytes(data)
            data = batch._grader.grade(str(folder), limits, steps).to_data()
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    with i18n.language("en"):
        return gradescope_json.gradescope(Report.from_data(json.loads(json.dumps(data))))


def grade(chosen, limits, jobs=None, progress=None):
    """{mutant id: Gradescope results} for every mutant, graded by warm batch workers."""
    from autograder.commands import batch
    pool = batch.LocalPool(jobs or os.cpu_count() or 1)
    results, interrupted = {}, False
    try:
        pending = {pool.submit(grade_files, m.id, submission(m), limits, graded_steps(m)): m for m in chosen}
        for future in pool.as_completed(list(pending)):
            m = pending.pop(future)
            results[m.id] = future.result()
            if progress:
                progress(len(results), len(chosen), m)
    except KeyboardInterrupt:
        interrupted = True             # Ctrl-C: the mutants in hand are stopped, not waited for
        raise
    finally:
        pool.close(now=interrupted)
    return results


def classify(mutant, results, equivalent):
    """The Outcome of one mutant from its results and its equivalence verdict."""
    out = Outcome(mutant, equivalence=equivalent)
    steps = results["extra_data"]["steps"]
    own = steps.get(mutant.stem, {})
    out.score, out.max_score = own.get("score", 0.0), own.get("max_score", 0.0)
    out.other_steps = {stem: s["score"] for stem, s in steps.items()
                       if stem != mutant.stem and s["score"] < s["max_score"]}
    for test in results["tests"]:
        if f"step:{mutant.stem}" not in test.get("tags", []):
            continue
        if test["score"] < test["max_score"]:
            out.failed.append(test.get("number", test["name"]))
        else:
            out.passed.append(test["name"])
        out.misconceptions += [t.split(":", 1)[1] for t in test.get("tags", []) if t.startswith("misconception:")]
    out.misconceptions = sorted(set(out.misconceptions))
    lost = out.score < out.max_score
    kind = equivalent.get("verdict")
    if kind == "equivalent":
        out.verdict = "equivalent"
    elif not lost:
        out.verdict = "survived"
    else:
        out.verdict = "crashed" if kind == "crashes" else "killed"
    return out


def run(steps=None, jobs=None, sample=None, seed=0, limits=None, progress=None):
    """Audit the steps of one assignment (default: the registry's default); returns (outcomes, timings)."""
    return run_mutants(select(steps, sample, seed), jobs, limits, progress)


def run_mutants(chosen, jobs=None, limits=None, progress=None):
    """Audit the given mutants (of one assignment): equivalence, grading, verdicts; (outcomes, timings)."""
    from autograder.sandbox.limits import Limits
    limits = limits or Limits()
    started = time.monotonic()
    verdicts = equivalence(chosen)
    timings = {"equivalence": time.monotonic() - started}
    results = grade(chosen, limits, jobs, progress)
    timings["grading"] = time.monotonic() - started - timings["equivalence"]
    outcomes = [classify(m, results[m.id], verdicts.get(m.id, {})) for m in chosen]
    timings["total"] = time.monotonic() - started
    return outcomes, timings


# ------------------------------------------------------------------ reading the outcome
def scores(outcomes):
    """{stem: {"mutants", "killed", "crashed", "equivalent", "survived", "score"}} and "all"."""
    table = {}
    for key in [o.mutant.stem for o in outcomes] + ["all"]:
        mine = [o for o in outcomes if key in ("all", o.mutant.stem)]
        c = Counter(o.verdict for o in mine)
        counted = len(mine) - c["equivalent"]
        table[key] = {"mutants": len(mine), "killed": c["killed"], "crashed": c["crashed"],
                      "equivalent": c["equivalent"], "survived": c["survived"],
                      "score": (c["killed"] + c["crashed"]) / counted if counted else 1.0}
    return table


def findings(outcomes):
    """The kit's own bugs the audit found: (title, [outcomes])."""
    return [("survived: wrong code at full marks", [o for o in outcomes if o.verdict == "survived"]),
            ("equivalent, yet lost points: correct code marked wrong",
             [o for o in outcomes if o.verdict == "equivalent" and o.score < o.max_score]),
            ("lost points at another step than its own", [o for o in outcomes if o.other_steps])]


def text(outcomes, timings):
    lines = [f"{'step':<18}{'mutants':>8}{'killed':>8}{'crashed':>8}{'equiv.':>8}{'survived':>9}{'score':>9}"]
    for key, s in scores(outcomes).items():
        lines.append(f"{key:<18}{s['mutants']:>8}{s['killed']:>8}{s['crashed']:>8}{s['equivalent']:>8}"
                     f"{s['survived']:>9}{s['score']:>8.1%}")
    for title, found in findings(outcomes):
        lines += ["", f"{title}: {len(found)}"]
        for o in found:
            lines.append(f"  {o.mutant.id} [{o.mutant.operator}] {o.mutant.function}: {o.mutant.change}"
                         f"  ({o.score:g}/{o.max_score:g}{'; ' + str(o.other_steps) if o.other_steps else ''})")
    lines.append("")
    lines.append(f"took {timings['total']:.0f} s (equivalence {timings['equivalence']:.0f} s, "
                 f"grading {timings['grading']:.0f} s)")
    return "\n".join(lines)


def write_report(outcomes, timings, path):
    """FILE: the scores, then every mutant; survivors and other findings with their diff and the
    checks they passed."""
    Path(path).write_text(json.dumps(report_data(outcomes, timings), indent=1, ensure_ascii=False) + "\n",
                          encoding="utf-8")


# ------------------------------------------------------------------ the record in docs/audit.md
PAGE = KIT_ROOT / "docs" / "audit.md"      # the documentation site's audit page (issue 29: once README.md)


def record_path(assignment):
    """docs/mutation_audit.json for the first assignment, docs/mutation_audit_<assignment>.json for
    another of the kit's (named by its tag in the registry, contract.Assignment.tag); an assignment
    from outside the kit (its `home`) keeps its record there: <home>/mutation_audit.json."""
    its = contract.REGISTRY[assignment]
    if its.home is not None:
        return Path(its.home) / "mutation_audit.json"
    return KIT_ROOT / "docs" / f"{its.tagged('mutation_audit')}.json"


def readme_markers(assignment):
    """The README comments around an assignment's table, by its tag: `audit:mutation` for the first (as
    it always was), `audit:mutation:<assignment>` for another."""
    name = contract.REGISTRY[assignment].tagged("audit:mutation", ":")
    return f"<!-- {name} begin -->", f"<!-- {name} end -->"


RECORD = record_path(contract.DEFAULT_ASSIGNMENT)
README_BEGIN, README_END = readme_markers(contract.DEFAULT_ASSIGNMENT)


def report_data(outcomes, timings):
    flagged = {id(o) for _t, found in findings(outcomes) for o in found}
    return {"scores": scores(outcomes), "timings_s": {k: round(v, 1) for k, v in timings.items()},
            "operators": list(mutation.operators_of(outcomes[0].mutant.stem) if outcomes else mutation.OPERATORS),
            "mutants": [o.as_dict(with_diff=id(o) in flagged) for o in outcomes]}


def render(data):
    """The README's table, from a report's figures."""
    lines = ["| step | mutants | killed | crashed | equivalent | survived | score |", "|---|---|---|---|---|---|---|"]
    for key, s in data["scores"].items():
        lines.append(f"| {key} | {s['mutants']} | {s['killed']} | {s['crashed']} | {s['equivalent']} | "
                     f"{s['survived']} | {s['score']:.1%} |")
    lost_elsewhere = sum(1 for m in data["mutants"] if m["other_steps_lost"])
    equivalent_lost = sum(1 for m in data["mutants"] if m["verdict"] == "equivalent" and m["score"] < m["max_score"])
    t = data["timings_s"]
    lines += ["", f"Lost points at another step than their own: {lost_elsewhere}. Equivalent yet marked wrong: "
                  f"{equivalent_lost}. Took {t['total']:.0f} s ({t['equivalence']:.0f} s equivalence, "
                  f"{t['grading']:.0f} s grading) on {data['machine']}, {data['date']}, commit {data['commit']}."]
    return "\n".join(lines)


def readme_block(data, assignment=contract.DEFAULT_ASSIGNMENT):
    begin, end = readme_markers(assignment)
    return f"{begin}\n{render(data)}\n{end}"


def readme_span(readme, assignment):
    """(start, stop) of an assignment's block in the README's text, markers included."""
    begin, end = readme_markers(assignment)
    return readme.index(begin), readme.index(end) + len(end)


def record(outcomes, timings, jobs, assignment=contract.DEFAULT_ASSIGNMENT):
    """The assignment's record (record_path) and, for the kit's own, its table in docs/audit.md
    (between its markers), from this run."""
    import datetime
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=KIT_ROOT, capture_output=True,
                            text=True).stdout.strip() or "unknown"
    data = report_data(outcomes, timings)
    data.update(assignment=assignment, date=datetime.date.today().isoformat(), commit=commit,
                machine=f"{os.cpu_count()} cores, {jobs or os.cpu_count()} workers")
    path = record_path(assignment)
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    if contract.REGISTRY[assignment].home is not None:
        return path                 # not the kit's: its record lives with it, the kit's page is not its
    readme = PAGE.read_text(encoding="utf-8")
    a, b = readme_span(readme, assignment)
    PAGE.write_text(readme[:a] + readme_block(data, assignment) + readme[b:], encoding="utf-8")
    return path
