"""The wall on the paths courses use: whatever a submission's files are, and however the kit is installed.

- Submitted files are data: links of every kind, FIFOs, sockets, devices, huge files, trees nested
  thousands deep or holding tens of thousands of entries: each refused or passed over with a clear
  message for that student, never followed, never blocking, never crashing the grader (grade and
  grade-all).
- The child sees nothing of the kit however it was installed: editable (the dev venv, the corpus
  covers it), `pip install .` and a wheel into a site folder, the Gradescope layout (a venv in /opt
  with the kit installed in it, graded from the unpacked zip).
- Children share nothing: no IPC between two steps of one submission, a /proc of their own, uids never
  reused across a batch of more than 100 children, nothing left behind.
These need the kit's isolation (root here, as in CI); elsewhere they skip with the reason.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.sandbox import isolation
from conftest import ROOMY_TIMEOUT, ROOT

MODE = isolation.strongest_available() or "refused"   # refused: no wall here (not root, no user namespaces)
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0 or MODE != "uid",
                               reason="needs root and the uid isolation level (CI runs as root)")
STEPS = ["01_projection", "02_scores", "03_scaling", "04_softmax", "05_weighted_sum"]
HONEST = ROOT / "samples" / "unusual_style"


def honest_folder(path, without=("04_softmax",)):
    path.mkdir(parents=True, exist_ok=True)
    for stem in STEPS:
        if stem not in without:
            shutil.copy(HONEST / f"{stem}.py", path)
    return path


def grade(sub, tmp_path, *extra, python=sys.executable, cwd=ROOT, timeout=600):
    results = tmp_path / "results.json"
    proc = subprocess.run([python, "-m", "autograder", "grade", str(sub), "--results", str(results),
                           "--steps", ",".join(STEPS), *extra], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, ATTENTION_KIT_UID_LOG=str(tmp_path / "uids.log")))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(results.read_text()), proc.stdout


def step_outputs(results, stem):
    return [t["output"] for t in results["tests"] if f"step:{stem}" in t["tags"] and t["status"] == "failed"]


def assert_others_full(results, stem="04_softmax"):
    steps = results["extra_data"]["steps"]
    assert all(s["score"] == 10 for k, s in steps.items() if k != stem), {k: s["score"] for k, s in steps.items()}


SECRETS = ("BEGIN SOLUTION", "root:", "def softmax(x, axis=-1):\n    \"\"\"Reference")


def assert_nothing_leaked(results):
    text = json.dumps(results)
    for secret in SECRETS:
        assert secret not in text
    assert (ROOT / "solutions" / "step04_softmax.py").read_text()[:200] not in text


# ------------------------------------------------------------------ links and special files
def _link_to(target):
    def make(folder):
        os.symlink(target, folder / "04_softmax.py")
    return make


def _link_to_notebook(folder):
    os.symlink(ROOT / "source" / "self_attention" / "04_softmax.ipynb", folder / "04_softmax.ipynb")


def _relative_link(folder):
    shutil.copy(HONEST / "04_softmax.py", folder / "real.py")
    os.symlink("real.py", folder / "04_softmax.py")        # even to a file inside the submission


def _fifo(folder):
    os.mkfifo(folder / "04_softmax.py")


def _socket(folder):
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(folder / "04_softmax.py"))
    s.close()


def _device(folder):
    os.mknod(folder / "04_softmax.py", 0o666 | 0o020000, os.makedev(1, 3))   # a character device: /dev/null


def _huge(folder):
    with open(folder / "04_softmax.py", "w") as f:
        f.write((HONEST / "04_softmax.py").read_text())
        f.write("#" * (9 << 20))


SPECIAL = {
    # case: (make, phrase of step 4's message)
    "link_to_reference": (_link_to(ROOT / "solutions" / "step04_softmax.py"),
                          "04_softmax.py is a symbolic link: submit the file itself"),
    "link_to_master_notebook": (_link_to_notebook, "04_softmax.ipynb is a symbolic link: submit the file itself"),
    "link_to_root_only_file": (_link_to("/etc/shadow"), "04_softmax.py is a symbolic link"),
    "link_to_huge_proc_file": (_link_to("/proc/kcore"), "04_softmax.py is a symbolic link"),
    "link_inside_the_submission": (_relative_link, "04_softmax.py is a symbolic link"),
    "fifo": (_fifo, "04_softmax.py is a named pipe (FIFO), not a regular file"),
    "socket": (_socket, "04_softmax.py is a socket, not a regular file"),
    "device": (_device, "04_softmax.py is a device, not a regular file"),
    "huge_file": (_huge, "04_softmax.py is 9.0 MiB, over the limit of 8 MiB for one file"),
}


@ROOT_ONLY
@pytest.mark.parametrize("case", sorted(SPECIAL))
def test_a_special_step_file_is_refused_with_its_reason(case, tmp_path):
    make, phrase = SPECIAL[case]
    sub = honest_folder(tmp_path / "sub")
    make(sub)
    results, out = grade(sub, tmp_path, *ROOMY_TIMEOUT)
    assert results["extra_data"]["steps"]["04_softmax"]["score"] == 0
    messages = step_outputs(results, "04_softmax")
    assert messages and all(phrase in m for m in messages), messages[:1]
    assert_others_full(results)
    assert_nothing_leaked(results)
    assert results["extra_data"]["internal_errors"] == 0


@ROOT_ONLY
def test_a_linked_folder_is_not_followed(tmp_path):
    sub = honest_folder(tmp_path / "sub")
    os.symlink(ROOT / "source" / "self_attention", sub / "notes")     # a folder link to the master notebooks
    results, _ = grade(sub, tmp_path)
    assert step_outputs(results, "04_softmax")[0].startswith("No file for step 4")
    assert_others_full(results)
    assert_nothing_leaked(results)


@ROOT_ONLY
def test_a_tree_nested_a_thousand_deep_is_searched_to_a_cap(tmp_path):
    sub = honest_folder(tmp_path / "sub", without=())
    deep = sub
    for _ in range(1200):
        deep = deep / "d"
        deep.mkdir()
    (deep / "04_softmax.py").write_text("raise SystemExit('found at the bottom')\n")
    try:
        results, _ = grade(sub, tmp_path)
    finally:                                    # shutil.rmtree (pytest's clean-up) recurses once per level
        for _ in range(1200):
            (deep / "04_softmax.py").unlink(missing_ok=True)
            deep.rmdir()
            deep = deep.parent
    assert results["score"] == 50
    assert "Folders nested deeper than 16 levels were not searched." in results["extra_data"]["file_search"]


@ROOT_ONLY
def test_tens_of_thousands_of_entries_are_searched_to_a_cap(tmp_path):
    sub = honest_folder(tmp_path / "sub", without=())
    clutter = sub / "zz_clutter"
    clutter.mkdir()
    for i in range(25_000):
        (clutter / f"f{i}").touch()
    results, _ = grade(sub, tmp_path)
    assert results["score"] == 50                 # the step files sort first, so they are found
    assert any("more than 20000 files" in n for n in results["extra_data"]["file_search"])


@ROOT_ONLY
def test_a_class_with_special_files_grades_everyone_else_exactly(tmp_path):
    """grade-all: a FIFO, a link, a deep tree and a huge file among honest students."""
    root = tmp_path / "class"
    honest_folder(root / "alice", without=())
    _fifo(honest_folder(root / "bob"))
    _link_to(ROOT / "solutions" / "step04_softmax.py")(honest_folder(root / "carol"))
    deep = honest_folder(root / "dave", without=())
    for _ in range(40):
        deep = deep / "d"
    deep.mkdir(parents=True)
    _huge(honest_folder(root / "erin"))
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade-all", str(root), "--results-dir", str(out),
                           "--csv", str(tmp_path / "grades.csv"), "--jobs", "1"],   # one worker: the wall is the subject, not the pool
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    scores = {}
    for student in ("alice", "bob", "carol", "dave", "erin"):
        (found,) = [p for p in out.glob("*/results.json")
                    if json.loads(p.read_text())["extra_data"]["batch"]["student"] == student]
        results = json.loads(found.read_text())
        scores[student] = {k: s["score"] for k, s in results["extra_data"]["steps"].items() if k in STEPS}
        assert_nothing_leaked(results)
    assert all(v == 10 for v in scores["alice"].values()) and all(v == 10 for v in scores["dave"].values())
    for student in ("bob", "carol", "erin"):
        assert scores[student]["04_softmax"] == 0
        assert all(v == 10 for k, v in scores[student].items() if k != "04_softmax")


# ------------------------------------------------------------------ install layouts
def _venv_with_the_kit(tmp_path, how):
    """A venv (like Gradescope's /opt/attention-kit) whose site folder holds the kit installed
    without -e, and reaches numpy and torch through a .pth into the dev venv's site folder."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python3*/site-packages"))
    dev_site = next(p for p in map(Path, sys.path) if p.name == "site-packages" and (p / "numpy").is_dir())
    (site / "deps.pth").write_text(str(dev_site) + "\n")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    tree = tmp_path / "kit"                # built from a copy: a build writes build/ and egg-info beside it
    for part in ("autograder", "solutions", "pyproject.toml", "README.md"):
        (shutil.copytree if (ROOT / part).is_dir() else shutil.copy)(ROOT / part, tree / part)
    if how == "wheel":
        subprocess.run(pip + ["wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "dist"), str(tree)],
                       check=True, capture_output=True)
        target = str(next((tmp_path / "dist").glob("*.whl")))
    else:
        target = str(tree)
    subprocess.run(pip + ["install", "--no-deps", "--no-build-isolation", "--target", str(site), target],
                   check=True, capture_output=True)
    assert (site / "solutions" / "step04_softmax.py").exists() and (site / "autograder" / "suites").is_dir()
    return venv


@ROOT_ONLY
@pytest.mark.parametrize("layout", ["pip_install", "wheel", "gradescope_opt"])
def test_the_installed_kit_is_invisible_to_the_child(layout, tmp_path):
    venv = _venv_with_the_kit(tmp_path, "wheel" if layout == "wheel" else "pip")
    sub = honest_folder(tmp_path / "sub")
    shutil.copy(ROOT / "tests" / "hostile" / "read_installed_kit.04_softmax.py", sub / "04_softmax.py")
    if layout == "gradescope_opt":        # run_autograder: the unpacked zip is the working folder
        source = tmp_path / "source"
        for part in ("autograder", "solutions", "pyproject.toml"):
            (shutil.copytree if (ROOT / part).is_dir() else shutil.copy)(ROOT / part, source / part)
        cwd = source
    else:
        cwd = tmp_path                    # the kit is imported from the venv's site folder
    results, out = grade(sub, tmp_path, python=str(venv / "bin" / "python"), cwd=cwd)
    assert results["extra_data"]["isolation"]["mode"] == "uid", out
    steps = results["extra_data"]["steps"]
    assert steps["04_softmax"]["score"] == 3, step_outputs(results, "04_softmax")[:1]   # zeros: it found nothing
    # what it may still see are the names of covered files (empty now), never a byte of the kit
    printed = steps["04_softmax"]["printed"]
    assert not any(word in printed for word in ("Reference", "Hidden suite", "sha256=", "import ")), printed
    assert_others_full(results)
    assert_nothing_leaked(results)


# ------------------------------------------------------------------ children share nothing
IPC_WRITER = '''
import ctypes, numpy as np
libc = ctypes.CDLL(None, use_errno=True)
seg = libc.shmget(0x5EC2, 4096, 0o1600)
libc.shmat.restype = ctypes.c_void_p
ctypes.memmove(libc.shmat(seg, None, 0), b"step 3 was here", 15)
libc.msgget(0x5EC2, 0o1600)
def scale_scores(scores, d_k):
    return scores / np.sqrt(d_k)
'''
IPC_READER = '''
import ctypes, numpy as np
libc = ctypes.CDLL(None, use_errno=True)
SEEN = [libc.shmget(0x5EC2, 0, 0) != -1, libc.msgget(0x5EC2, 0) != -1]
def softmax(x, axis=-1):
    if any(SEEN):
        return np.zeros_like(x)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
'''


@ROOT_ONLY
def test_two_steps_share_no_ipc(tmp_path):
    sub = honest_folder(tmp_path / "sub", without=("03_scaling", "04_softmax"))
    (sub / "03_scaling.py").write_text(IPC_WRITER)
    (sub / "04_softmax.py").write_text(IPC_READER)
    results, _ = grade(sub, tmp_path)
    assert results["score"] == 50


UID_PROBE = '''
import os, numpy as np
print("uid", os.getuid(), "procs", sorted(p for p in os.listdir("/proc") if p.isdigit()))
open("/tmp/mine", "w").write("x")
os.chmod("/tmp/mine", 0o600)
'''


@ROOT_ONLY
def test_uids_are_never_reused_across_a_batch_of_over_a_hundred_children(tmp_path):
    """One warm grader, 22 submissions of five steps: 110 children, 110 uids, each seeing only itself."""
    sub = tmp_path / "sub"
    sub.mkdir()
    for stem in STEPS:
        (sub / f"{stem}.py").write_text(UID_PROBE + (HONEST / f"{stem}.py").read_text())
    script = ("import json, sys\nfrom autograder.grading import run as grading; from autograder.reports import gradescope_json as report\n"
              "g = grading.Grader()\nout = []\n"
              "for i in range(22):\n"
              f"    r = g.grade(sys.argv[1], None, {STEPS!r})\n"
              "    out.append([s.printed for s in r.steps])\n"
              "g.close()\nprint(json.dumps(out))\n")
    log = tmp_path / "uids.log"
    proc = subprocess.run([sys.executable, "-c", script, str(sub)], cwd=ROOT, capture_output=True, text=True,
                          timeout=900, env=dict(os.environ, ATTENTION_KIT_UID_LOG=str(log)))
    assert proc.returncode == 0, proc.stderr[-3000:]
    printed = [p for sub_out in json.loads(proc.stdout) for p in sub_out]
    uids = [int(p.split()[1]) for p in printed]
    assert len(uids) == 110 and len(set(uids)) == 110
    assert all("procs ['1']" in p for p in printed), "each child sees only its own PID namespace"
    given = [int(u) for u in log.read_text().split()]
    assert set(uids) <= set(given) and len(given) == len(set(given))
    left = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _owner(p) in set(given) and _alive(p)]
    assert not left, [(p.name, _owner(p), _cmdline(p)) for p in left][:5]


def _alive(path):
    """Not a zombie: a process already dead, its exit status not yet collected, is not left running."""
    try:
        return (path / "stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def _cmdline(path):
    try:
        return (path / "cmdline").read_bytes().replace(b"\0", b" ")[:200].decode(errors="replace")
    except OSError:
        return None


def _owner(path):
    try:
        return path.stat().st_uid
    except OSError:
        return None
