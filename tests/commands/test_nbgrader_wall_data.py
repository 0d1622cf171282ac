"""The data a walled nbgrader kernel finds beside its notebook (issue 31: the decoder's step 6 reads
data/corpus.txt): the course's files beside the masters in source/<assignment>/, subfolders kept,
over the student's; never a notebook (the masters hold the solutions), a link or a hidden entry."""
import os

from autograder.commands.nbgrader_wall import copy_beside_files, copy_master_files


def test_the_courses_files_beside_the_masters_reach_the_kernel_and_nothing_else(tmp_path):
    master, scratch, secret = tmp_path / "source" / "decoder", tmp_path / "scratch", tmp_path / "secret.txt"
    (master / "data").mkdir(parents=True)
    (master / "data" / "corpus.txt").write_text("the course's corpus")
    (master / "06_training.ipynb").write_text("{the master, with its solutions}")
    (master / "data" / "hidden.ipynb").write_text("{}")
    (master / ".git").mkdir()
    (master / ".git" / "config").write_text("x")
    secret.write_text("not the course's")
    os.symlink(secret, master / "data" / "link.txt")
    os.symlink(tmp_path, master / "linked")
    scratch.mkdir()
    (scratch / "data").write_text("the student's file named data")        # the course's folder wins
    copy_master_files(str(master), str(scratch), file_bytes=1 << 20)
    found = sorted(str(p.relative_to(scratch)) for p in scratch.rglob("*"))
    assert found == ["data", "data/corpus.txt"]
    assert (scratch / "data" / "corpus.txt").read_text() == "the course's corpus"


def test_the_limits_hold_for_the_courses_files(tmp_path):
    master, scratch = tmp_path / "m", tmp_path / "s"
    (master / "a" / "b" / "c" / "d" / "e").mkdir(parents=True)
    (master / "a" / "b" / "c" / "d" / "e" / "deep.txt").write_text("too deep")
    (master / "big.txt").write_bytes(b"x" * 2048)
    (master / "small.txt").write_bytes(b"y" * 10)
    scratch.mkdir()
    copy_master_files(str(master), str(scratch), file_bytes=1024)
    assert (scratch / "small.txt").exists() and not (scratch / "big.txt").exists()
    assert not list(scratch.rglob("deep.txt"))


def test_the_students_own_files_stay_top_level_only(tmp_path):
    """copy_beside_files (the student's folder under submitted/) is unchanged: files, no folders."""
    student, scratch = tmp_path / "sub", tmp_path / "s"
    (student / "data").mkdir(parents=True)
    (student / "data" / "corpus.txt").write_text("the student's")
    (student / "notes.txt").write_text("n")
    scratch.mkdir()
    copy_beside_files(str(student), str(scratch), 1 << 20)
    assert sorted(p.name for p in scratch.iterdir()) == ["notes.txt"]
