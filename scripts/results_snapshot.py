"""Grade a fixed corpus and write every result, to show a change kept the grades exactly.

    python scripts/results_snapshot.py write OUT.json    # with the kit found from the current folder
    python scripts/results_snapshot.py compare A.json B.json

The corpus: the samples, the master notebooks, the released stubs, the catalogue's correct
templates and every catalogued mistake (tests/harness/catalogue.py), every mutant of the
mutation audit (autograder/reference/mutants.py) and the hostile corpus (tests/hostile/). Each is graded by
the batch grader's workers, English messages; what is kept per check is its number, score, status,
tags and message, with scratch paths blanked.

To compare with an older revision, check it out beside this one and run the script from there
(it imports the kit from the current folder first):

    git worktree add /tmp/before <rev> && (cd /tmp/before && python /path/to/scripts/results_snapshot.py write /tmp/a.json)
    python scripts/results_snapshot.py write /tmp/b.json && python scripts/results_snapshot.py compare /tmp/a.json /tmp/b.json
"""
import json
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, os.getcwd())          # the kit of the folder this runs from (a worktree of another revision)


def corpus(root):
    """{label: {relative path: bytes}}."""
    from autograder import contract
    from autograder.reference import mutants
    items = {}
    step_files = {f"{s.stem}.py" for s in contract.STEPS} | {f"{s.stem}.ipynb" for s in contract.STEPS}
    for folder in ("samples/lesson", "samples/unusual_style", "source/self_attention", "assignments/self_attention"):
        items[folder] = {p.name: p.read_bytes() for p in sorted((root / folder).iterdir()) if p.name in step_files}
    sys.path.insert(0, str(root / "tests"))
    from harness import catalogue
    for stem in catalogue.TEMPLATES:
        items[f"template/{stem}"] = {f"{stem}.py": catalogue.source(stem).encode()}
    for case in catalogue.CASES:
        items[f"catalogue/{catalogue.case_id(case)}"] = {f"{case[1]}.py": catalogue.source(case[1], case[2]).encode()}
    for step in contract.STEPS:
        for m in mutants.mutants(step.stem):
            items[f"mutant/{m.id}"] = {f"{m.stem}.py": m.source.encode()}
    for case in sorted((root / "tests" / "hostile").glob("*.py")):
        name, stem = case.name[:-3].rsplit(".", 1)
        items[f"hostile/{name}"] = {f"{stem}.py": case.read_bytes()}
    return items


def _clean(text):
    return re.sub(r"/tmp/[^\s'\"]+", "/tmp/…", text)


def snapshot(root, jobs=None):
    from autograder.commands import batch
    from autograder.sandbox.limits import Limits
    items = corpus(root)
    pool = batch.LocalPool(jobs or os.cpu_count() or 1)
    out = {}
    try:
        pending = {pool.submit(batch.grade_files, f"s{i}", files, Limits(), "en"): label
                   for i, (label, files) in enumerate(items.items())}
        for n, future in enumerate(pool.as_completed(list(pending)), start=1):
            label = pending.pop(future)
            r = future.result()
            out[label] = {"score": r["score"],
                          "tests": [[t.get("number"), t["score"], t.get("status"), sorted(t.get("tags", [])),
                                     _clean(t.get("output", ""))] for t in r["tests"]]}
            if n % 50 == 0:
                print(f"{n}/{len(items)}", file=sys.stderr)
    finally:
        pool.close()
    return dict(sorted(out.items()))


def compare(a, b):
    """Lines describing every difference (empty: the same grades and messages)."""
    lines = []
    for label in sorted(set(a) | set(b)):
        x, y = a.get(label), b.get(label)
        if x is None or y is None:
            lines.append(f"{label}: only in {'B' if x is None else 'A'}")
        elif x != y:
            lines.append(f"{label}: score {x['score']} -> {y['score']}")
            for tx, ty in zip(x["tests"], y["tests"]):
                if tx != ty:
                    lines.append(f"    {tx[0]}: {tx[1:4]} {tx[4][:160]!r}\n -> {ty[0]}: {ty[1:4]} {ty[4][:160]!r}")
    return lines


def main(argv):
    if len(argv) == 2 and argv[0] == "write":
        data = snapshot(Path.cwd())
        Path(argv[1]).write_text(json.dumps(data, indent=0, ensure_ascii=False), encoding="utf-8")
        print(f"{len(data)} submissions graded into {argv[1]}")
        return 0
    if len(argv) == 3 and argv[0] == "compare":
        a, b = (json.loads(Path(p).read_text(encoding="utf-8")) for p in argv[1:])
        lines = compare(a, b)
        print("\n".join(lines) if lines else f"the same: {len(a)} submissions, every check and message")
        return 1 if lines else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
