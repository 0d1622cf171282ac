"""The child side: runs ONE student step file and answers the grader's calls.

Started by the grader as `python -I runner.py REQUEST_FD REPLY_FD FRAMEWORK` in a scratch folder,
with this file and wire.py copied beside it. It never sees the hidden suites, the references or
the score: it receives inputs, calls the student's code, and sends back what came out, as plain
data. Everything it sends is treated by the grader as untrusted.

Requests (one JSON message each) and replies:
  {"op": "load", "path", "display"}    -> {"ok", "defined", "cell_errors"}
  {"op": "call", "name", "args", "kwargs"}            -> {"ok", "value", "mutated"} | {"ok": false, "error"}
  {"op": "module", "name", "init", "params", "input", "device", "dtype"}
                                                      -> {"ok", "value", "params"} | {"ok": false, "error"}
"""
import os
import signal
import sys


def enter_pid_namespace(keep_fds):
    """The grader started us with a new PID namespace for our children: fork once, so the
    student's code runs as that namespace's first process. When it dies, or is killed, the
    kernel kills every process it started. This outer process only waits and passes on how
    the inner one ended."""
    pid = os.fork()
    if pid == 0:
        # a process group of our own: kill(0, ...) from student code cannot reach the outer process
        os.setpgid(0, 0)
        return
    for fd in keep_fds + [0, 1, 2]:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


# Before anything else, and before numpy starts threads: a process whose children go to a new
# PID namespace cannot create threads itself, so the fork must come first.
if __name__ == "__main__" and os.environ.get("ATTENTION_KIT_PIDNS") == "1":
    enter_pid_namespace([int(sys.argv[1]), int(sys.argv[2])])

import json  # noqa: E402
import linecache  # noqa: E402
import traceback  # noqa: E402
import types  # noqa: E402

import numpy as np  # noqa: E402

# -I keeps this folder off sys.path; wire.py sits beside this file
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wire  # noqa: E402
del sys.path[0]

# Grading code that must not be importable from here, whatever sys.path says.
BLOCKED_PACKAGES = ("autograder", "solutions")


class _Blocker:
    """A meta-path finder that refuses the kit's own packages (defence in depth: the real
    barrier is that the child cannot read those files when run under its own uid)."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED_PACKAGES:
            raise ImportError(f"'{name}' is not available to submissions")
        return None


STUDENT = types.ModuleType("submission")   # the student's namespace
STUDENT_FILES = set()                      # filenames that count as the student's own frames


# ------------------------------------------------------------------ loading
def _is_test_cell(cell):
    """Cells the grader must not run: nbgrader test cells, visible tests and demos."""
    meta = (cell.get("metadata") or {}).get("nbgrader") or {}
    grade_id = str(meta.get("grade_id", ""))
    if meta.get("grade") and not meta.get("solution"):
        return True
    return grade_id.endswith("_tests") or grade_id.endswith("_demo")


def _cell_code(cell):
    src = cell.get("source", "")
    if isinstance(src, list):
        src = "".join(src)
    # IPython magics and shell escapes are not Python; drop them
    lines = [ln for ln in str(src).split("\n") if not ln.lstrip().startswith(("%", "!", "?"))]
    return "\n".join(lines)


def _run(code, filename):
    """Compile and run `code` in the student's namespace; remember its lines for tracebacks."""
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    STUDENT_FILES.add(filename)
    exec(compile(code, filename, "exec"), STUDENT.__dict__)


def load(path, display):
    """Run the student's file. Errors are recorded, and grading goes on with what was defined."""
    errors = []
    if path.endswith(".ipynb"):
        with open(path, encoding="utf-8") as f:
            nb = json.load(f)
        cells = [c for c in nb.get("cells", []) if c.get("cell_type") == "code"]
        for i, cell in enumerate(cells, 1):
            if _is_test_cell(cell):
                continue
            name = f"{display}, code cell {i}"
            try:
                _run(_cell_code(cell), name)
            except BaseException as exc:  # SystemExit and KeyboardInterrupt included
                errors.append(student_error(exc))
    else:
        with open(path, encoding="utf-8") as f:
            code = f.read()
        try:
            _run(code, display)
        except BaseException as exc:
            errors.append(student_error(exc))
    defined = sorted(k for k in STUDENT.__dict__ if not k.startswith("__"))
    return {"ok": True, "defined": defined[:500], "cell_errors": errors}


# ------------------------------------------------------------------ errors
def student_error(exc):
    """The exception as the student should see it: their own frames only."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename in STUDENT_FILES]
    try:
        text = "".join(traceback.format_list(frames[-8:]))
        text += "".join(traceback.format_exception_only(type(exc), exc))
        message = str(exc)
    except BaseException:  # an exception whose __str__ fails
        text, message = f"{type(exc).__name__} (its message could not be shown)", ""
    return {"type": type(exc).__name__, "message": message[:2000], "traceback": text[-4000:]}


# ------------------------------------------------------------------ calls
def _to_value(rec):
    """Decode an input record into what the student receives: ndarray or torch tensor."""
    if rec.get("t") == "scalar":
        return rec["value"]
    if rec.get("t") == "seq":
        return [_to_value(r) for r in rec["items"]]
    arr = wire.decode_array(rec)
    if rec.get("kind") != "tensor":
        return arr
    import torch
    t = torch.from_numpy(arr)
    if rec.get("cast"):
        t = t.to(getattr(torch, rec["cast"]))
    return t.to(rec.get("device") or "cpu")


def _fingerprint(x):
    """Bytes of an input, to tell whether the student's code changed it in place."""
    try:
        if isinstance(x, np.ndarray):
            return x.tobytes()
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(x, torch.Tensor):
            return x.detach().cpu().numpy().tobytes()
    except BaseException:
        return None
    return None


class NotDefined(Exception):
    """The student's file does not define the name the grader asked for."""


def _lookup(name):
    if name not in STUDENT.__dict__:
        raise NotDefined(name)
    return STUDENT.__dict__[name]


def call(req):
    fn = _lookup(req["name"])
    args = [_to_value(r) for r in req.get("args", [])]
    kwargs = {k: _to_value(r) for k, r in req.get("kwargs", {}).items()}
    before = [_fingerprint(a) for a in args]
    value = fn(*args, **kwargs)
    mutated = [i for i, a in enumerate(args) if before[i] is not None and _fingerprint(a) != before[i]]
    return {"ok": True, "value": wire.encode(value), "mutated": mutated}


def module(req):
    """Build the student's nn.Module, load the grader's parameters by name, run forward."""
    import torch
    cls = _lookup(req["name"])
    init = req.get("init", {})
    mod = cls(*[_to_value(r) for r in init.get("args", [])],
              **{k: _to_value(r) for k, r in init.get("kwargs", {}).items()})
    own = dict(mod.named_parameters())
    shapes = {k: list(p.shape) for k, p in own.items()}
    wanted = req.get("params", {})
    missing = sorted(set(wanted) - set(own))
    wrong = sorted(k for k in wanted if k in own and list(own[k].shape) != wanted[k]["shape"])
    if missing or wrong:
        return {"ok": True, "value": None, "params": shapes}
    # convert first, then copy: float64 checks get the grader's float64 weights unrounded
    mod = mod.to(dtype=getattr(torch, req.get("dtype", "float32")))
    own = dict(mod.named_parameters())
    with torch.no_grad():
        for name, rec in wanted.items():
            own[name].copy_(torch.from_numpy(wire.decode_array(rec)))
    mod = mod.to(device=req.get("device", "cpu"))
    mod.eval()                      # a student's dropout must not make the output random
    x = _to_value(req["input"])
    value = mod(x)
    return {"ok": True, "value": wire.encode(value), "params": shapes}


HANDLERS = {"call": call, "module": module}


def handle(req):
    op = req.get("op")
    if op == "load":
        return load(req["path"], req["display"])
    if op not in HANDLERS:
        return {"ok": False, "error": {"type": "GraderProtocolError", "message": f"unknown op {op!r}",
                                       "traceback": ""}}
    try:
        return HANDLERS[op](req)
    except NotDefined as exc:
        return {"ok": False, "missing": exc.args[0]}
    except BaseException as exc:  # SystemExit, KeyboardInterrupt, anything the student raises
        return {"ok": False, "error": student_error(exc)}


def main():
    serve(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])


def serve(request_fd, reply_fd, framework):
    """The request loop; also entered directly by a child forked from the zygote (zygote.py)."""
    sys.meta_path.insert(0, _Blocker())
    sys.modules["submission"] = STUDENT
    if framework == "torch":
        import torch
        # references are float64; keep float32 matmuls in full precision on GPUs too
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    while True:
        req = wire.receive(request_fd)
        if req is None:           # the grader closed the pipe: we are done
            return
        reply = handle(req)
        try:
            wire.send(reply_fd, reply)
        except (TypeError, ValueError) as exc:   # something unencodable slipped through
            wire.send(reply_fd, {"ok": False, "error": {"type": "UnsendableResult",
                                                        "message": str(exc)[:500], "traceback": ""}})


if __name__ == "__main__":
    main()
