"""Every command refuses what it cannot do right (issue 29): one `error:` line, a non-zero exit, no
traceback, and nothing graded or written. These are the traps a newcomer falls into first: a class
folder given to `grade`, a student's folder given to `grade-all`, a browser's re-download
("04_softmax (1).ipynb"), an empty folder, a mistyped step, an output path that cannot be written,
a bad number, Ctrl-C in the middle of a class. An OSError or a bug ends in one line too, which
names the log holding the traceback."""
import ctypes
import os
import platform
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOMY_TIMEOUT, ROOT

LESSON = ROOT / "samples" / "lesson"


def kit(*args, tmp_path, timeout=120, **kw):
    """(exit code, stdout, stderr) of `python -m autograder ARGS`, its crash log under tmp_path.
    No warm children (ATTENTION_KIT_WARM=0): `grade` starts its zygote before reading its
    arguments, and a refused grade would wait for the zygote's torch import to let go of the output
    pipes (about 3 s a refusal idle, 8 s on a busy machine); nothing here is graded."""
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), ATTENTION_KIT_LOG="", ATTENTION_KIT_WARM="0",
               **kw.pop("env", {}))
    done = subprocess.run([sys.executable, "-m", "autograder", *map(str, args)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=timeout, **kw)
    return done.returncode, done.stdout, done.stderr


def one_error_line(code, out, err, *words, exit_code=2):
    """The refusal: the exit code, one `error:` line holding `words`, no traceback, nothing else."""
    assert code == exit_code, (code, out, err)
    # a test that must let the student's code write outside its wall (--isolation none-unsafe) is
    # told so on the first line, as every unwalled run is: that line is not the refusal's
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("attention-kit: WARNING: grading WITHOUT a wall")]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in out + err
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def student(folder, source=LESSON):
    folder.mkdir(parents=True)
    for f in source.iterdir():
        shutil.copy(f, folder / f.name)
    return folder


# ------------------------------------------------------------------ grade: one submission, or refused
def test_grade_refuses_a_folder_of_several_students(tmp_path):
    student(tmp_path / "class" / "alice")
    student(tmp_path / "class" / "bob")
    line = one_error_line(*kit("grade", tmp_path / "class", tmp_path=tmp_path), "holds 2 submissions",
                          "alice, bob", "grade-all")
    assert not (tmp_path / "results.json").exists(), line


def test_grade_refuses_an_nbgrader_course(tmp_path):
    course = tmp_path / "course"
    student(course / "source" / "self_attention")
    student(course / "submitted" / "alice" / "self_attention")
    (course / "nbgrader_config.py").write_text("")
    one_error_line(*kit("grade", course, tmp_path=tmp_path), "is an nbgrader course", "grade-all")


def test_grade_refuses_a_near_miss_file_name_and_names_the_right_one(tmp_path):
    for bad, good in (("04_softmax (1).ipynb", "04_softmax.ipynb"), ("04_Softmax.py", "04_softmax.py"),
                      ("02_scores-copy.py", "02_scores.py"), ("04_rope (2).ipynb", "04_rope.ipynb")):
        path = tmp_path / bad
        shutil.copy(ROOT / "source/self_attention/04_softmax.ipynb", path)
        one_error_line(*kit("grade", path, tmp_path=tmp_path), bad, f"rename it {good}")
        path.unlink()
    # in a folder, with no exact name: each near miss with the name it should have
    (tmp_path / "sub").mkdir()
    shutil.copy(LESSON / "04_softmax.py", tmp_path / "sub" / "04_softmax (1).py")
    one_error_line(*kit("grade", tmp_path / "sub", tmp_path=tmp_path), "04_softmax (1).py -> 04_softmax.py")


def test_grade_refuses_a_file_that_is_no_step_file(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    one_error_line(*kit("grade", tmp_path / "notes.txt", tmp_path=tmp_path), "is not a step file")


def test_grade_refuses_a_folder_without_step_files(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "Untitled.ipynb").write_text("{}")
    one_error_line(*kit("grade", tmp_path / "empty", tmp_path=tmp_path), "no step file in")


def test_grade_refuses_unknown_steps_and_steps_the_submission_lacks(tmp_path):
    one_error_line(*kit("grade", LESSON, "--steps", "4_softmax", tmp_path=tmp_path), "unknown step 4_softmax",
                   "04_softmax")
    one_error_line(*kit("grade", LESSON, "--steps", ",", tmp_path=tmp_path), "unknown step")
    one_error_line(*kit("grade", LESSON, "--steps", "04_rope", tmp_path=tmp_path), "none of the steps asked for")
    one_error_line(*kit("audit", "--steps", "nope", tmp_path=tmp_path), "unknown step nope")


def test_grade_refuses_output_paths_it_cannot_write(tmp_path):
    (tmp_path / "a_file").write_text("")
    (tmp_path / "a_folder").mkdir()
    sub = LESSON / "04_softmax.py"
    for args, words in ((["--html", tmp_path / "a_file"], "is not a folder"),
                        (["--html", tmp_path / "a_file" / "pages"], "is a file"),
                        (["--results", tmp_path / "nope" / "r.json"], "does not exist"),
                        (["--results", tmp_path / "a_folder"], "is a folder"),
                        (["--format", "junit", "--out", tmp_path / "nope" / "j.xml"], "does not exist")):
        one_error_line(*kit("grade", sub, *args, tmp_path=tmp_path), args[-2], words)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file", "a_folder"]   # nothing written


def test_bad_numbers_and_unknown_commands_are_one_line(tmp_path):
    for args, words in ((["grade-all", LESSON, "--results-dir", "o", "--jobs", "0"], "--jobs"),
                        (["grade", LESSON, "--memory-gib", "-1"], "--memory-gib"),
                        (["grade", LESSON, "--call-timeout", "soon"], "not a number"),
                        (["grde", LESSON], "invalid choice"),
                        (["grade"], "required")):
        one_error_line(*kit(*args, tmp_path=tmp_path), words)


def test_version_and_help_name_every_assignment(tmp_path):
    from autograder import contract
    code, out, _err = kit("--version", tmp_path=tmp_path)
    assert code == 0 and out.startswith("attention-kit ")
    code, out, _err = kit("--help", tmp_path=tmp_path)
    flat = " ".join(out.split())
    assert code == 0 and "for the self_attention assignment" not in flat
    for name, steps in contract.ASSIGNMENTS.items():
        assert name in flat and all(s.stem in flat for s in steps), name


# ------------------------------------------------------------------ grade-all, class-report, gradescope-zip
def test_grade_all_refuses_one_students_folder_and_an_empty_folder(tmp_path):
    one = student(tmp_path / "alice")
    one_error_line(*kit("grade-all", one, "--results-dir", tmp_path / "out", tmp_path=tmp_path),
                   "looks like one student's submission", "01_projection.py", "grade")
    nb = tmp_path / "bob"                         # nbgrader's submitted/bob/, given for the class
    student(nb / "self_attention")
    one_error_line(*kit("grade-all", nb, "--results-dir", tmp_path / "out", tmp_path=tmp_path),
                   "looks like one student's submission", "self_attention")
    (tmp_path / "empty").mkdir()
    one_error_line(*kit("grade-all", tmp_path / "empty", "--results-dir", tmp_path / "out", tmp_path=tmp_path),
                   "holds no submissions")
    one_error_line(*kit("grade-all", tmp_path / "nope", "--results-dir", tmp_path / "out", tmp_path=tmp_path),
                   "is not a folder")
    assert not (tmp_path / "out").exists()


def test_grade_all_refuses_outputs_it_cannot_write_and_unknown_students(tmp_path):
    klass = tmp_path / "class"
    student(klass / "alice")
    (tmp_path / "a_file").write_text("")
    for args, words in ((["--results-dir", tmp_path / "a_file"], "is not a folder"),
                        (["--results-dir", tmp_path / "out", "--csv", tmp_path / "nope" / "g.csv"], "does not exist"),
                        (["--results-dir", tmp_path / "out", "--report", tmp_path / "nope" / "c.html"],
                         "does not exist"),
                        # the class view inside --results-dir, not made yet, is no refusal: the student is
                        (["--results-dir", tmp_path / "out", "--report", tmp_path / "out" / "class.html",
                          "--student", "alcie"], "did you mean alice")):
        one_error_line(*kit("grade-all", klass, *args, tmp_path=tmp_path), words)
    assert not (tmp_path / "out").exists()


def test_class_report_refuses_a_folder_without_results(tmp_path):
    (tmp_path / "out" / "alice").mkdir(parents=True)
    one_error_line(*kit("class-report", tmp_path / "out", tmp_path=tmp_path), "holds no results")
    one_error_line(*kit("class-report", tmp_path / "nope", tmp_path=tmp_path), "is not a folder")
    assert not (tmp_path / "out" / "class.html").exists()


def test_gradescope_zip_refuses_a_path_it_cannot_write(tmp_path):
    one_error_line(*kit("gradescope-zip", tmp_path / "nope" / "g.zip", tmp_path=tmp_path), "does not exist")
    (tmp_path / "folder.zip").mkdir()
    one_error_line(*kit("gradescope-zip", tmp_path / "folder.zip", tmp_path=tmp_path), "is a folder")


def test_the_crosscheck_and_the_audit_refuse_what_they_cannot_do(tmp_path):
    one_error_line(*kit("nbgrader-crosscheck", "--course", tmp_path / "nope", tmp_path=tmp_path), "is not a folder")
    one_error_line(*kit("nbgrader-crosscheck", "--course", tmp_path, tmp_path=tmp_path), "is not an nbgrader course")
    one_error_line(*kit("audit", "--steps", "04_softmax", "--report", tmp_path / "nope" / "a.json",
                        tmp_path=tmp_path), "--report", "does not exist")


def test_an_os_error_without_an_errno_is_said_in_its_own_words(tmp_path):
    """A Dask scheduler that does not answer: distributed raises OSError("Timed out trying to connect ...")."""
    pytest.importorskip("distributed")
    student(tmp_path / "class" / "alice")
    # nothing listens on port 9: the connection fails at every try until distributed's connect
    # time-out, reached whatever the machine's speed; 2 s instead of its default 30 s
    line = one_error_line(*kit("grade-all", tmp_path / "class", "--results-dir", tmp_path / "out", "--scheduler",
                               "tcp://127.0.0.1:9", "--isolation", "process", tmp_path=tmp_path, timeout=300,
                               env={"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"}),
                          exit_code=1)
    assert "127.0.0.1:9" in line and "details in" in line


# ------------------------------------------------------------------ no traceback, whatever fails
def test_an_os_error_is_one_line_naming_the_log_with_the_traceback(tmp_path):
    """/dev/full takes the zip's open and refuses its writes: an OSError past every check."""
    line = one_error_line(*kit("gradescope-zip", "/dev/full", tmp_path=tmp_path), "No space left on device",
                          exit_code=1)
    log = tmp_path / "cache" / "attention-kit" / "last-error.log"
    assert str(log) in line
    text = log.read_text()
    assert "Traceback" in text and "OSError" in text and "gradescope-zip" in text


# Ctrl-C reaches a command started from a terminal, where SIGINT is at its default. A shell without
# job control starts a background job (`nohup bash .ci/run &`) with SIGINT ignored, everything that
# job starts inherits that, and Python keeps an inherited SIG_IGN: the command then never sees
# Ctrl-C (two busy runs of the suite, started so, hung in these tests). A command these tests
# interrupt is started as from a terminal: SIGINT back at its default, then exec.
FROM_A_TERMINAL = [sys.executable, "-c", "import os, signal, sys\n"
                   "signal.signal(signal.SIGINT, signal.SIG_DFL)\nos.execv(sys.argv[1], sys.argv[1:])\n"]


def interrupted_batch(tmp_path, deliver):
    """A class of two graded by grade-all, and Ctrl-C after the first student (`deliver(pid)`
    sends it): (args, env, class folder, pid file, process, stderr read, rest of stdout and stderr).
    The second student's step is in hand when the signal comes, by construction: it writes its
    pid, then waits (no CPU) longer than this waits for the batch to end (its limits longer still).
    So the batch ends only because the step in hand was stopped, not finished."""
    klass = tmp_path / "class"
    for name in ("alice", "bob"):            # two steps each: what is graded here is the batch's bookkeeping
        (klass / name).mkdir(parents=True)
        for stem in ("01_projection", "02_scores"):
            shutil.copy(LESSON / f"{stem}.py", klass / name)
    pid_file = tmp_path / "bob.pid"
    (klass / "bob" / "01_projection.py").write_text(
        f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(900)\n")
    # faulthandler: a batch that does not stop is made to say where each of its Pythons waits (below)
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONFAULTHANDLER="1")
    args = [sys.executable, "-m", "autograder", "grade-all", str(klass), "--results-dir", str(tmp_path / "out"),
            "--jobs", "1", "--isolation", "process", "--call-timeout", "1200", "--submission-timeout", "1200"]
    proc = subprocess.Popen(FROM_A_TERMINAL + args, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    err = []
    try:
        for line in proc.stderr:                  # wait until alice is graded ...
            err.append(line)
            if line.startswith("[1/2] alice"):
                while not pid_file.exists() or not pid_file.read_text():      # ... and bob's step has started
                    assert proc.poll() is None, "".join(err)
                    time.sleep(0.05)
                deliver(proc.pid)
                break
        # far above the moment it takes; far below bob's 900 s: without the stop, this times out
        try:
            rest_out, rest_err = proc.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            pytest.fail(f"grade-all did not stop after Ctrl-C; where it waits:\n{stuck_report(proc, err)}")
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)     # the client and its worker, if still there
        except ProcessLookupError:
            pass
    return args, env, klass, pid_file, proc, "".join(err) + rest_err, rest_out


def stuck_report(proc, err):
    """The signal state of each process of the batch's session, then the Python stacks of its
    client and worker (SIGABRT: faulthandler prints every thread's stack to the shared stderr)."""
    lines = []
    for pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit()):
        try:
            if os.getsid(pid) != proc.pid:
                continue
            status = Path(f"/proc/{pid}/status").read_text()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        masks = [l for l in status.splitlines() if l.startswith(("State", "SigPnd", "ShdPnd", "SigBlk", "SigIgn"))]
        ignored = int(next(l for l in masks if l.startswith("SigIgn")).split()[1], 16)
        # the client must take Ctrl-C (its worker and the resource tracker ignore it by design)
        hint = (" <- ignores SIGINT (inherited? see FROM_A_TERMINAL)"
                if pid == proc.pid and ignored >> (signal.SIGINT - 1) & 1 else "")
        lines.append(f"{pid} {cmd[:120]}: " + "; ".join(masks) + hint)
    os.killpg(proc.pid, signal.SIGABRT)
    # read what comes until a quiet second: the zygotes, in sessions of their own, keep the pipe open
    rest, fd = [], proc.stderr.fileno()
    while select.select([fd], [], [], 10)[0]:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        rest.append(chunk.decode(errors="replace"))
    return "\n".join(lines) + "\n--- stderr ---\n" + ("".join(err) + "".join(rest))[-20000:]


def assert_stopped_at_once(tmp_path, pid_file, proc, err, rest_out):
    assert not alive(int(pid_file.read_text())), "the step in hand was stopped, its process is gone"
    assert proc.returncode == 130, err
    assert "Traceback" not in err + rest_out
    (line,) = [l for l in err.splitlines() if l.startswith("error:")]
    assert "interrupted after 1 of 2" in line and "run the same command again to resume" in line
    assert (tmp_path / "out" / "alice" / "results.json").is_file()


def test_an_interrupted_grade_all_says_what_finished_stops_at_once_and_a_rerun_resumes(tmp_path):
    """Ctrl-C (SIGINT to the whole process group, as a terminal sends it) after the first
    student: one line, exit 130, the finished student's results kept, its step in hand stopped
    (its process gone), and the rerun grades only the one that was interrupted."""
    args, env, klass, pid_file, proc, err, rest_out = interrupted_batch(
        tmp_path, lambda pid: os.killpg(pid, signal.SIGINT))
    assert_stopped_at_once(tmp_path, pid_file, proc, err, rest_out)
    (klass / "bob" / "01_projection.py").write_text((LESSON / "01_projection.py").read_text())
    done = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "alice: skipped (unchanged, not regraded)" in done.stderr
    (bob,) = [l for l in done.stderr.splitlines() if "] bob: " in l]
    assert "/70" in bob and "unchanged" not in bob, bob            # graded this time
    # --student: the one named is graded again although unchanged; the others as in any rerun
    again = subprocess.run(args + ["--student", "alice"], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 0, again.stderr
    (first,) = [l for l in err.splitlines() if l.startswith("[1/2] alice: ")]
    assert first.split("] ", 1)[1] in again.stderr and "1 graded, 1 unchanged" in again.stderr
    assert "bob: skipped (unchanged, not regraded)" in again.stderr


def alive(pid):
    """Whether `pid` is a live process (a zombie, dead and waiting to be reaped, is not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_refusals_are_in_the_chosen_language(tmp_path, lang):
    (tmp_path / "empty").mkdir()
    _c, _o, err = kit("grade", tmp_path / "empty", "--lang", lang, tmp_path=tmp_path)
    assert ("no step file in" in err) == (lang == "en")


def test_an_interrupted_grade_is_one_line_and_writes_no_results(tmp_path):
    """Ctrl-C while a step runs: SIGINT to the grader (sent by a thread of its own process once
    the student's code has started, so the moment is known), one `error: interrupted` line, exit
    130, no results.json half written."""
    sub = tmp_path / "sub"
    sub.mkdir()
    started = tmp_path / "started"
    (sub / "04_softmax.py").write_text(f"import time\nopen({str(started)!r}, 'w').close()\ntime.sleep(60)\n")
    driver = (
        "import os, signal, sys, threading, time\n"
        "def later():\n"
        f"    while not os.path.exists({str(started)!r}): time.sleep(0.2)\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"     # as from a terminal (FROM_A_TERMINAL)
        "threading.Thread(target=later, daemon=True).start()\n"
        "from autograder.commands.entry import main\n"
        "main(sys.argv[1:])\n")
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, "-c", driver, "grade", str(sub), "--results", str(tmp_path / "r.json"),
                           "--isolation", "process", *ROOMY_TIMEOUT], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    line = one_error_line(done.returncode, done.stdout, done.stderr, "interrupted", "details in", exit_code=130)
    assert not (tmp_path / "r.json").exists(), line


TGKILL = {"x86_64": 234, "aarch64": 131}.get(platform.machine())     # the syscall's number


@pytest.mark.skipif(TGKILL is None, reason="tgkill's syscall number is known here for x86_64 and aarch64 only")
def test_a_ctrl_c_taken_by_another_thread_of_grade_all_stops_it_as_well(tmp_path):
    """The kernel hands a process-directed SIGINT to any thread that does not block it, most often
    the main one. Sent here to another thread of grade-all's client (the pool's manager thread),
    by tgkill: the client's main thread, waiting for the submission in hand, must still stop the
    batch (it once waited on, for as long as that submission took: seen once in a busy run)."""
    def to_another_thread(pid):
        others = sorted(int(t) for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid)
        assert others, "grade-all's client runs the pool's threads beside its main one"
        assert ctypes.CDLL(None, use_errno=True).syscall(TGKILL, pid, others[0], signal.SIGINT) == 0
    _args, _env, _klass, pid_file, proc, err, rest_out = interrupted_batch(tmp_path, to_another_thread)
    assert_stopped_at_once(tmp_path, pid_file, proc, err, rest_out)
