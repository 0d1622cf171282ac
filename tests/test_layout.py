"""The tests are laid out like the package (issue 27), and say so in docs/architecture.md.

Where a new test goes: beside the module it is about, `tests/<package folder>/test_<topic>.py` (a
module of `autograder/sandbox/` is tested in `tests/sandbox/`, ...); a path that crosses the whole
kit (nbgrader, a browser, every assignment on every format) in `tests/e2e/`; a test of a top-level
module (`autograder/contract.py`, `autograder/i18n.py`, ...) or of the repository as a whole at
`tests/` top level, named in the architecture page's "Where the tests are". What two test files
share (cases, a harness that grades many small files, a reader of what the kit writes) lives in
`tests/harness/` and is imported from there: a test file never imports another test file.
"""
import ast
import os
import time
import re

from conftest import ROOT

TESTS = ROOT / "tests"
PACKAGE = ROOT / "autograder"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
DATA = {"hostile", "third_assignment", "harness", "__pycache__"}   # folders of tests/ that are not test folders


def section(title):
    """The lines of docs/architecture.md's section `## title`, up to the next `## `."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match, f"docs/architecture.md has no section '## {title}'"
    return match.group(1)


def python_files():
    """Every Python file of tests/ that pytest or a test imports (not the hostile corpus's or the
    third assignment's student files)."""
    return sorted(p for p in TESTS.rglob("*.py")
                  if not {"hostile", "third_assignment", "__pycache__"} & set(p.relative_to(TESTS).parts))


def imported_modules(path):
    """Every module `path` imports, wherever the import is (a function's body included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def test_no_test_file_imports_another():
    bad = [f"{p.relative_to(ROOT)} imports {name}" for p in python_files() for name in imported_modules(p)
           if name.split(".")[-1].startswith("test_")]
    assert not bad, "move what is shared into tests/harness/ and import it from there:\n" + "\n".join(bad)


def test_the_harness_defines_no_test():
    """A test written in tests/harness/ would never run (pytest collects test_*.py only)."""
    bad = [f"{p.relative_to(ROOT)}: {node.name}" for p in sorted((TESTS / "harness").glob("*.py"))
           for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
           if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name.lower().startswith("test")]
    assert not bad, "\n".join(bad)


def test_the_check_sees_an_import_of_a_test_file(tmp_path):
    (tmp_path / "test_x.py").write_text("def f():\n    from test_hostile import EXPECTED\n")
    assert "test_hostile" in set(imported_modules(tmp_path / "test_x.py"))


def package_modules():
    """{dotted name: path} of every module of the package (autograder/suites/ holds pytest files, no package)."""
    return {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
            for p in sorted(PACKAGE.rglob("*.py")) if "__pycache__" not in p.parts}


def modules_imported_by_tests():
    """The package's modules that a test file or the harness imports, in its code or in a program it
    runs (a string of code given to a fresh interpreter)."""
    seen = set()
    for p in python_files():
        text = p.read_text(encoding="utf-8")
        for m in re.finditer(r"^\s*(?:from\s+(autograder[\w.]*)\s+import\s+\(?([\w\s,.]+?)\)?\s*(?:#.*)?$"
                             r"|import\s+(autograder[\w.]*))", text, re.M):
            base = m.group(1) or m.group(3)
            seen.add(base)
            for name in (m.group(2) or "").replace("\n", " ").split(","):
                words = name.split()
                if words:
                    seen.add(f"{base}.{words[0]}")
        seen.update(name for name in imported_modules(p) if name.startswith("autograder"))
    return seen


def excused_modules():
    """{path: (as named, reason)} from the architecture page's "Modules without a test of their own": lines
    `- `autograder/x.py`: why` (a glob such as `autograder/suites/*.py` names several)."""
    excused = {}
    for m in re.finditer(r"^- `(autograder/[^`]+)`:?\s*(.*)$", section("Modules without a test of their own"), re.M):
        for path in ROOT.glob(m.group(1)):
            excused[path] = (m.group(1), m.group(2).strip())
    return excused


def test_every_module_is_imported_by_a_test_or_says_why_not():
    imported, excused = modules_imported_by_tests(), excused_modules()
    missing = [str(p.relative_to(ROOT)) for name, p in package_modules().items()
               if name not in imported and p not in excused]
    assert not missing, ("no test imports these modules: add a test in the folder of its package, or a line "
                         "`- `path`: why` under '## Modules without a test of their own' in docs/architecture.md:\n"
                         + "\n".join(missing))
    assert all(why for _, why in excused.values()), [str(p) for p, (_, why) in excused.items() if not why]
    stale = [named for p, (named, _) in excused.items() if "*" not in named
             and ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__") in imported]
    assert not stale, f"these have a test now: take them off the architecture page's list: {stale}"


def test_the_tests_are_where_the_architecture_page_says():
    where = section("Where the tests are")
    folders = sorted(p.name for p in TESTS.iterdir() if p.is_dir() and p.name not in DATA)
    assert [f for f in folders if f"`tests/{f}/`" not in where] == []
    for folder in folders:
        if (PACKAGE / folder).is_dir():
            continue
        assert folder in ("e2e",), f"tests/{folder}/ mirrors no folder of autograder/"
    top = sorted(p.name for p in TESTS.glob("test_*.py"))
    unplaced = [name for name in top if f"`{name}`" not in where]
    assert not unplaced, ("a test file at tests/ top level that the architecture page does not name: move it "
                          "to the folder of the package it tests (tests/sandbox/, tests/reports/, ...; see "
                          "tests/test_layout.py's docstring), or name it under '## Where the tests are':\n"
                          + "\n".join(unplaced))


def test_the_slowest_files_are_handed_out_first():
    """.ci/run's order (tests/harness/order.py): files by rank, each file's tests together and in
    their order; a file the ranking does not name after those it names."""
    from harness import order

    class Item:
        def __init__(self, nodeid):
            self.nodeid = nodeid
    items = [Item(n) for n in ("a.py::1", "a.py::2", "new.py::1", "slow.py::1", "slow.py::2", "b.py::1")]
    order.slowest_first(items, {"a.py": 3.0, "slow.py": 90.0, "b.py": 10.0})
    assert [i.nodeid for i in items] == ["slow.py::1", "slow.py::2", "b.py::1", "a.py::1", "a.py::2", "new.py::1"]
    order.slowest_first(items, ["a.py", "slow.py"])
    assert [i.nodeid for i in items][:4] == ["a.py::1", "a.py::2", "slow.py::1", "slow.py::2"]


def test_the_ranking_names_only_test_files_that_exist():
    from harness import order
    missing = [f for f in order.ranks() if not (ROOT / f).is_file()]
    assert not missing, f"tests/harness/order.json names files that are not there (moved?): {missing}"


def test_the_graded_corpus_grades_each_submission_once_for_every_worker(tmp_path):
    """Two workers (two processes) ask for the same submission at once: one grades it, both get
    its results; a grading that fails is told to the one waiting, not waited for."""
    import multiprocessing
    from harness import corpus

    def grade(submission, folder, *options):
        with open(tmp_path / "graded.log", "a") as log:
            log.write(f"{os.getpid()} {submission}\n")
        time.sleep(0.5)                  # the other process arrives while this one grades
        if submission == "broken":
            raise ValueError("no such file")
        return 0, "out", {"score": 70, "options": list(options)}

    shared = corpus.Corpus(tmp_path, grade)
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=shared.get, args=("samples/lesson", "--lang", "zh")) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    assert [p.exitcode for p in procs] == [0, 0]
    assert shared.get("samples/lesson", "--lang", "zh") == (0, "out", {"score": 70, "options": ["--lang", "zh"]})
    assert len((tmp_path / "graded.log").read_text().splitlines()) == 1
    broken = ctx.Process(target=shared.get, args=("broken",))
    broken.start()
    while not (tmp_path / shared.key("broken", ()) / "claim").exists():      # it has claimed: we wait on it
        time.sleep(0.01)
    import pytest
    with pytest.raises(RuntimeError, match="no such file"):
        shared.get("broken")
    broken.join()
