"""Stored results cannot be forged (issue 25, item 1): grade-all reuses a student's graded.json only
when its mac is this grader's (reports/stored.py), never because the file says so.

A student whose child could write the results folder rewrites a classmate's graded.json, keeping
its fingerprint: the next run must grade the classmate again, with a note, and give the score the
files earn. The key lives in the grader's state folder (ATTENTION_KIT_STATE here: a test folder).
"""
import json
import os
import shutil
import stat

import pytest

from autograder.commands import batch
from autograder.sandbox.limits import Limits
from autograder.reports import stored
from conftest import ROOMY_SECONDS, ROOT


@pytest.fixture(autouse=True)
def state(tmp_path, monkeypatch):
    folder = tmp_path / "state"
    monkeypatch.setenv("ATTENTION_KIT_STATE", str(folder))
    return folder


def a_stored(student="alice", fp="ab" * 32):
    from autograder.i18n import _
    return stored.Stored(student, fp, error=_("the zip could not be read ({error})", error="x"))


def forge(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def test_what_this_grader_wrote_reads_back_authentic(tmp_path):
    stored.write(tmp_path, a_stored())
    back = stored.read(tmp_path)
    assert back.authentic and back.student == "alice" and back.fingerprint == "ab" * 32


@pytest.mark.parametrize("change", [
    lambda d: d.update(student="bob"),                             # a classmate's report under my name
    lambda d: d.update(fingerprint="cd" * 32),                     # someone else's files
    lambda d: d["error"].update(fields={"error": "forged"}),       # the report's content
    lambda d: d.pop("mac"),                                        # no signature at all
    lambda d: d.update(mac="0" * 64),                              # a made-up one
    lambda d: d.update(version=1, mac=None),                       # the old unsigned format
], ids=["student", "fingerprint", "content", "no-mac", "made-up-mac", "version-1"])
def test_any_change_to_a_stored_report_makes_it_not_authentic(tmp_path, change):
    stored.write(tmp_path, a_stored())
    forge(tmp_path / stored.NAME, change)
    back = stored.read(tmp_path)
    assert back is not None and not back.authentic


def test_the_key_is_private_and_outside_the_results(state, tmp_path):
    stored.write(tmp_path / "out" / "alice", a_stored())
    key = state / stored.KEY_NAME
    assert stat.S_IMODE(os.stat(state).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600 and os.stat(key).st_size == stored.KEY_BYTES
    assert not list((tmp_path / "out").rglob("*.key"))


def test_a_key_others_could_read_is_replaced_and_what_it_signed_is_graded_again(state, tmp_path):
    stored.write(tmp_path, a_stored())
    key = state / stored.KEY_NAME
    os.chmod(key, 0o644)          # someone else may have read it: it signs nothing any more
    old = key.read_bytes()
    assert not stored.read(tmp_path).authentic
    assert key.read_bytes() != old and stat.S_IMODE(os.stat(key).st_mode) == 0o600


def test_a_link_planted_at_the_key_is_not_followed(state, tmp_path):
    state.mkdir(mode=0o700)
    known = tmp_path / "known-key"
    known.write_bytes(b"k" * stored.KEY_BYTES)
    os.chmod(known, 0o600)
    os.symlink(known, state / stored.KEY_NAME)
    stored.write(tmp_path, a_stored())
    assert not (state / stored.KEY_NAME).is_symlink() and (state / stored.KEY_NAME).read_bytes() != known.read_bytes()
    assert known.read_bytes() == b"k" * stored.KEY_BYTES


def test_previous_result_reuses_only_an_authentic_report(tmp_path, capsys):
    sub = batch.Submission("alice", str(tmp_path / "src"), key="alice")
    stored.write(tmp_path / "alice", a_stored())
    assert batch.previous_result(tmp_path, sub, "ab" * 32) is not None
    forge(tmp_path / "alice" / stored.NAME, lambda d: d["error"].update(fields={"error": "forged"}))
    assert batch.previous_result(tmp_path, sub, "ab" * 32) is None
    assert "alice: the stored results were not written by this grader" in capsys.readouterr().err


def test_a_forged_classmate_report_is_graded_again_with_its_true_score(tmp_path, capsys):
    """The attack end to end: carol's graded.json rewritten to full marks, fingerprint kept."""
    root, out = tmp_path / "class", tmp_path / "out"
    (root / "carol").mkdir(parents=True)
    shutil.copy(ROOT / "samples" / "lesson" / "04_softmax.py", root / "carol")
    limits = Limits(call_seconds=ROOMY_SECONDS, memory_bytes=1 << 30)
    first = batch.grade_all(root, out, limits, jobs=1)
    outcome, results = first["carol"]
    assert outcome == "graded" and results["score"] < results["extra_data"]["max_score"]

    def full_marks(data):
        for step in data["report"]["steps"]:
            for check in step["checks"]:
                check["score"], check["status"] = check["max_score"], "passed"
    forge(out / "carol" / stored.NAME, full_marks)
    assert stored.read(out / "carol").fingerprint == results["extra_data"]["batch"]["fingerprint"]
    capsys.readouterr()
    again = batch.grade_all(root, out, limits, jobs=1)
    assert again["carol"][0] == "graded" and again["carol"][1]["score"] == results["score"]
    assert "carol: the stored results were not written by this grader" in capsys.readouterr().err
    # and what it wrote now is this grader's again: the next run reuses it
    assert batch.grade_all(root, out, limits, jobs=1)["carol"][0] == "skipped"
