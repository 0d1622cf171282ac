"""Meters for the child: what the student's code does while one request runs, counted, never timed.

Copied beside runner.py (like wire.py), so it depends on the standard library alone; torch is used
only when the process has already imported it. `Meter.run(fn, *args)` calls the student's code
with these on, and `Meter.report()` returns plain counts that the grader judges:

- lines:  executed lines of the student's own code (sys.settrace, only for frames whose file is
          one of the student's files; every other frame is left untraced).
- calls:  Python and C function calls made while it ran, in any code but this file's hooks
          (sys.setprofile). A loop hidden in a library's Python code (np.apply_along_axis) shows here.
- ops:    tensor operations (aten ops seen by a TorchDispatchMode), when torch is loaded.
- flops:  multiply-adds of those ops, by torch's own flop formulas (torch.utils.flop_counter).
- peak_bytes: the most memory held at once by what the call allocated: numpy's and Python's
          allocations (tracemalloc, numpy steps only; numpy reports its data buffers to it) plus
          tensor storages created during the call (tracked from the dispatch mode until the
          tensors die).
- forbidden: the forbidden APIs (dotted names) the code called, in order, each once. A call is
          seen while the code runs: torch functions and Tensor methods through a TorchFunctionMode,
          Python functions (scipy.special.softmax, nn.MultiheadAttention's methods) by their code
          object on the profiler's 'call' events, C functions on its 'c_call' events, and
          `torch.ops.aten.NAME` at the dispatcher. A forbidden call made inside another one
          (F.softmax inside nn.Softmax) is not listed again.
- tampered: what switched a meter off while the code ran (sys.settrace(None), tracemalloc.stop(),
          popping the torch modes, ...). The grader treats a tampered measurement as a failed one.

Every count is deterministic: the same code on the same inputs gives the same numbers (the
garbage collector is paused while the call runs, so memory is freed by reference counts alone,
never at a moment that depends on earlier requests).

Every call of the student's code runs under a Meter (the grader sends ordinary calls as measuring
ones, runner.measure), with the same hooks on whatever it counts: the code cannot tell a measured
call from an ordinary one by looking at them. The meters' own code is recorded before any student
code runs (`snapshot`) and checked after every call: an edit is reported in `tampered`. FLOPs are
counted with a private copy of torch's formulas (`_flop_formulas`), which the student's code
cannot reach through torch.

Limits, plainly: the meters run in the student's own process, so a submission that means to can
fool them (put a tracer back after removing it, through a call the profiler cannot see, or edit
the meter's counts in memory). That can only win the complexity and api points, never a numbers
point: the values are still compared in the grader. Threads the student starts are not traced,
and a loop run entirely in C (map(np.exp, rows), np.vectorize of a C function) makes no Python
line or call per item, so in a numpy step it is not seen.
"""
import gc
import os
import sys
import tracemalloc
import weakref

_HERE = __file__

# Taken when the runner imports this module, before any student code runs: a submission that
# replaces sys.settrace or tracemalloc.start cannot stop the meters from being installed.
_settrace, _gettrace = sys.settrace, sys.gettrace
_setprofile, _getprofile = sys.setprofile, sys.getprofile
_tm_start, _tm_stop, _tm_is_tracing = tracemalloc.start, tracemalloc.stop, tracemalloc.is_tracing
_tm_memory, _tm_reset_peak, _tm_traceback = (tracemalloc.get_traced_memory, tracemalloc.reset_peak,
                                             tracemalloc.get_object_traceback)
_gc_disable, _gc_enable, _gc_isenabled = gc.disable, gc.enable, gc.isenabled

# C functions that switch a meter off, by id (seen on the profiler's 'c_call' events)
_TAMPER_C = {id(f): n for f, n in ((sys.settrace, "sys.settrace"), (sys.setprofile, "sys.setprofile"),
                                   (tracemalloc.stop, "tracemalloc.stop"), (tracemalloc.start, "tracemalloc.start"),
                                   (tracemalloc.clear_traces, "tracemalloc.clear_traces"),
                                   (tracemalloc.reset_peak, "tracemalloc.reset_peak"))}
MAX_NAMES = 20          # forbidden / tampered names reported at most


def resolve(name):
    """The object a dotted name refers to, looked up in modules already imported (None if none).

    Nothing is imported here: a module the student's code never imported cannot have been called.
    """
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        obj = sys.modules.get(".".join(parts[:i]))
        if obj is not None:
            break
    else:
        return None
    for part in parts[i:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _codes(obj):
    """Code objects that running `obj` enters: a function's own, a class's own methods'."""
    if isinstance(obj, type):
        return [c for v in vars(obj).values() for c in _codes(v)] if obj.__module__ != "builtins" else []
    code = getattr(getattr(obj, "__func__", obj), "__code__", None)
    return [code] if code is not None else []


class Forbidden:
    """The forbidden names of one measurement, resolved to what each call site can be matched by."""

    def __init__(self, names):
        self.by_code, self.by_id, self.by_object, self.aten = {}, {}, [], {}
        for name in names:
            if name.startswith("torch.ops."):          # torch.ops.aten._softmax: at the dispatcher
                self.aten[name[len("torch.ops."):]] = name
                continue
            obj = resolve(name)
            if obj is None:
                continue
            codes = _codes(obj)
            for code in codes:
                self.by_code[code] = name
            if not codes:
                self.by_id[id(obj)] = name            # a C function (torch.softmax, F.scaled_dot_product_attention)
            self.by_object.append((obj, name))        # what a TorchFunctionMode is handed

    def torch_function(self, func):
        for obj, name in self.by_object:
            if func is obj:
                return name
        return None


class Meter:
    """Counts for one call of the student's code. `count=False` watches forbidden calls only."""

    def __init__(self, student_files, forbidden=(), count=True, python_memory=True, precision=False):
        self.files = frozenset(student_files)
        self.names = [str(n) for n in forbidden][:200]
        self.count = count
        self.owns_hooks = True          # the tracer and profiler are ours to switch (see on_op)
        # tracemalloc: numpy arrays and Python objects. Off for the torch steps, where tensors are
        # tracked from the dispatch mode: it would count the meters' own bookkeeping there, and make
        # each op ten times slower
        # What is switched on depends on the step alone (python_memory: a numpy step), never on what
        # this measurement counts: every call of the student's code runs under the very same hooks
        # (runner.measure), so its code cannot tell a measured call from an ordinary one by looking.
        self.python_memory = bool(python_memory)
        # precision asked for in a numpy step (python_memory): the student's frames are also watched
        # for float arrays narrower than the float64 inputs (the dispatch mode does that for torch)
        self.numpy_precision = bool(precision and python_memory)
        self.traced = True
        # False for a gradient request (runner.measured_grad): nothing of it is counted, only watched
        # (forbidden APIs, tampering, failures), so torch's dispatch mode, which tripled the cost of a
        # forward, backward and gradcheck, is entered only when a forbidden name is an aten op. Such a
        # request is told from the others anyway: autograd is on in it alone.
        self.counts_ops = True
        self.widest_input = 0
        self.lines = self.calls = self.ops = self.flops = 0
        self.tm_peak = 0
        self.tensor_now = self.tensor_peak = 0
        self.forbidden, self.tampered = [], []
        self.downcasts = []             # "op: float64 -> float32": a float64 tensor's values computed on in lower precision
        self.ran = False
        self.errors = 0                 # the meters' own failures: the grader's fault, never the student's
        self._hooks = 0                 # > 0 while one of this file's hooks runs: not the student's work
        self._inside = 0                # > 0 inside a forbidden call already recorded
        self._closers = []              # what ends each profiler-seen forbidden call (a frame, or a C function id)
        self._live, self._tracked = {}, {}     # storage -> [bytes, live tensors]; id(tensor) -> (storage, weakref)

    # -------------------------------------------------------------- the hooks
    def _trace(self, frame, event, arg):
        """sys.settrace's global hook: trace the student's frames only."""
        return self._trace_line if frame.f_code.co_filename in self.files else None

    def _trace_line(self, frame, event, arg):
        if event == "line":
            if self.count:
                self.lines += 1
        elif event == "return" and self.widest_input == 8:
            self._note_numpy_downcast(frame, arg)
        return self._trace_line

    def _note_numpy_downcast(self, frame, returned):
        """A float64 call whose student function ends holding (in a local, or in what it returns) a
        float array narrower than float64 with more than one value: precision lost inside the
        computation (a scalar constant such as np.float32(np.sqrt(d)) is not)."""
        self._hooks += 1
        try:
            np = sys.modules.get("numpy")
            if np is None:
                return
            where = frame.f_code.co_name
            named = [(name, value) for name, value in frame.f_locals.items()]
            named.append(("the returned value", returned))
            for name, value in named:
                for item in (value if isinstance(value, (tuple, list)) else (value,))[:8]:
                    if isinstance(item, np.ndarray) and item.dtype.kind == "f" and item.dtype.itemsize < 8 \
                            and item.size > 1:
                        text = f"{name} in {where}: float64 -> {item.dtype}"
                        if text not in self.downcasts and len(self.downcasts) < 20:
                            self.downcasts.append(text)
        except Exception:                   # noqa: BLE001 - a meter's failure is never the student's
            self.errors += 1
        finally:
            self._hooks -= 1

    def _profile(self, frame, event, arg):
        if frame.f_code.co_filename == _HERE:
            if event == "call":
                self._hooks += 1
            elif event == "return":
                self._hooks -= 1
            return
        if self._hooks:
            return
        if event == "call":
            self.calls += 1
            name = self._watch.by_code.get(frame.f_code)
            if name:
                self._enter(name, frame)
        elif event == "return":
            if self._closers and self._closers[-1] is frame:
                self._leave()
        elif event == "c_call":
            self.calls += 1
            if id(arg) in _TAMPER_C:
                what = _TAMPER_C[id(arg)]
                # watching for forbidden calls only, the profiler is all that matters
                if self.count or what == "sys.setprofile":
                    self._tamper(what)
            name = self._watch.by_id.get(id(arg))
            if name:
                self._enter(name, id(arg))
        elif event in ("c_return", "c_exception"):
            if self._closers and self._closers[-1] == id(arg):
                self._leave()

    def _enter(self, name, closer):
        self._seen(name)
        self._inside += 1
        self._closers.append(closer)

    def _leave(self):
        self._closers.pop()
        self._inside -= 1

    def _seen(self, name):
        if not self._inside and name not in self.forbidden and len(self.forbidden) < MAX_NAMES:
            self.forbidden.append(name)

    def _tamper(self, what):
        if what not in self.tampered and len(self.tampered) < MAX_NAMES:
            self.tampered.append(what)

    # -------------------------------------------------------------- torch
    def on_function(self, func, call):
        """From the TorchFunctionMode: note a forbidden torch function, then run it."""
        name = self._watch.torch_function(func)
        if name is None or self._inside:
            return call()
        self._seen(name)
        self._inside += 1
        try:
            return call()
        finally:
            self._inside -= 1

    def on_op(self, func, args, kwargs, out):
        """From the TorchDispatchMode: count the op, its flops, and the storages it created."""
        # the bookkeeping's own calls would each wake the profiler and the tracer (ignored, but a
        # few microseconds each, 40 times slower in all): both are off while it runs
        if not self.owns_hooks:         # counting in the grader (flops_of): its hooks are not ours
            self._count_op(func, args, kwargs, out)
            return
        profiler, tracer = _getprofile(), _gettrace()
        _setprofile(None)
        _settrace(None)
        try:
            self._count_op(func, args, kwargs, out)
        except Exception:               # a meter must never break the student's code
            self.errors += 1
        finally:
            _settrace(tracer)
            _setprofile(profiler)

    def _count_op(self, func, args, kwargs, out):
        self.ops += 1
        packet = str(getattr(func, "_overloadpacket", func))
        if packet in self._watch.aten:
            self._seen(self._watch.aten[packet])
        if len(self.downcasts) < 10:
            self._note_downcast(packet, args, kwargs, out)
        if not self.count:
            return
        self.flops += _flops(func, args, kwargs, out)
        before = {_storage(t)[0] for t in _tensors((args, kwargs))}
        for t in _tensors(out):
            key, nbytes = _storage(t)
            if key is None:
                continue
            if key not in self._live:
                if key in before:           # a view of, or a write into, memory from before the call
                    continue
                self._live[key] = [nbytes, 0]
                self.tensor_now += nbytes
                self.tensor_peak = max(self.tensor_peak, self.tensor_now)
            tid = id(t)
            if tid not in self._tracked:     # every live tensor on a storage keeps it counted
                # a weakref callback, not weakref.finalize: finalize's own Python frame would be
                # counted as one more call for every tensor that dies
                self._tracked[tid] = (key, weakref.ref(t, lambda _, tid=tid: self._release(tid)))
                self._live[key][1] += 1

    def _note_downcast(self, packet, args, kwargs, out):
        """An op taking a float64 tensor (more than one value) and giving a lower-precision floating one:
        precision lost inside the computation (a 0-d constant such as torch.tensor(d).sqrt() is not, nor
        a cast that keeps every value: zeros, a mask or positions made float32 lose nothing)."""
        ins = [t for t in _tensors((args, kwargs)) if str(t.dtype) == "torch.float64" and t.numel() > 1]
        if not ins:
            return
        for t in _tensors(out):
            dtype = str(t.dtype)
            if dtype in ("torch.float32", "torch.float16", "torch.bfloat16") and t.numel() > 1:
                # the dispatch mode is off while its handler runs: these comparisons are not counted
                if any(i.shape == t.shape and bool((t.to(i.dtype) == i).all()) for i in ins):
                    return
                text = f"{packet}: float64 -> {dtype[6:]}"
                if text not in self.downcasts:
                    self.downcasts.append(text)
                return

    def _release(self, tid):
        key = self._tracked.pop(tid, (None,))[0]
        entry = self._live.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] == 0:
            self.tensor_now -= entry[0]
            del self._live[key]

    # -------------------------------------------------------------- running
    def run(self, fn, *args, **kwargs):
        """Call fn(*args, **kwargs) with the meters on; returns what it returns (or raises what it raises)."""
        self._watch = Forbidden(self.names)
        torch = sys.modules.get("torch")
        modes = _torch_modes(self, torch) if torch is not None else []
        if not self.counts_ops and not self._watch.aten:
            modes = modes[:1]           # the function watch only (see counts_ops)
        gc_was_on = _gc_isenabled()
        _gc_disable()
        if self.python_memory:
            _tm_start()
            _tm_reset_peak()
            # a fresh object (no free list): its trace vanishes if tracemalloc is stopped and restarted
            sentinel = bytearray(8)
        grad = torch.no_grad() if torch is not None else None
        self.ran = True
        entered = []
        try:
            if grad is not None:
                grad.__enter__()
            for mode in modes:
                mode.__enter__()
                entered.append(mode)
            if self.numpy_precision:
                self.widest_input = _widest_float(args, kwargs)
            if self.traced:
                _settrace(self._trace)
            _setprofile(self._profile)
            return fn(*args, **kwargs)
        finally:
            profiler, tracer = _getprofile(), _gettrace()
            _setprofile(None)
            _settrace(None)
            if profiler != self._profile:
                self._tamper("sys.setprofile")
            if self.count and tracer != self._trace:      # watching for forbidden calls, the tracer plays no part
                self._tamper("sys.settrace")
            for mode in reversed(entered):
                try:
                    mode.__exit__(None, None, None)
                except BaseException:       # the student popped our mode off the stack
                    self._tamper("the torch modes")
            if torch is not None and _mode_stacks(torch) != self._stacks:
                self._tamper("the torch modes")
            if grad is not None:
                grad.__exit__(None, None, None)
            if self.python_memory:
                if not _tm_is_tracing() or _tm_traceback(sentinel) is None:
                    if self.count:              # the forbidden-call watch does not use it
                        self._tamper("tracemalloc")
                    self.tm_peak = 0
                else:
                    self.tm_peak = _tm_memory()[1] if self.count else 0
                    _tm_stop()
            changed = _changed_meters()
            if changed:
                self._tamper(changed)
            self._tracked.clear()           # drops the weakrefs: what dies later is not this call's business
            if gc_was_on:
                _gc_enable()

    def report(self):
        """Plain data for the grader (which validates it: this process is the student's)."""
        return {"ran": self.ran, "lines": self.lines, "calls": self.calls, "ops": self.ops, "flops": self.flops,
                "peak_bytes": self.tm_peak + self.tensor_peak, "forbidden": list(self.forbidden),
                "tampered": list(self.tampered), "errors": self.errors, "downcasts": list(self.downcasts)}


def _widest_float(args, kwargs):
    """The largest itemsize of the float numpy arrays among a call's arguments (0 if none)."""
    np = sys.modules.get("numpy")
    if np is None:
        return 0
    items = list(args) + list(kwargs.values())
    return max((a.dtype.itemsize for a in items if isinstance(a, np.ndarray) and a.dtype.kind == "f"), default=0)


# ------------------------------------------------------------------ the meters' own integrity
# Student code runs in this process and can reach this module (sys.modules, gc): what it could
# edit to blind a meter is recorded here, before any student code runs, and compared after every
# measured call. A change is reported as tampering, which fails the check it would have fooled.
_FLOPS = None           # the meters' own copy of torch's flop formulas: {op packet: formula}
_TORCH_DIR = None       # torch's folder, recorded before any student code runs
_ORIGINAL = {}          # (where, name) -> the object, and code objects, as they were


def _flop_formulas():
    """torch's flop formulas, from a private copy of torch/utils/flop_counter.py executed from the
    file (read-only in the child's view) on first use: what the student's code does to
    torch.utils.flop_counter.flop_registry changes nothing here. Loaded lazily, as before: its
    import costs a second in a child that never measures."""
    global _FLOPS
    if _FLOPS is None:
        _FLOPS = {}
        if _TORCH_DIR is None:          # the grader's side (flops_of): torch is its own
            snapshot()
        try:
            import importlib.util
            path = os.path.join(_TORCH_DIR, "utils", "flop_counter.py")
            spec = importlib.util.spec_from_file_location("torch.utils._attention_kit_flop_counter", path)
            private = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(private)
            _FLOPS = dict(private.flop_registry)
        except Exception:               # noqa: BLE001 - an older torch, no file: no FLOPs counted
            _FLOPS = {}
        snapshot()                      # the copy's formulas are the meters' own from now on
    return _FLOPS


def _watched_objects():
    """(where, name) -> object for what the meters rely on: this module's functions and classes
    (their methods' code), the saved hooks, and torch's flop registry and formulas."""
    here = sys.modules.get(__name__)
    found = {}
    for name, value in list(vars(here).items()) if here is not None else ():
        if name.startswith("__") or name in ("_ORIGINAL", "_FLOPS", "_TORCH_DIR", "_MODE_CLASSES"):
            continue
        found[("meters", name)] = value
        code = getattr(value, "__code__", None)
        if code is not None:
            found[("meters", name + ".__code__")] = code
        if isinstance(value, type) and value.__module__ == __name__:
            for attr, member in list(vars(value).items()):
                found[("meters", f"{name}.{attr}")] = member
                if getattr(member, "__code__", None) is not None:
                    found[("meters", f"{name}.{attr}.__code__")] = member.__code__
    for cls_name, cls in _MODE_CLASSES.items():
        for attr, member in list(vars(cls).items()):
            if getattr(member, "__code__", None) is not None:
                found[("modes", f"{cls_name}.{attr}.__code__")] = member.__code__
    for packet, formula in (_FLOPS or {}).items():      # the meters' own copy, once loaded
        found[("meters", f"flop formula {packet}.__code__")] = getattr(formula, "__code__", None)
    return found


def snapshot():
    """Record what the meters rely on. Called when this module is imported, by the runner after
    `import torch` (both before any student code runs), and once the meters' own objects are made
    (torch's modes, the flop formulas)."""
    global _TORCH_DIR
    torch = sys.modules.get("torch")
    if _TORCH_DIR is None and torch is not None and isinstance(getattr(torch, "__file__", None), str):
        _TORCH_DIR = os.path.dirname(torch.__file__)
    for key, value in _watched_objects().items():
        _ORIGINAL.setdefault(key, value)


def _changed_meters():
    """The name of the first thing of the meters that is not what it was, else None."""
    try:
        now = _watched_objects()
        for key, value in _ORIGINAL.items():
            if now.get(key) is not value:
                return "the meters' code"
    except Exception:                   # noqa: BLE001 - a module made to fail on inspection
        return "the meters' code"
    return None


# ------------------------------------------------------------------ torch helpers
_MODE_CLASSES = {}


def _torch_modes(meter, torch):
    """A TorchFunctionMode (forbidden torch functions) and a TorchDispatchMode (ops, memory)."""
    if not _MODE_CLASSES:
        from torch.overrides import TorchFunctionMode
        from torch.utils._python_dispatch import TorchDispatchMode

        class FunctionWatch(TorchFunctionMode):
            def __init__(self, meter):
                super().__init__()
                self.meter = meter

            def __torch_function__(self, func, types, args=(), kwargs=None):
                return self.meter.on_function(func, lambda: func(*args, **(kwargs or {})))

        class OpWatch(TorchDispatchMode):
            @classmethod
            def _should_skip_dynamo(cls):
                # else torch wraps __torch_dispatch__ in torch._dynamo.disable, whose first call
                # imports torch._dynamo (800 modules, a second or more) in every child
                return False

            def __init__(self, meter):
                super().__init__()
                self.meter = meter

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                self.meter.on_op(func, args, kwargs or {}, out)
                return out

        _MODE_CLASSES.update(function=FunctionWatch, dispatch=OpWatch)
        snapshot()
    meter._stacks = _mode_stacks(torch)
    return [_MODE_CLASSES["function"](meter), _MODE_CLASSES["dispatch"](meter)]    # both, always (see Meter)


def _mode_stacks(torch):
    """The depth of torch's two mode stacks: changed by the student's code only if it tampered."""
    try:
        return (torch._C._len_torch_function_stack(), torch._C._len_torch_dispatch_stack())
    except AttributeError:          # an older torch: no way to look
        return None


def _tensors(tree):
    """The tensors in nested tuples, lists and dicts."""
    torch = sys.modules["torch"]
    if isinstance(tree, torch.Tensor):
        yield tree
    elif isinstance(tree, (list, tuple)):
        for item in tree:
            yield from _tensors(item)
    elif isinstance(tree, dict):
        for item in tree.values():
            yield from _tensors(item)


def _storage(t):
    """(an id of the memory a tensor lives in, its size in bytes), or (None, 0) when it has none."""
    try:
        storage = t.untyped_storage()
        ptr = storage.data_ptr()
        return (None, 0) if ptr == 0 else ((str(t.device), ptr), storage.nbytes())
    except (RuntimeError, NotImplementedError, AttributeError):
        return None, 0


def _flops(func, args, kwargs, out):
    """Multiply-adds of one op by torch's flop formulas; 0 for ops it has none for (elementwise ones).
    The formulas are the meters' own copy (_flop_formulas), never the registry the student's code
    can reach and edit."""
    formula = _flop_formulas().get(getattr(func, "_overloadpacket", None))
    if formula is None:
        return 0
    try:
        return int(formula(*args, **kwargs, out_val=out))
    except TypeError:               # torch < 2.4 named it `out`
        return int(formula(*args, **kwargs, out=out))


def flops_of(fn, *args, **kwargs):
    """For the grader: the multiply-adds of trusted code (a reference), counted exactly as the
    child counts the student's, with the dispatch mode alone (no tracer, profiler or tracemalloc)."""
    import torch
    meter = Meter(())
    meter.owns_hooks = False
    meter._watch = Forbidden(())
    mode = _torch_modes(meter, torch)[-1]     # the dispatch mode alone
    try:
        with torch.no_grad(), mode:
            fn(*args, **kwargs)
    finally:
        meter._tracked.clear()
    return meter.flops


snapshot()
