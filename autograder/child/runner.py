"""The child side: runs ONE student step file and answers the grader's calls.

Started by the grader as `python -I runner.py REQUEST_FD REPLY_FD FRAMEWORK` in a scratch folder,
with this file and wire.py copied beside it. It never sees the hidden suites, the references or
the score: it receives inputs, calls the student's code, and sends back what came out, as plain
data. Everything it sends is treated by the grader as untrusted.

Requests (one JSON message each, built by the grader's sandbox/protocol.py) and replies; every
request names its operation in "op", and only "op" decides what runs. The student's code is only
ever called inside a "measure" request (its "request" one of the calls below, MEASURED_HANDLERS):
sent bare, those calls are refused:
  {"op": "load", "path", "display"}    -> {"ok", "defined", "cell_errors"}
  {"op": "call", "name", "args", "kwargs"}            -> {"ok", "value", "mutated"} | {"ok": false, "error"}
  {"op": "module", "name", "init", "params", "input", "device", "dtype"}
                                                      -> {"ok", "value", "params", "mutated"} | {"ok": false, "error"}
                                                      (with "cache": {"cls", "chunks"}: forward over x in
                                                       chunks with one student cache, see _decoder; with
                                                       "forward": {"kwargs", "chunked"}: forward's keyword
                                                       arguments, see _forward_kwargs)
  {"op": "cache", "cls", "appends": [[k, v], ...]}   -> {"ok", "value", "mutated"}   (see cache())
  {"op": "grad", "target": {"op": "call" | "module", ...}, "cotangents", "small"}   (see grad())
                                                      -> {"ok", "value", "grads", "mutated", "gradcheck", ...}
  {"op": "model_calls", "name", "init", "params", "device", "dtype", "cache_fn", "lr", "seed", "calls", "read",
   "cotangents"}
                                                      -> {"ok", "value", "params", "mutated"}   (measured only;
                                                      see model_calls(): a prefill then decode steps, ...)
  {"op": "measure", "request": <a call or module request>, "forbidden": [dotted names], "count",
   "python_memory", "precision"}
                                                      -> {"ok", "meters", "params"}   (see measure())
"""
import contextlib
import io
import json
import linecache
import os
import signal
import sys
import time
import traceback
import types

import numpy as np

# -I keeps this folder off sys.path; wire.py sits beside this file
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wire  # noqa: E402
import meters  # noqa: E402  (before any student code: it keeps the real sys.settrace)
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
    """Cells the grader must not run: nbgrader test cells, visible tests and demos (the same rule as
    submitted_files.is_test_cell, which the child cannot import; a test holds them equal)."""
    meta = cell.get("metadata") or {}
    meta = (meta.get("nbgrader") if isinstance(meta, dict) else None) or {}
    if not isinstance(meta, dict):          # a student's notebook may hold anything here
        meta = {}
    grade_id = str(meta.get("grade_id", ""))
    if meta.get("grade") and not meta.get("solution"):
        return True
    return grade_id.endswith("_tests") or grade_id.endswith("_demo")


def _cell_source(cell):
    src = cell.get("source", "")
    return "".join(str(x) for x in src) if isinstance(src, list) else str(src)


# ------------------------------------------------------------------ notebooks, as Jupyter runs them
# A notebook's code cells are IPython, not Python: line magics (`%time x = f()`), cell magics
# (`%%bash`), shell escapes (`!ls`, `files = !ls`), help (`obj?`, `obj??`), and all of these only
# where IPython gives them a meaning (at the start of a statement, not on a continuation line
# inside brackets or a string). IPython's own TransformerManager turns each cell into the Python
# the kernel runs, calling `get_ipython()` for every magic, shell escape and help request; `_Shell`
# below is that `get_ipython()`: it runs what Jupyter runs as Python in the kernel's namespace
# (%time, %%time, %%capture, %prun, %%prun) and neutralises the rest with a note in the student's
# output (a shell command, a file written, a timing loop, another language's cell).
#
# Why the transformation happens here, in the child, and not in the grader: the cell text is
# untrusted, and IPython's transformer re-tokenizes the whole cell once per magic it rewrites (up
# to 500 times), so a hostile cell can cost minutes of CPU. In the child that cost falls under the
# step's own CPU, memory and time limits and stops nothing but that step; in the grader it would
# stall a whole batch. Nothing of it crosses back (the load reply is the usual names and errors),
# and IPython is a library like numpy, not the kit: the child still imports nothing of the kit.
# The trusted side makes the same transformation for similarity (submitted_files.python_that_runs,
# within a cost budget): these two sets and _cell_source are held equal to its own by a test.
RUN_LINE_MAGICS = {"time", "prun"}                       # run their statement in the namespace
RUN_CELL_MAGICS = {"time", "capture", "prun"}            # run their body, as Python, in the namespace
# magics that change only how Jupyter shows things or reloads modules, or ask for help: nothing to
# run and nothing worth a note
QUIET_MAGICS = {"matplotlib", "config", "load_ext", "reload_ext", "autoreload", "aimport", "precision",
                "xmode", "pprint", "colors", "pinfo", "pinfo2", "pdef", "pdoc", "psource", "pfile",
                "psearch", "who", "whos", "who_ls", "lsmagic", "magic", "page", "pwd", "history", "hist"}
# cell magics whose body is another language, or text, or a file's content: never Python here
NOT_PYTHON_CELLS = {"bash", "sh", "script", "html", "HTML", "javascript", "js", "latex", "markdown", "svg",
                    "writefile", "file", "perl", "ruby", "python", "python2", "python3", "pypy", "sx",
                    "system", "!"}
_TRANSFORMER = None
_CELL = [""]                      # the name of the cell running, for notes and nested code


def _ipython_code(source):
    """The Python IPython runs for one cell (IPython's TransformerManager); the cell unchanged when
    IPython cannot read it, so that compiling it gives the student Python's own SyntaxError."""
    global _TRANSFORMER
    if _TRANSFORMER is None:
        try:
            from IPython.core.inputtransformer2 import TransformerManager
            _TRANSFORMER = TransformerManager()
        except ImportError:        # a grader installed without IPython (a runtime dependency of the kit)
            _TRANSFORMER = False
            _note("IPython is not installed where the grader runs: the cells ran as plain Python.")
    if not _TRANSFORMER:
        return source
    try:
        return _TRANSFORMER.transform_cell(source)
    except Exception:
        return source


def _note(text):
    print(f"attention-kit: {_CELL[0]}: {text}", flush=True)


class _Captured:
    """What `%%capture name` assigns: the text printed by the cell's body."""

    def __init__(self, stdout, stderr):
        self.stdout, self.stderr, self.outputs = stdout, stderr, []

    def show(self):
        sys.stdout.write(self.stdout)
        sys.stderr.write(self.stderr)

    __call__ = show


class _Shell:
    """The `get_ipython()` a transformed cell calls. See the comment above."""

    def run_line_magic(self, magic, line, _stack_depth=1):
        if magic in RUN_LINE_MAGICS:
            return _run_statement(line, f"%{magic}")
        if magic not in QUIET_MAGICS:
            _note(f"`%{magic}{' ' + line if line else ''}` was not run: the grader runs your Python, "
                  "not IPython's magics (Jupyter would have).")
        return None

    def run_cell_magic(self, magic, line, cell):
        if magic in RUN_CELL_MAGICS:
            if magic != "capture":
                return _run_statement(cell, f"%%{magic}")
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                _run_statement(cell, "%%capture")
            names = [w for w in line.split() if not w.startswith("-")]
            if names:
                STUDENT.__dict__[names[-1]] = _Captured(out.getvalue(), err.getvalue())
            return None
        if magic in NOT_PYTHON_CELLS:
            _note(f"this `%%{magic}` cell is not Python, so the grader did not run it (its body is "
                  f"{'a file Jupyter would write' if magic in ('writefile', 'file') else 'run elsewhere, or shown'}; "
                  "nothing in it counts for the step).")
        else:
            _note(f"this `%%{magic}` cell was not run: the grader runs Python cells, not IPython's "
                  "magics; nothing in it counts for the step.")
        return None

    def system(self, cmd):
        _note(f"the shell command `!{cmd}` was not run (the grader runs no shell commands).")

    def getoutput(self, cmd, split=True, depth=0):
        _note(f"the shell command `!{cmd}` was not run (the grader runs no shell commands): its output is empty.")
        return [] if split else ""

    def transform_cell(self, source):
        return _ipython_code(source)


def _run_statement(source, magic):
    """Run the Python of a %time / %%time / %%capture / %prun body in the student's namespace, as
    IPython would: an expression gives its value (`x = %time f()`)."""
    code = _ipython_code(source)
    filename = f"{_CELL[0]} ({magic})"
    try:
        compiled = compile(code, filename, "eval")
    except SyntaxError:
        _run(code, filename)
        return None
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    STUDENT_FILES.add(filename)
    return eval(compiled, STUDENT.__dict__)


def _display(*objs, **kwargs):
    """Jupyter's `display`, a builtin in every notebook: the grader prints what it would show."""
    for obj in objs:
        print(repr(obj))


INJECTED = {"get_ipython": lambda: _SHELL, "display": _display}   # names Jupyter gives every notebook
_SHELL = _Shell()


def _run(code, filename):
    """Compile and run `code` in the student's namespace; remember its lines for tracebacks."""
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    STUDENT_FILES.add(filename)
    exec(compile(code, filename, "exec"), STUDENT.__dict__)


class NotANotebook(ValueError):
    """A .ipynb file that is JSON but not a notebook (`[]`, a number, cells that are no list)."""


def load(path, display):
    """Run the student's file. Errors are recorded, and grading goes on with what was defined."""
    errors = []
    if path.endswith(".ipynb"):
        try:      # a malformed notebook is the student's problem, told like any error in their file
            with open(path, encoding="utf-8") as f:
                nb = json.load(f)
            if not isinstance(nb, dict) or not isinstance(nb.get("cells", []), list):
                raise NotANotebook("it is JSON, but not a notebook (an object with a list of cells)")
            cells = [c for c in nb["cells"] if isinstance(c, dict) and c.get("cell_type") == "code"] if "cells" in nb else []
        except BaseException as exc:
            errors.append({"type": type(exc).__name__, "message": f"{display} is not a readable notebook: {exc}"[:2000],
                           "traceback": ""})
            cells = []
        if cells:
            STUDENT.__dict__.update(INJECTED)
        for i, cell in enumerate(cells, 1):
            if _is_test_cell(cell):
                continue
            name = f"{display}, code cell {i}"
            _CELL[0] = name
            try:
                _run(_ipython_code(_cell_source(cell)), name)
            except BaseException as exc:  # SystemExit and KeyboardInterrupt included
                errors.append(student_error(exc))
    else:
        try:
            with open(path, encoding="utf-8") as f:
                code = f.read()
            _run(code, display)
        except BaseException as exc:
            errors.append(student_error(exc))
    defined = sorted(k for k, v in STUDENT.__dict__.items()
                     if not k.startswith("__") and INJECTED.get(k) is not v)
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


def _direct(fn, *args, **kwargs):
    return fn(*args, **kwargs)


def call(req, run=_direct, reply_value=True):
    """reply_value=False (measuring): neither the value nor changes to the inputs are sent back."""
    fn = _lookup(req["name"])
    args = [_to_value(r) for r in req.get("args", [])]
    kwargs = {k: _to_value(r) for k, r in req.get("kwargs", {}).items()}
    if not reply_value:
        run(fn, *args, **kwargs)
        return {"ok": True}
    before = [_fingerprint(a) for a in args]
    value = run(fn, *args, **kwargs)
    mutated = [i for i, a in enumerate(args) if before[i] is not None and _fingerprint(a) != before[i]]
    return {"ok": True, "value": wire.encode(value), "mutated": mutated}


def module(req, run=_direct, reply_value=True):
    """Build the student's nn.Module, load the grader's parameters by name, run forward."""
    mod, shapes = _build_module(req)
    if mod is None:
        return {"ok": True, "value": None, "params": shapes}
    x = _to_value(req["input"])
    kwargs = _forward_kwargs(req)
    if req.get("cache"):
        fn = _decoder(mod, req["cache"], kwargs)
    else:
        fn = (lambda x: mod(x, **{k: v for k, (v, _how) in kwargs.items()})) if kwargs else mod
    if not reply_value:
        run(fn, x)
        return {"ok": True, "value": None, "params": shapes}
    watched = {"x": x, **dict(mod.named_parameters())}
    before = {n: _fingerprint(t) for n, t in watched.items()}
    value = run(fn, x)
    mutated = [n for n, t in watched.items() if before[n] is not None and _fingerprint(t) != before[n]]
    return {"ok": True, "value": wire.encode(value), "params": shapes, "mutated": mutated[:100]}


def _forward_kwargs(req):
    """forward's keyword arguments of a module request, {name: value} ({} without "forward"), each
    with how a cached run gives it to each chunk: "chunk" (its last axis cut to the chunk's tokens:
    positions), "prefix" (cut to the tokens so far: a key mask), else whole."""
    spec = req.get("forward") or {}
    chunked = spec.get("chunked") or {}
    return {str(k): (_to_value(r), chunked.get(k)) for k, r in (spec.get("kwargs") or {}).items()}


def _record_appends(cache):
    """The keys the student's code hands to cache.append, recorded (detached copies) as it is called:
    the cache's own method wrapped on the instance. [] when the instance refuses the attribute."""
    seen, real = [], cache.append

    def append(k, v, *args, **kwargs):
        seen.append(k.detach().clone() if hasattr(k, "detach") else k)
        return real(k, v, *args, **kwargs)
    try:
        cache.append = append
    except Exception:             # __slots__, a property: nothing recorded, which the grader reads as such
        pass
    return seen


def _decoder(mod, spec, kwargs=None):
    """forward(x) run over x's time axis (dim 1) in spec["chunks"] pieces, one cache of the student's
    class spec["cls"] passed to every call (a KV cache: prefill, then new tokens), with forward's
    keyword arguments cut to each chunk as _forward_kwargs says.
    Returns decode(x) -> ((out of each chunk), [len(cache) after each chunk]), and with spec["record"]
    a third item: (the keys passed to cache.append, in order)."""
    cache_cls, chunks = _lookup(spec["cls"]), [int(n) for n in spec["chunks"]]
    kwargs = kwargs or {}

    def cut(value, how, start, n):
        return value[..., start:start + n] if how == "chunk" else value[..., :start + n] if how == "prefix" else value

    def decode(x):
        cache, outs, lengths, start = cache_cls(), [], [], 0
        appended = _record_appends(cache) if spec.get("record") else None
        for n in chunks:
            kw = {k: cut(v, how, start, n) for k, (v, how) in kwargs.items()}
            outs.append(mod(x[:, start:start + n], cache, **kw))
            lengths.append(len(cache))
            start += n
        return (tuple(outs), lengths) if appended is None else (tuple(outs), lengths, tuple(appended))
    return decode


def cache(req, run=_direct, reply_value=True):
    """The student's cache class on its own: cls(), then append(k, v) for each pair of req["appends"].
    Value: ([what each append returned], [len(cache) before any append and after each])."""
    cls = _lookup(req["cls"])
    pairs = [[_to_value(r) for r in pair] for pair in req["appends"]]

    def fill():
        held = cls()
        returned, lengths = [], [len(held)]
        for k, v in pairs:
            returned.append(held.append(k, v))
            lengths.append(len(held))
        return returned, lengths
    value = run(fill)
    return {"ok": True, "value": wire.encode(value) if reply_value else None, "mutated": []}


def _build_module(req):
    """The student's module `name(**init)` holding the grader's `params`, in eval mode.

    Returns (module, {parameter name: shape}); module is None when the parameters did not fit.
    """
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
        return None, shapes
    # convert first, then copy: float64 checks get the grader's float64 weights unrounded
    mod = mod.to(dtype=getattr(torch, req.get("dtype", "float32")))
    own = dict(mod.named_parameters())
    with torch.no_grad():
        for name, rec in wanted.items():
            own[name].copy_(torch.from_numpy(wire.decode_array(rec)))
    mod = mod.to(device=req.get("device", "cpu"))
    mod.eval()                      # a student's dropout must not make the output random
    return mod, shapes


def model_calls(req, run=_direct, reply_value=True):
    """A sequence of calls on one object state (the decoder's steps): the student's module
    `name(**init)` holding the grader's params (none when "name" is None), one cache from the
    student's `cache_fn(model)`, an SGD optimizer over the module's parameters (req["lr"]) and a
    torch.Generator seeded with req["seed"], gradients on when req["grad"]; each call is {"fn": a function of the student's, or
    None for the module's forward, "args", "kwargs", "fresh": a new cache first}, where an argument
    {"t": "ref", "name": "model" | "cache" | "optimizer" | "generator"} is that object.
    Value: ((what each call returned), [len(cache[0]) after each call, or None], (the module's
    parameters named in req["read"], after the calls), (4 integers the generator draws after the calls:
    how many numbers the calls drew))."""
    import torch
    mod, shapes = (None, {}) if req.get("name") is None else _build_module(req)
    if req.get("name") is not None and mod is None:
        return {"ok": True, "value": None, "params": shapes}
    state = {"model": mod, "cache": None, "optimizer": None, "generator": None}
    if req.get("seed") is not None:
        state["generator"] = torch.Generator(device=req.get("device", "cpu")).manual_seed(int(req["seed"]))
    if req.get("lr") is not None:
        state["optimizer"] = torch.optim.SGD(mod.parameters(), lr=float(req["lr"]))
    calls = []
    for c in req.get("calls", []):
        calls.append((c.get("fn"), list(c.get("args", [])), dict(c.get("kwargs", {})), bool(c.get("fresh"))))
    functions = {fn: _lookup(fn) for fn, *_rest in calls if fn is not None}
    new_cache = _lookup(req["cache_fn"]) if req.get("cache_fn") else None

    def value_of(rec):
        return state[rec["name"]] if rec.get("t") == "ref" else _to_value(rec)

    def sequence():
        # the meters run everything under no_grad: a training sequence ("grad") turns it back on
        with (torch.enable_grad() if req.get("grad") else contextlib.nullcontext()):
            done = steps()
            if req.get("cotangents") is not None:     # a gradient check: "read" gets the gradients, not the values
                state["grads"] = _call_grads(done[0], [_to_value(r) for r in req["cotangents"]],
                                             dict(mod.named_parameters()), req.get("read", []))
            return done

    def steps():
        outs, lengths = [], []
        for fn, args, kwargs, fresh in calls:
            if new_cache is not None and (fresh or state["cache"] is None):
                state["cache"] = new_cache(mod)
            f = mod if fn is None else functions[fn]
            outs.append(f(*[value_of(r) for r in args], **{k: value_of(r) for k, r in kwargs.items()}))
            cache = state["cache"]
            lengths.append(len(cache[0]) if cache is not None and len(cache) else None)
        return tuple(outs), lengths
    outs, lengths = run(sequence)
    if not reply_value:
        return {"ok": True, "value": None, "params": shapes}
    own = dict(mod.named_parameters()) if mod is not None else {}
    read = tuple(own[n].detach() if n in own else None for n in req.get("read", []))
    if "grads" in state:
        read = state["grads"]
    g = state["generator"]
    drawn = torch.randint(0, 1 << 30, (4,), generator=g, device=g.device) if g is not None else None
    return {"ok": True, "value": wire.encode((outs, lengths, read, drawn)), "params": shapes, "mutated": []}


# ------------------------------------------------------------------ gradients
def _call_grads(outs, cotangents, params, names):
    """The gradients of sum_i <outs[i], cotangents[i]> by the parameters named (None where a name is not
    one, or the gradient does not reach it): model_calls' gradient check."""
    import torch
    live = [(o, torch.as_tensor(c).to(o.dtype)) for o, c in zip(outs, cotangents)
            if isinstance(o, torch.Tensor) and o.requires_grad and o.shape == c.shape]
    wanted = [params[n] for n in names if n in params]
    if not live or not wanted:
        return tuple(None for _n in names)
    got = iter(torch.autograd.grad(sum((o * c).sum() for o, c in live), wanted, allow_unused=True))
    grads = {n: next(got) for n in names if n in params}
    return tuple(None if grads.get(n) is None else grads[n].detach() for n in names)


def _leaf(rec):
    """A float64 CPU tensor that requires grad, from an input record."""
    import torch
    return torch.from_numpy(wire.decode_array(rec)).to(torch.float64).requires_grad_(True)


class ProtocolError(Exception):
    """A request the runner does not know (only a grader of another version sends one)."""


def _target(req):
    """The student's code as run(*tensors), and the float64 leaves it is differentiated by.

    A function: {"op": "call", "name", "names", "inputs", "extra"}: leaves are the inputs, in
    order; `extra` are further arguments (num_heads). A module: {"op": "module", "name", "init",
    "params", "inputs": [x]}: leaves are "x" then the module's own parameters (leaves already),
    which run() swaps for the tensors it is given (torch.func.functional_call) unless they are
    those parameters. With "cache": {"cls", "chunks"} forward runs over x chunk by chunk with one
    student cache (as a module request's, see _decoder), and run() returns the chunks' outputs.
    Returns (run, leaves {name: tensor}, module's {parameter: shape} or None); run is None when
    the module's parameters did not fit.
    """
    if req.get("op") not in ("call", "module"):
        raise ProtocolError(f"grad: unknown target {str(req.get('op'))[:40]!r}")
    import torch
    if req["op"] == "call":
        fn = _lookup(req["name"])
        leaves = {n: _leaf(r) for n, r in zip(req["names"], req["inputs"])}
        extra = [_to_value(r) for r in req.get("extra", [])]
        return (lambda *ts: fn(*ts, *extra)), leaves, None
    mod, shapes = _build_module(dict(req, dtype="float64", device="cpu"))
    if mod is None:
        return None, {}, shapes
    params = dict(mod.named_parameters())
    kwargs = _forward_kwargs(req)

    def run(x, *ps):
        def forward(*args, **kw):
            if all(p is params[n] for n, p in zip(params, ps)):
                return mod(*args, **kw)
            return torch.func.functional_call(mod, dict(zip(params, ps)), args, kw)
        if req.get("cache"):
            return _decoder(forward, dict(req["cache"], record=False), kwargs)(x)[0]   # one cotangent a chunk
        return forward(x, **{k: v for k, (v, _how) in kwargs.items()})
    return run, {"x": _leaf(req["inputs"][0]), **params}, shapes


def _tensors(value):
    """The tensors among a returned tuple/list (or the value itself), in order."""
    import torch
    items = value if isinstance(value, (tuple, list)) else (value,)
    return [v for v in items if isinstance(v, torch.Tensor)]


def _gradcheck(spec):
    """Does the backward of the student's code agree with finite differences of its own forward,
    on a small float64 case? {"ok", "message" (bounded), "inputs"}.

    The test torch.autograd.gradcheck(fast_mode=True) makes, written out: for a random direction
    u_j of each input and a random weighting v_i of each output, the backward's
    u_j . d(v_i . out_i)/d(input_j) must match the central difference
    (v_i . out_i(x + eps u_j) - v_i . out_i(x - eps u_j)) / (2 eps), with gradcheck's own eps and
    tolerances. A wrong backward shows (almost surely) at a few forward passes' cost. Not gradcheck
    itself: its first call imports sympy (0.3 s in every fresh process). The random vectors come
    from a fixed seed, so a regrade sees the same ones.
    """
    import torch
    eps, atol, rtol = 1e-6, 1e-5, 1e-3
    try:
        run, leaves, _ = _target(spec)
        if run is None:
            return {"ok": False, "message": "the module's parameters did not fit", "inputs": []}

        def f(*ts):
            # copies: the student's code must not change the points the differences are taken at
            return [o.to(torch.float64) for o in _tensors(run(*[t.clone() for t in ts]))]
        xs = [t.detach().clone().requires_grad_(True) for t in leaves.values()]
        outs = f(*xs)
        gen = torch.Generator().manual_seed(0)
        vs = [torch.rand(o.shape, generator=gen, dtype=torch.float64) for o in outs]
        us = [torch.rand(x.shape, generator=gen, dtype=torch.float64) for x in xs]
        with torch.no_grad():
            shifted = []           # (outputs at x_j + eps u_j, outputs at x_j - eps u_j) per input j
            for j, u in enumerate(us):
                pair = []
                for sign in (1, -1):
                    moved = [x.detach() + sign * eps * u if k == j else x.detach() for k, x in enumerate(xs)]
                    pair.append(f(*moved))
                shifted.append(pair)
        for i, (out, v) in enumerate(zip(outs, vs)):
            grads = (torch.autograd.grad((out * v).sum(), xs, allow_unused=True, retain_graph=True)
                     if out.requires_grad else [None] * len(xs))
            for j, (g, u) in enumerate(zip(grads, us)):
                analytical = 0.0 if g is None else float((g * u).sum())
                plus, minus = shifted[j][0][i], shifted[j][1][i]
                numerical = float(((plus - minus) * v).sum()) / (2 * eps)
                if abs(analytical - numerical) > atol + rtol * abs(numerical):
                    return {"ok": False, "inputs": list(leaves)[:100], "message": (
                        f"Jacobian mismatch for output {i} with respect to input {j}: along a random "
                        f"direction, numerical {numerical:.6g}, analytical {analytical:.6g}")[:300]}
        return {"ok": True, "message": "", "inputs": list(leaves)}
    except BaseException as exc:   # the student's code raised on the small case
        return {"ok": False, "error": student_error(exc)}


def _backward(value, leaves, cotangent_recs):
    """Gradients of sum_i <output_i, cotangent_i> with respect to every leaf that requires grad.

    Outputs that do not require grad add nothing (the parent is told through "value"). A single
    tensor returned is one output.
    Returns {name: encoded gradient or None (unused)}; {} when the outputs are not tensors shaped
    like the cotangents (the parent reports the shapes) or none of them requires grad.
    """
    import torch
    cotangents = [torch.from_numpy(wire.decode_array(r)) for r in cotangent_recs]
    # a tuple or list of outputs (out, weights), or one tensor (apply_rope, a module's forward)
    outs = list(value) if isinstance(value, (tuple, list)) else [value] if isinstance(value, torch.Tensor) else None
    if (outs is None or len(outs) != len(cotangents)
            or not all(isinstance(o, torch.Tensor) and tuple(o.shape) == tuple(g.shape)
                       for o, g in zip(outs, cotangents))):
        return {}
    live = [(o, g.to(o.dtype)) for o, g in zip(outs, cotangents) if o.requires_grad]
    names = [n for n, t in leaves.items() if t.requires_grad]
    if not live or not names:
        return {}
    # one scalar, as in the grader's gradients.reference_gradients: the same gradients as
    # grad_outputs would give, without torch importing sympy on first use
    objective = sum((o * g).sum() for o, g in live)
    grads = torch.autograd.grad(objective, [leaves[n] for n in names], allow_unused=True)
    return {n: None if g is None else wire.encode(g) for n, g in zip(names, grads)}


def grad(req):
    """Forward and backward through the student's code in float64, on the grader's inputs.

    Request: "target" (see _target), "cotangents" (one per output) and "small" (a target for
    gradcheck). Reply: {"ok", "value", "params", "mutated", "frozen", "grads", "backward_error",
    "gradcheck"}; the outputs' requires_grad travels inside "value".
    """
    target = req["target"]
    run, leaves, shapes = _target(target)
    if run is None:
        return {"ok": True, "value": None, "params": shapes}
    # the student gets copies of the input leaves (a module keeps its own parameters): on a copy
    # an in-place change is legal for autograd, as on any activation inside a network, so it can
    # be seen and told, where torch would refuse it on the leaf itself
    module = target["op"] == "module"
    args = {n: (t if module and n != "x" else t.clone()) for n, t in leaves.items()}
    before = {n: _fingerprint(t) for n, t in args.items()}
    value = run(*args.values())
    reply = {"ok": True, "value": wire.encode(value), "params": shapes,
             "mutated": [n for n, t in args.items() if before[n] is not None and _fingerprint(t) != before[n]],
             "frozen": [n for n, t in leaves.items() if not t.requires_grad],
             "grads": {}, "backward_error": None, "gradcheck": None}
    try:
        reply["grads"] = _backward(value, leaves, req["cotangents"])
    except BaseException as exc:   # a custom backward that raises, a graph broken by an in-place change
        reply["backward_error"] = student_error(exc)
    reply["gradcheck"] = _gradcheck(req["small"])
    return reply


# ------------------------------------------------------------------ measuring
def measure(req):
    """Run a "call" or "module" request with the meters on (meters.py); reply with their counts.

    The first measuring of a function (or module) in this child runs it twice: first with the
    meters on and nothing kept, so that lazy imports and first-call caches (the student's,
    numpy's, torch's, the meters' own) are not counted; then measured. Later measurings of it
    (other sizes) are warm already and run once. The value is not sent back: the numbers checks
    judge it. Only the module's forward() is measured, not its construction.
    Reply: {"ok", "meters": {...}, "params"} | {"ok": false, "error"}.
    """
    inner = req.get("request") or {}
    handler = MEASURED_HANDLERS.get(inner.get("op"))
    if handler is None:
        return {"ok": False, "error": {"type": "GraderProtocolError", "message": "measure: unknown request",
                                       "traceback": ""}}
    options = (req.get("forbidden") or [], bool(req.get("count", True)), bool(req.get("python_memory", True)),
               bool(req.get("precision", False)))
    warm = (inner.get("op"), inner.get("name"), inner.get("dtype"), inner.get("device"), bool(inner.get("cache")),
            options[1:])
    if warm not in _MEASURED and inner.get("op") in WARMED:
        handler(inner, run=meters.Meter(STUDENT_FILES, *options).run, reply_value=False)
        _MEASURED.add(warm)
    meter = meters.Meter(STUDENT_FILES, *options)
    meter.counts_ops = inner.get("op") != "grad"      # watched, not counted (meters.Meter.counts_ops)
    # "value": an ordinary call, sent as a measuring one so that the student's code runs the same
    # way under the same meters and cannot tell them apart (protocol.measure_request)
    reply = handler(inner, run=meter.run, reply_value=bool(req.get("value")))
    return dict(reply, meters=meter.report())


_MEASURED = set()      # what has been measured (so warmed up) in this child


def measured_grad(req, run=_direct, reply_value=True):
    """grad() under the meters, as every other call of the student's code (the forward, the
    backward and the small gradcheck all run inside `run`)."""
    if not reply_value:
        return {"ok": True}

    def differentiate(request):
        # the meters run the student's calls under torch.no_grad(): a gradient needs the graph
        import torch
        with torch.enable_grad():
            return grad(request)
    return run(differentiate, req)


# Every call of the student's code is a "measure" request naming one of these in its inner "op"
# (protocol.measure_request): the same hooks are on in every call, so the student's code cannot
# tell a measured call from an ordinary one. A bare call, module, cache or grad request is refused
# (HANDLERS below has none of them). A new kind of call is added here, and nowhere else.
MEASURED_HANDLERS = {"call": call, "module": module, "cache": cache, "grad": measured_grad,
                     "model_calls": model_calls}
WARMED = {"call", "module", "cache", "model_calls"}     # first measured twice (see measure): what complexity checks count

HANDLERS = {"load": lambda req: load(req["path"], req["display"]), "measure": measure}


def handle(req):
    """The reply to one request: the handler its "op" names."""
    op = req.get("op")
    if op not in HANDLERS:
        return {"ok": False, "error": {"type": "GraderProtocolError", "message": f"unknown op {op!r}",
                                       "traceback": ""}}
    try:
        return HANDLERS[op](req)
    except ProtocolError as exc:
        return {"ok": False, "error": {"type": "GraderProtocolError", "message": str(exc), "traceback": ""}}
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
    meters.snapshot()         # torch's flop formulas, before any student code runs
    while True:
        req = wire.receive(request_fd)
        if req is None:           # the grader closed the pipe: we are done
            return
        if req.get("op") == "load":
            # the grader times the student's loading from here, before any student code runs: the
            # child's own start (the wall, a cold interpreter's imports) is the kit's time, and on a
            # busy machine it must not count against the student (protocol.checked_started)
            wire.send(reply_fd, {"started": time.monotonic()})
        reply = handle(req)
        try:
            wire.send(reply_fd, reply)
        except (TypeError, ValueError) as exc:   # something unencodable slipped through
            wire.send(reply_fd, {"ok": False, "error": {"type": "UnsendableResult",
                                                        "message": str(exc)[:500], "traceback": ""}})


if __name__ == "__main__":
    main()
