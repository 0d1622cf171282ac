"""The class view shows only results this grader signed (issue 26, with issue 25's stored.py).

grade-all's resume reuses a student's graded.json only when its mac is this grader's; the class
view must hold to the same rule, or a student child that could write OUT (or anyone handed the
folder) forges a classmate's result, or deletes graded.json and writes a results.json, and
`class-report` shows it as graded. Such a folder is left out of the view, listed in the numbers'
"unreadable" with why, and said on stderr. Built by hand with stored.write (no grading: fast).
"""
import json

import pytest

from autograder.i18n import _
from autograder.reports import class_view, stored


@pytest.fixture(autouse=True)
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_KIT_STATE", str(tmp_path / "state"))    # this grader's key, a test's own


def store(out, key, student):
    """OUT/<key>/graded.json and results.json as grade-all writes them (batch._store)."""
    folder = out / key
    folder.mkdir(parents=True)
    graded = stored.Stored(student, "ab" * 32, error=_("the zip could not be read ({error})", error=student))
    stored.write(folder, graded)
    results = graded.results()
    results["extra_data"]["batch"] = {"student": student, "results": key, "fingerprint": graded.fingerprint}
    (folder / "results.json").write_text(json.dumps(results), encoding="utf-8")
    return folder


@pytest.fixture
def out(tmp_path):
    out = tmp_path / "out"
    alice = store(out, "alice", "alice") / "results.json"      # results.json is not signed: its name is not read
    results = json.loads(alice.read_text())
    results["extra_data"]["batch"]["student"] = "mallory"
    alice.write_text(json.dumps(results))
    forged = store(out, "bob", "bob") / stored.NAME          # rewritten (a well-formed file), the mac kept
    data = json.loads(forged.read_text())
    data["student"], data["fingerprint"] = "bob (forged)", "cd" * 32
    forged.write_text(json.dumps(data))
    assert stored.read(forged.parent) is not None             # readable: only its mac gives it away
    (store(out, "carol", "carol") / stored.NAME).unlink()   # results.json alone: anyone can write one
    signed_elsewhere = store(out, "dave", "dave") / stored.NAME
    data = json.loads(signed_elsewhere.read_text())
    data["mac"] = "00" * 32                                  # another grader's key
    signed_elsewhere.write_text(json.dumps(data))
    return out


def test_only_this_graders_results_are_entries(out):
    entries, skipped = class_view.load(out)
    assert [(e.key, e.student) for e in entries] == [("alice", "alice")]
    assert sorted(key for key, _why in skipped) == ["bob", "carol", "dave"]
    assert all("not signed by this grader" in why for _key, why in skipped)


def test_the_class_report_says_so_and_lists_them(out, capsys):
    class_view.build(out, with_similarity=False, lang="en")
    numbers = json.loads(class_view.numbers_path(out).read_text(encoding="utf-8"))
    assert [s["results"] for s in numbers["students"]] == ["alice"]
    assert sorted(u["results"] for u in numbers["unreadable"]) == ["bob", "carol", "dave"]
    err = capsys.readouterr().err
    for key in ("bob", "carol", "dave"):
        assert f"{key}: not in the class view: its graded.json is missing, changed or not signed" in err
    assert not (out / "bob" / class_view.FEEDBACK_PAGE).exists()
