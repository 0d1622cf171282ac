"""The parent/child split: whatever the student's code does, the grader reports it and goes on."""
import os
import signal

import numpy as np
import pytest

from autograder import contract
from autograder.checks.student import Student
from autograder.sandbox import protocol
from autograder.sandbox.limits import Limits
from autograder.sandbox.problems import NotDefined, StudentCrashed, StudentRaised, StudentTimedOut
from autograder.sandbox.step_child import StepChild
# at collection: a test that grades a broken suite leaves that suite's conftest in sys.modules
from conftest import ROOMY_SECONDS, ROOT, run_grader

SOFTMAX = contract.step_for_stem("04_softmax")
GOOD = "import numpy as np\ndef softmax(x, axis=-1):\n    e = np.exp(x - x.max(axis, keepdims=True))\n    return e / e.sum(axis, keepdims=True)\n"


def session(tmp_path, code, **limits):
    """A child of step 4 on `code`. Unless a test is about the call limit (and sets it), the limit is
    far above honest need on a loaded machine: a grad request makes this numpy child import torch
    (a default 20 s ran out there, issue 27)."""
    path = tmp_path / "04_softmax.py"
    path.write_text(code)
    return StepChild(SOFTMAX, path, Limits(**{"call_seconds": ROOMY_SECONDS, **limits}))


def call(s, *args):
    return Student(s).call("softmax", *args)


def test_a_correct_call_round_trips(tmp_path):
    s = session(tmp_path, GOOD)
    try:
        got = call(s, np.zeros((2, 3)))
        assert np.allclose(got.array, 1 / 3)
    finally:
        s.close()


def test_the_child_runs_what_the_op_names_and_refuses_an_unknown_op(tmp_path):
    """Requests come from sandbox.protocol with their "op": a grad target that carries a module's
    keys but says "call" is differentiated as the function it names; no op, or an unknown one, is
    refused as the grader's protocol error, never guessed from the other keys."""
    s = session(tmp_path, "def softmax(x, axis=-1):\n    return (x * 2, x * 3)\n")
    try:
        x, cot = np.arange(3.0), [np.ones(3), np.ones(3)]
        target = dict(protocol.function_target("softmax", {"x": x}), init={"kwargs": {}}, params={})
        got = Student(s).grad(target, cot, target)
        assert np.array_equal(got.grads["x"], np.full(3, 5.0)) and got.gradcheck["ok"]
        bogus = protocol.call_request("softmax", [protocol.encode_value(x)], {})
        measured = protocol.measure_request
        for request in ({k: v for k, v in bogus.items() if k != "op"}, dict(bogus, op="nope"),
                        measured(protocol.grad_request(dict(target, op="nope"), cot, target), value=True),
                        # issue 25: the student's code runs inside "measure" only, bare calls are refused
                        bogus, protocol.grad_request(target, cot, target), measured(dict(bogus, op="load"))):
            with pytest.raises(StudentRaised) as info:
                s.request(request, "softmax(...)")
            assert info.value.error["type"] == "GraderProtocolError"
    finally:
        s.close()


def test_sys_exit_at_import_is_caught_and_reported(tmp_path):
    s = session(tmp_path, "import sys\nsys.exit(3)\n" + GOOD)
    with pytest.raises(NotDefined) as info:
        call(s, np.zeros(3))
    assert "Running your file stopped with SystemExit: 3" in str(info.value.student_message())
    s.close()


@pytest.mark.parametrize("code, expected", [
    ("import os\nos._exit(5)\n", "exit code 5"),
    ("import ctypes\nctypes.string_at(0)\n", f"signal {int(signal.SIGSEGV)}"),
])
def test_dying_at_import_fails_every_call_with_the_reason(tmp_path, code, expected):
    s = session(tmp_path, code + GOOD)
    with pytest.raises(StudentCrashed) as info:
        call(s, np.zeros(3))
    assert expected in str(info.value.student_message())
    with pytest.raises(StudentCrashed):        # the load failure is remembered, not retried
        call(s, np.zeros(3))
    s.close()


def test_exceptions_of_every_kind_are_reported_with_the_students_frames(tmp_path):
    s = session(tmp_path, "def softmax(x, axis=-1):\n    raise KeyboardInterrupt('stop')\n")
    with pytest.raises(StudentRaised) as info:
        call(s, np.zeros(3))
    msg = str(info.value.student_message())
    assert "KeyboardInterrupt: stop" in msg and '04_softmax.py", line 2, in softmax' in msg
    assert "runner.py" not in msg
    s.close()


def test_a_call_that_never_returns_times_out_and_the_next_call_gets_a_fresh_child(tmp_path):
    code = GOOD + "def softmax(x, axis=-1, _g=softmax):\n    if x.size > 3:\n        while True:\n            pass\n    return _g(x, axis)\n"
    s = session(tmp_path, code, call_seconds=1.0)
    with pytest.raises(StudentTimedOut) as info:
        call(s, np.zeros(10))
    assert "timed out after 1 s" in str(info.value.student_message())
    assert np.allclose(call(s, np.zeros(3)).array, 1 / 3)
    s.close()


def test_output_is_drained_and_bounded(tmp_path):
    s = session(tmp_path, GOOD + "print('x' * 5_000_000)\n", output_bytes=1000)
    assert np.allclose(call(s, np.zeros(3)).array, 1 / 3)
    s.close()
    printed = str(s.printed())          # the output, then a note (a message) saying how much was cut
    assert printed.startswith("x" * 1000) and "more bytes of output not shown" in printed and len(printed) < 1200


def test_a_missing_function_names_itself(tmp_path):
    s = session(tmp_path, "def soft_max(x):\n    return x\n")
    with pytest.raises(NotDefined) as info:
        call(s, np.zeros(3))
    assert "does not define `softmax`" in str(info.value.student_message())
    s.close()


def test_the_child_cannot_import_the_grader_or_the_references(tmp_path):
    code = ("try:\n    import solutions\n    LEAK = 'solutions'\nexcept ImportError:\n    LEAK = None\n"
            "def softmax(x, axis=-1):\n    return x * 0 + (1 if LEAK else 0)\n")
    s = session(tmp_path, code)
    assert call(s, np.ones(2)).array.tolist() == [0, 0]
    s.close()


def test_the_child_runs_in_its_own_scratch_folder_and_session(tmp_path):
    code = "import os\ndef softmax(x, axis=-1):\n    return x * 0 + [os.getpid(), os.getpgid(0), len(os.getcwd())]\n"
    s = session(tmp_path, code)
    pid, pgid, _ = call(s, np.zeros(3)).array
    assert pid == pgid != os.getpgid(0)           # a session of its own
    scratch = s.child.scratch
    s.close()
    assert not os.path.exists(scratch)            # cleaned up


def test_the_isolation_applied_is_recorded(graded):
    from autograder.sandbox import isolation
    code, out, results = graded("samples/lesson/04_softmax.py")
    info = results["extra_data"]["isolation"]
    assert info["mode"] == isolation.choose_mode()
    assert info["memory_limit_bytes"] == 4 << 30 and info["max_processes"] == 64
    if info["mode"] != "process":
        assert {"mount", "network"} <= set(info["namespaces"]) and info["network"] == "none"


@pytest.mark.skipif(os.geteuid() != 0, reason="forcing each level needs root here")
@pytest.mark.parametrize("level", ["uid", "userns", "process"])
def test_every_isolation_level_grades_correct_code_fully(tmp_path, level):
    code, out, results = run_grader(ROOT / "samples/unusual_style", tmp_path, "--isolation", level,
                                    "--steps", "04_softmax,07_full_module")
    assert code == 0, out
    assert results["score"] == 20 and results["extra_data"]["isolation"]["mode"] == level


@pytest.mark.skipif(__import__("autograder.sandbox.isolation", fromlist=["x"]).choose_mode() == "process",
                    reason="no namespaces here (run as root, or allow user namespaces)")
def test_the_child_sees_no_copy_of_the_kit_anywhere(tmp_path):
    """Not just this checkout's folders: nothing outside the system's, Python's and its own."""
    import sys
    kit = [str(ROOT / name) for name in ("autograder", "solutions", "source", "tests", "samples")]
    # in /tmp the child may see its own folder and the way to the Python (a clone's .venv there)
    python_dirs = [p.split("/")[2] for p in (sys.prefix, sys.base_prefix) if p.startswith("/tmp/")]
    code = ("import os\ndef softmax(x, axis=-1):\n"
            f"    seen = sum(os.path.exists(p) for p in {kit!r} + ['/home', '/work/main/solutions'])\n"
            f"    others = [n for n in os.listdir('/tmp') if not os.getcwd().endswith(n) and n not in {python_dirs!r}]\n"
            "    return x * 0 + seen + len(others)\n")
    s = session(tmp_path, code)
    try:
        assert call(s, np.zeros(2)).array.tolist() == [0, 0]
    finally:
        s.close()


# a module whose forward reads what its cache holds: each chunk's output depends on every earlier token
CACHED = '''
import torch
from torch import nn

class Held:
    def __init__(self):
        self.k = None

    def append(self, k, v):
        self.k = k if self.k is None else torch.cat([self.k, k], 1)
        return self.k, v

    def __len__(self):
        return 0 if self.k is None else self.k.shape[1]

class Summing(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w = nn.Linear(d, d, bias=False)

    def forward(self, x, cache=None):
        y = self.w(x)
        held = y if cache is None else cache.append(y, y)[0]
        return held.sum(1, keepdim=True) * x
'''


def test_a_module_grad_target_with_a_cache_differentiates_every_chunk_through_one_cache(tmp_path):
    """module_target(..., cache=(class, chunks)): forward runs chunk by chunk with one student cache, the
    outputs are the chunks' (one cotangent each), and the gradients flow through what the cache holds."""
    import torch
    (tmp_path / "05_kv_cache.py").write_text(CACHED)
    s = StepChild(contract.step_for_stem("05_kv_cache"), tmp_path / "05_kv_cache.py", Limits(call_seconds=ROOMY_SECONDS))
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((1, 3, 2)), rng.standard_normal((2, 2))
    cot = [rng.standard_normal((1, n, 2)) for n in (2, 1)]
    try:
        target = protocol.module_target("Summing", {"d": 2}, {"w.weight": w}, x, cache=("Held", [2, 1]))
        got = Student(s).grad(target, cot, target)
    finally:
        s.close()
    xt, wt = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    y = xt @ wt.T
    outs = [y[:, :2].sum(1, keepdim=True) * xt[:, :2], y.sum(1, keepdim=True) * xt[:, 2:]]
    expected = torch.autograd.grad(sum((o * torch.tensor(c)).sum() for o, c in zip(outs, cot)), [xt, wt])
    assert [item.array.shape for item in got.value.items] == [(1, 2, 2), (1, 1, 2)]
    assert np.allclose(got.grads["x"], expected[0].numpy()) and np.allclose(got.grads["w.weight"], expected[1].numpy())
    assert got.gradcheck["ok"]


def assert_an_honest_torch_file_loads_in_0_2_s(tmp_path):
    """A torch step's child loads `import torch` under a 0.2 s limit; returns the step."""
    step = next(s for s in contract.ASSIGNMENTS["modern_attention"] if s.framework == "torch")
    honest = tmp_path / "honest.py"
    honest.write_text("import torch\nx = torch.zeros(3)\n")
    s = StepChild(step, honest, Limits(call_seconds=0.2))
    try:
        s._ensure_child()
        assert s.load_reply["ok"] and "x" in s.load_reply["defined"]
    finally:
        s.close()
    return step


def test_the_load_limit_counts_from_when_the_child_runs_the_file_not_from_its_start(tmp_path):
    """A cold torch child spends its first second or more starting Python and importing torch:
    the kit's time, not the student's. A 0.2 s limit still lets an honest file load, on any
    machine however busy; a file that loops at import still times out."""
    step = assert_an_honest_torch_file_loads_in_0_2_s(tmp_path)
    looping = tmp_path / "looping.py"
    looping.write_text("import torch\nwhile True:\n    pass\n")
    s = StepChild(step, looping, Limits(call_seconds=0.2))
    try:
        with pytest.raises(StudentTimedOut) as info:
            s._ensure_child()
        assert "(loading it) timed out after 0.2 s" in str(info.value.student_message())
    finally:
        s.close()


def test_a_zygote_still_importing_torch_costs_the_student_nothing(tmp_path):
    """The first child of a process waits for its zygote to be ready (importing torch: a second or
    more): that wait is the kit's, so a 0.2 s load limit still lets an honest file load."""
    from autograder.sandbox import zygote
    zygote.stop()
    zygote.start(("torch",))             # just started: its `import torch` has only begun
    try:
        assert_an_honest_torch_file_loads_in_0_2_s(tmp_path)
    finally:
        zygote.stop()


def test_a_steps_child_imports_are_imported_once_in_the_zygote_and_inherited(tmp_path):
    """Decoder step 6's calls build a torch.optim.SGD, whose first use imports torch._dynamo (about a
    second): the step names it in contract.Step.child_imports, the zygote imports it before it forks,
    and every child of the step starts with it. A step that names nothing gets nothing extra."""
    import dataclasses
    from autograder.sandbox import zygote
    step = contract.step_for_stem("06_training")
    assert step.child_imports == ("torch._dynamo",)
    probe = tmp_path / "06_training.py"
    probe.write_text("import sys, torch\nAT_LOAD = float('torch._dynamo' in sys.modules)\n"
                     "def lm_loss(logits, tokens, attention_mask=None):\n    return torch.tensor(AT_LOAD)\n")
    seen = {}
    zygote.stop()
    zygote.start(("torch",))
    try:
        for label, which in (("none", dataclasses.replace(step, child_imports=())), ("named", step)):
            s = StepChild(which, probe, Limits(call_seconds=ROOMY_SECONDS))
            try:
                seen[label] = float(Student(s).call("lm_loss", np.zeros((1, 2, 3)), np.zeros((1, 2), np.int64)).array)
            finally:
                s.close()
    finally:
        zygote.stop()
    assert seen == {"none": 0.0, "named": 1.0}


def test_an_error_reply_to_loading_says_its_error_not_just_malformed():
    """A well-formed {"ok": false, "error"} answer to "load" (the runner failed around the file) is
    refused like any bad reply, but with its own words, so that the cause can be found."""
    from autograder.i18n import render
    from autograder.sandbox.problems import BadReply
    with pytest.raises(BadReply) as info:
        protocol.checked_load_reply({"ok": False, "error": {"type": "UnsendableResult", "message": "x" * 5000}})
    text = render(info.value.args[0], "en")
    assert "UnsendableResult: xxx" in text and len(text) < 500
    with pytest.raises(BadReply) as info:
        protocol.checked_load_reply({"ok": True})
    assert render(info.value.args[0], "en") == "malformed reply to loading the file"


def test_a_bad_load_reply_is_retried_once_in_a_fresh_child(tmp_path):
    """An honest child's bad answer to "load" (a rare failure of the kit's own) costs nothing: a
    fresh child loads the file once more, and the first answer is left for the instructor. Here
    the first child forges its load reply and leaves a mark; the second sees the mark and is
    honest. A file that forges every time still gets the bad reply's verdict (the hostile corpus's
    forge_load)."""
    mark = tmp_path / "forged-once"
    forge = ("import json, os, struct, sys\n"
             f"if not os.path.exists({str(mark)!r}):\n"
             f"    open({str(mark)!r}, 'w').close()\n"
             "    body = json.dumps({'ok': True}).encode()\n"
             "    os.write(int(sys.argv[2]), struct.pack('>II', len(body), 0) + body)\n")
    s = session(tmp_path, forge + GOOD, isolation="none-unsafe")
    try:
        with pytest.warns(UserWarning, match="malformed reply to loading the file; loaded once more"):
            got = call(s, np.zeros((2, 3)))
        assert np.allclose(got.array, 1 / 3) and mark.exists()
    finally:
        s.close()
