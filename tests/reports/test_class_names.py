"""Issue 18: a class batch loses nobody, and no report can be turned against the person who reads it.

A generated class whose names collide under the old sanitiser (Chinese names of one length, names
that differ in case only), a student folder called `submitted` beside the others, upper-case
archive suffixes, names that look like spreadsheet formulas, a name with an escape sequence and
one with bytes that are not UTF-8, and a student whose code raises an exception whose type name
and message hold escape sequences. Each gradable student hands in a different set of correct
step files, so each one's row and results file can only be theirs.

`python tests/reports/test_class_names.py ROOT N` builds such a class of N students (names in several
scripts) for a timing run of `grade-all`.
"""
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import ROOMY_TIMEOUT, ROOT  # noqa: E402

from autograder import safe_text  # noqa: E402
from autograder.commands import batch
from autograder.reports import github, html as html_report

NUMPY = ["01_projection", "02_scores", "03_scaling", "04_softmax", "05_weighted_sum"]
LIMITS = [*ROOMY_TIMEOUT, "--memory-gib", "1"]   # far above honest calls on a busy machine
ESC_ANYWHERE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")

# names the old sanitiser sent to one file: "张伟", "李娜", "王芳" all became "__"
NAMES = ["张伟", "李娜", "王芳", "欧阳娜娜", "Иван", "иван", "Мария", "محمد", "فاطمة", "😀", "😀😀", "🐍python",
         "Alice", "alice", "ALICE", "=1+1", "+SUM(A1)", "-2", "@cmd", "=HYPERLINK(\"http:x\";\"click\")",
         "'quoted", "o'brien", "a b c", "dots..", "con", "x" * 150, "\x1b[2J\x1b]0;owned\x07fake 70 of 70",
         "tab\tand\nnewline", os.fsdecode(b"bytes\xff\xfe"), "submitted", "plain_student"]
ZIPPED = {"ZIPPER": ".ZIP", "mixed": ".Zip", "Ελένη": ".zip"}     # archives, suffix in any case
HOSTILE_STEP = r'''
import sys
def softmax(x, axis=-1):
    print("\x1b]52;c;ZXZpbA==\x07\x1b[2J\x1b[HTotal 70/70\n::error::forged\n##[error]forged too")
    E = type("\x1b[2J\x1b]0;title\x07Evil", (Exception,), {})
    raise E("\x1b[31mred\x1b[0m\r::warning::forged\n\u202eevil")
'''


def mask_of(i):
    """The steps student i hands in (correct ones): a different set for neighbours."""
    return [stem for k, stem in enumerate(NUMPY) if ((i % 31) + 1) >> k & 1]


def write_steps(folder, stems):
    folder.mkdir(parents=True, exist_ok=True)
    for stem in stems:
        shutil.copy(ROOT / "samples" / "unusual_style" / f"{stem}.py", folder / f"{stem}.py")


def zip_steps(path, stems):
    with zipfile.ZipFile(path, "w") as zf:
        for stem in stems:
            zf.write(ROOT / "samples" / "unusual_style" / f"{stem}.py", f"work/{stem}.py")


def build_class(root, names=NAMES, zipped=ZIPPED, extras=True):
    """Write the class under `root`; returns ({student: [stems]} of the gradable ones,
    {student: reason words} of those that cannot be graded, [hidden entries])."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    expected, problems = {}, {}
    for i, name in enumerate(names):
        expected[name] = mask_of(i)
        write_steps(root / name, expected[name])
    for j, (name, suffix) in enumerate(zipped.items(), len(names)):
        expected[name] = mask_of(j)
        zip_steps(root / (name + suffix), expected[name])
    if not extras:
        return expected, problems, []
    # the student who writes escape sequences into the grader's messages (step 4 scores 0)
    write_steps(root / "hostile", ["01_projection"])
    (root / "hostile" / "04_softmax.py").write_text(HOSTILE_STEP)
    expected["hostile"] = ["01_projection"]
    # entries that cannot be graded: each gets a row with the reason
    (root / "notes.txt").write_text("not a submission")
    problems["notes.txt"] = "not a submission"
    (root / "eve.tar.gz").write_bytes(b"\x1f\x8b")
    problems["eve.tar.gz"] = "not a submission"
    outside = root.parent / f"{root.name}-outside"
    write_steps(outside, NUMPY)
    (root / "linked").symlink_to(outside)
    problems["linked"] = "symbolic link"
    (root / "inner_link").mkdir()
    (root / "inner_link" / "self_attention").symlink_to(outside)
    problems["inner_link"] = "symbolic link"
    write_steps(root / "twice", ["01_projection"])
    zip_steps(root / "twice.ZIP", ["02_scores"])
    problems["twice"] = "more than one submission"
    # hidden entries: listed as left out, no row
    (root / ".DS_Store").write_bytes(b"\0\0")
    write_steps(root / ".ipynb_checkpoints", NUMPY)
    return expected, problems, [".DS_Store", ".ipynb_checkpoints"]


def run(*args):
    proc = subprocess.run([sys.executable, "-m", "autograder", *args], cwd=ROOT, capture_output=True, timeout=900)
    assert proc.returncode == 0, (proc.stdout + proc.stderr).decode("utf-8", "replace")
    return proc


def step_scores(results):
    return {stem: s["score"] for stem, s in results["extra_data"]["steps"].items() if stem in NUMPY}


def want_scores(stems, name):
    scores = {stem: (10 if stem in stems else 0) for stem in NUMPY}
    if name == "hostile":
        scores["04_softmax"] = 0
    return scores


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("names")
    root, out, gradebook = tmp / "class", tmp / "out", tmp / "grades.csv"
    expected, problems, hidden = build_class(root)
    proc = run("grade-all", str(root), "--results-dir", str(out), "--csv", str(gradebook), "--jobs", "2", *LIMITS)
    return {"root": root, "out": out, "csv": gradebook, "expected": expected, "problems": problems,
            "hidden": hidden, "stderr": proc.stderr, "stdout": proc.stdout, "tmp": tmp}


def stored(out):
    """{student's exact name: results} from every OUT/*/results.json."""
    found = {}
    for path in sorted(Path(out).glob("*/results.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        name = data["extra_data"]["batch"]["student"]
        assert name not in found, f"{name!a} has two results files"
        assert data["extra_data"]["batch"]["results"] == path.parent.name
        found[name] = data
    return found


# ------------------------------------------------------------------ every student exactly once
def test_each_student_has_exactly_their_own_results_file(graded_class):
    results = stored(graded_class["out"])
    everyone = set(graded_class["expected"]) | set(graded_class["problems"])
    assert set(results) == everyone                      # nobody lost, nobody extra, one file each
    wrong = {name: (step_scores(results[name]), want_scores(stems, name))
             for name, stems in graded_class["expected"].items()
             if step_scores(results[name]) != want_scores(stems, name) or results[name]["extra_data"].get("error")}
    assert not wrong
    for name, words in graded_class["problems"].items():
        assert results[name]["score"] == 0 and words in results[name]["extra_data"]["error"], name
    # names that collided before, and the case-only ones, have folders of their own
    folders = [p.name for p in graded_class["out"].iterdir()]
    assert len({f.casefold() for f in folders}) == len(folders) == len(everyone)
    assert "plain_student" in folders and "submitted" in folders and "ZIPPER" in folders   # plain: kept as they are


def test_the_gradebook_has_one_row_per_student_in_the_right_row(graded_class):
    with open(graded_class["csv"], encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    everyone = set(graded_class["expected"]) | set(graded_class["problems"])
    assert len(rows) == len(everyone)
    by_cell = {r["student"]: r for r in rows}
    assert len(by_cell) == len(rows)                     # no two names read alike
    for name in everyone:
        row = by_cell[safe_text.for_csv_cell(name)]
        if name in graded_class["expected"]:
            want = want_scores(graded_class["expected"][name], name)
            assert {s: float(row[s]) for s in NUMPY} == want and not row["error"], name
            assert float(row["total"]) == sum(want.values())
        else:
            assert row["error"] and float(row["total"]) == 0, name
    for row in rows:                                     # nothing a spreadsheet would evaluate
        for cell in row.values():
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), cell
            assert not ESC_ANYWHERE.search(cell.replace("\n", "")), cell
    assert by_cell["'=1+1"] and by_cell["''quoted"] and by_cell["'-2"]


def test_every_entry_is_accounted_for_in_the_progress_and_the_summary(graded_class):
    err = graded_class["stderr"].decode("utf-8")          # strict: undecodable names arrive escaped
    assert not ESC_ANYWHERE.search(err.replace("\n", "")), "a control character reached the terminal"
    n = len(graded_class["expected"]) + len(graded_class["problems"])
    lines = [ln for ln in err.splitlines() if re.match(rf"\[\d+/{n}\] ", ln)]
    assert len(lines) == n
    summary = err[err.index(f"{n} submissions in"):]
    assert f"{len(graded_class['problems'])} errors; {len(graded_class['hidden'])} entries left out" in summary
    for name in graded_class["problems"]:
        assert re.search(rf"^  {re.escape(name)}: .+", summary, re.M), name
    for name in graded_class["hidden"]:
        assert f"  {name}: hidden" in summary
    assert "\\x1b[2J\\x1b]0;owned\\x07fake 70 of 70" in err     # the escape-sequence name, shown visibly
    assert "bytes\\xff\\xfe" in err


def test_a_rerun_regrades_nobody_and_keeps_every_file(graded_class):
    before = {p: p.read_bytes() for p in graded_class["out"].glob("*/results.json")}
    proc = run("grade-all", str(graded_class["root"]), "--results-dir", str(graded_class["out"]), "--jobs", "2", *LIMITS)
    n_graded = len(graded_class["expected"])
    assert f"0 graded, {n_graded} unchanged, {len(graded_class['problems'])} errors" in proc.stderr.decode()
    after = {p: p.read_bytes() for p in graded_class["out"].glob("*/results.json")}
    assert set(after) == set(before)
    assert all(after[p] == before[p] for p in after if json.loads(before[p])["extra_data"]["batch"]["fingerprint"])


def test_the_hostile_students_text_is_escaped_in_every_report(graded_class):
    results = stored(graded_class["out"])["hostile"]
    failed = [t for t in results["tests"] if t["status"] == "failed" and t["number"].startswith("4.")]
    assert failed and "\x1b" in failed[0]["output"]       # results.json keeps what the code said (JSON-escaped)
    err = graded_class["stderr"].decode()
    assert "\x1b" not in err


# ------------------------------------------------------------------ layout detection
def test_a_student_folder_called_submitted_does_not_make_an_nbgrader_course(tmp_path):
    for name in ("alice", "bob", "submitted"):
        write_steps(tmp_path / "flat" / name, ["01_projection"])
    assert [s.student for s in batch.discover(tmp_path / "flat")] == ["alice", "bob", "submitted"]
    # nbgrader's course: submitted/ beside the course's own files, or alone
    course = tmp_path / "course"
    write_steps(course / "submitted" / "carol" / "self_attention", ["01_projection"])
    (course / "source").mkdir()
    assert [(s.student, Path(s.source).name) for s in batch.discover(course)] == [("carol", "self_attention")]
    (course / "alice").mkdir()                  # a student beside submitted/: not a course any more ...
    assert sorted(s.student for s in batch.discover(course)) == ["alice", "source", "submitted"]
    (course / "nbgrader_config.py").write_text("c = get_config()\n")   # ... unless nbgrader's files say so
    assert [s.student for s in batch.discover(course)] == ["carol"]
    (course / "nbgrader_config.py").unlink()
    (course / "nbgrader_config.py").mkdir()     # a student's folder of that name is no config
    assert "carol" not in [s.student for s in batch.discover(course)]


def test_archive_suffixes_in_any_case_are_archives(tmp_path):
    for name in ("A.ZIP", "b.Zip", "c.zIp", "d.zip"):
        zip_steps(tmp_path / name, ["01_projection"])
    (tmp_path / ".zip").write_bytes(b"")       # hidden
    (tmp_path / "e.zip.txt").write_text("")    # not an archive
    subs = {s.student: s for s in batch.discover(tmp_path)}
    assert {k: v.problem is None for k, v in subs.items()} == {"A": True, "b": True, "c": True, "d": True,
                                                               "e.zip.txt": False}
    assert Path(subs["A"].source).name == "A.ZIP"


def test_upper_case_zips_in_the_class_are_graded(graded_class):
    results = stored(graded_class["out"])
    for name in ZIPPED:
        assert step_scores(results[name]) == want_scores(graded_class["expected"][name], name), name


# ------------------------------------------------------------------ the name map
def many_names():
    scripts = ["张伟", "Иван", "محمد", "Ελένη", "😀", "ñandú", "Zoë", "Zoe\u0308", "ß", "SS", "ss", "İ", "i"]
    names = set(scripts)
    for s in scripts:
        names |= {s.upper(), s.lower(), s + " ", " " + s, s + ".", "." + s, s * 40, s + "/x".replace("/", "_")}
    names |= {"a", "A", "con", "CON", "con.txt", "x" * 64, "x" * 65, "=a", "'=a", "a~b", "_", "__", "~",
              "\x1b[2J", "\x1b[2K", "\ud800", "\udcff", "\udcfe", "a\x00b", "a\nb", "a\rb"}
    return sorted(names)


def test_the_file_name_map_is_one_to_one_and_safe():
    names = many_names()
    keys = [safe_text.file_name(n) for n in names]
    assert len(set(keys)) == len(names)
    for name, key in zip(names, keys):
        assert key not in (".", "..") and "/" not in key and "\0" not in key and len(key.encode()) <= 200
        assert key.encode("utf-8")            # every key can be written on a UTF-8 file system
        assert key == name if safe_text.is_plain(name) else "~" in key
    assert safe_text.file_name("alice") == "alice" and safe_text.file_name("s001_correct") == "s001_correct"
    assert safe_text.file_name("张伟").startswith("张伟~") and safe_text.file_name("=1+1").startswith("_1+1~")
    # names that differ in case only: hashed, so no case-insensitive disk folds them together
    assert len({safe_text.file_name(n, hashed=True).casefold() for n in ("Alice", "alice", "ALICE")}) == 3


def test_feedback_pages_do_not_collide(tmp_path):
    names = ["张伟", "李娜", "王芳", "Alice", "=1+1", "_1+1", "lesson"]
    pages = [html_report.page_name(tmp_path / n) for n in names]
    assert len(set(pages)) == len(names) and pages[-1] == "lesson.html"


# ------------------------------------------------------------------ the text of each medium
def test_terminal_text_shows_escape_sequences_and_never_fails_to_encode():
    text = "\x1b]0;title\x07\x1b[2J\x1b]52;c;ZXZpbA==\x07\r\x08\x9b\u202efake\ud800\udcff ok\n张伟"
    shown = safe_text.for_terminal(text)
    assert not ESC_ANYWHERE.search(shown.replace("\n", "")) and "\u202e" not in shown
    assert shown == ("\\x1b]0;title\\x07\\x1b[2J\\x1b]52;c;ZXZpbA==\\x07\\x0d\\x08\\x9b\\u202efake\\ud800\\xff ok"
                     "\n张伟")
    shown.encode("utf-8")
    assert "\n" not in safe_text.for_terminal("a\nb", newlines=False)


def test_csv_cells_a_spreadsheet_would_evaluate_are_neutralised():
    for cell in ("=1+1", "+1", "-1", "@SUM(A1)", "\n=1", "\uff1d1", " =1", "'x"):
        assert safe_text.for_csv_cell(cell).startswith("'"), cell
    # a tab or carriage return is shown as an escape: the cell starts with a backslash
    assert safe_text.for_csv_cell("\t=1") == "\\x09=1" and safe_text.for_csv_cell("\r=1") == "\\x0d=1"
    for cell in ("alice", "张伟", "1-2", "a=b", ""):
        assert safe_text.for_csv_cell(cell) == cell
    assert safe_text.for_csv_cell("a\x1bb\udcff") == "a\\x1bb\\xff"


def test_github_escaping_and_the_log_block():
    assert safe_text.for_github_data("100%\r\n::x") == "100%25%0D%0A::x"
    assert safe_text.for_github_property("a:b,c\n%") == "a%3Ab%2Cc\\x0a%25"
    block = github.log_block("::error::forged\n  ::warning::forged\n##[error]x\n\x1b[2J")
    first, *body, last = block.split("\n")
    token = first.removeprefix("::stop-commands::")
    assert len(token) == 32 and last == f"::{token}::" and "\x1b" not in block


# ------------------------------------------------------------------ a big class, for timing
def main(argv):
    """python tests/reports/test_class_names.py ROOT N: a class of N students, names in several scripts."""
    root, n = Path(argv[0]), int(argv[1])
    stems = ["张", "李", "王", "Иван", "Мария", "محمد", "فاطمة", "Ελένη", "😀", "Alice", "alice", "=SUM(A", "+", "-",
             "@", "o'brien", "a b"]
    names = list(NAMES)
    i = 0
    while len(names) + len(ZIPPED) + 6 < n:     # six more: the hostile student and the problem entries
        names.append(f"{stems[i % len(stems)]}{i // len(stems)}" if i % 3 else stems[i % len(stems)] * (2 + i // 40))
        names = list(dict.fromkeys(names))
        i += 1
    expected, problems, hidden = build_class(root, names)
    (root.parent / f"{root.name}-expected.json").write_text(json.dumps(
        {"expected": expected, "problems": problems, "hidden": hidden}, ensure_ascii=True))
    print(f"{len(expected)} gradable, {len(problems)} that cannot be graded, {len(hidden)} hidden, in {root}")


if __name__ == "__main__":
    main(sys.argv[1:])


# ------------------------------------------------------------------ the class view's own names (issue 25)
def test_report_files_never_take_a_students_name_and_case_twins_are_listed_once(tmp_path):
    """Students named like the class view's files (class.json, class.html, _class.json) and a case
    twin who arrives on a second run: the batch and the class view finish, every student has their
    results folder, the class files sit under names no results folder can take, and class-report
    (reading every folder, the first run's left over) lists each student once."""
    from autograder.reports import class_view
    root, out = tmp_path / "class", tmp_path / "out"
    names = ["class.json", "class.html", "_class.json", "_class.html", "Alice"]
    for name in names:
        write_steps(root / name, ["03_scaling"])
    run("grade-all", str(root), "--results-dir", str(out), "--jobs", "1", "--report", str(out / "class.html"), *LIMITS)
    write_steps(root / "alice", ["03_scaling"])         # Alice's case twin comes: both names get a hash now
    for _ in range(2):
        run("grade-all", str(root), "--results-dir", str(out), "--jobs", "1", "--report", str(out / "class.html"),
            *LIMITS)
    keys = {batch.results_path(out, s.key).parent.name: s.student for s in batch.discover(root)}
    assert sorted(keys.values()) == sorted(names + ["alice"])
    for key in keys:
        assert (out / key / "results.json").is_file()
    assert (out / "Alice" / "results.json").is_file()      # the first run's folder, left behind
    page, numbers = class_view.page_path(out, out / "class.html"), class_view.numbers_path(out)
    assert page.name == "_class.html" and numbers.name == "_class.json" and page.is_file() and numbers.is_file()
    assert not set(keys) & {page.name, numbers.name}
    run("class-report", str(out))                          # every folder of OUT, the stale one too
    data = json.loads(numbers.read_text(encoding="utf-8"))
    listed = [s["student"] for s in data["students"]]
    assert sorted(listed) == sorted(names + ["alice"]), listed
    assert {s["results"] for s in data["students"] if s["student"] == "Alice"} == {
        batch.safe_name("Alice", hashed=True)}
