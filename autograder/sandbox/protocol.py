"""What crosses the boundary: every request to a child is built here, every reply checked here.

A request is one JSON object whose "op" names the operation; child/runner.py dispatches on that
op and on nothing else. Arrays travel as wire records (child/wire.py).

    load_request(path, display)      {"op": "load", "path", "display"}: answered twice, {"started"}
                                     before the student's file runs (checked_started), then the load
    call_request(name, args, kwargs) {"op": "call", "name", "args", "kwargs"}
    module_request(name, init, params, x, device, dtype)
                                     {"op": "module", "name", "init", "params", "input", "device", "dtype"}
    grad_request(target, cotangents, small)
                                     {"op": "grad", "target", "cotangents", "small"}: the targets are
                                     function_target(...) {"op": "call", ...} or module_target(...)
                                     {"op": "module", ...}, run in float64 and differentiated
    measure_request(request, ...)    {"op": "measure", "request": a call, module, cache or grad request,
                                     "forbidden", "count", "python_memory", "precision", "value"}

The call, module, cache and grad requests are only ever sent inside a measure request (with
value=True for an ordinary call: checks/student.py's _watched), so every call of the student's code
runs under the same meters; the child refuses them bare (runner.MEASURED_HANDLERS).

Every reply is untrusted (a tampered child can send anything): it becomes plain, bounded, checked
data here, or a BadReply, never an error of the grader. `checked(decoder, ...)` runs any decoder
under that rule. The decoded types: `Returned` (an array), `Seq`, `Opaque` and plain scalars for
values (`decode`); `Gradients` for a grad reply; `Measurement` for a measure reply. A reply that
reports an error becomes the student problem it is (`checked_answer`).
"""
from dataclasses import dataclass, field

import numpy as np

from autograder.child import wire
from autograder.i18n import _
from autograder.sandbox.problems import BadReply, NotDefined, StudentOverDisk, StudentOverMemory, StudentRaised


# ------------------------------------------------------------------ requests
def encode_value(x, as_tensor=False, device="cpu", cast=None):
    """One argument as a wire record: a numpy array (as an ndarray, or a tensor on `device` cast
    to `cast` when as_tensor), or a plain scalar (None, bool, int, float)."""
    if isinstance(x, np.ndarray):
        return wire.encode_input(x, as_tensor, device, cast)
    if x is None or type(x) in (bool, int, float):
        return {"t": "scalar", "value": x}
    raise TypeError(f"the grader cannot send {type(x).__name__}")


def _scalar(v):
    return {"t": "scalar", "value": v}


def load_request(path, display):
    """Run the student's file at `path` (the child's copy); `display` names it in messages."""
    return {"op": "load", "path": path, "display": display}


def call_request(name, args, kwargs):
    """Call the student's function `name(*args, **kwargs)`; args and kwargs already wire records."""
    return {"op": "call", "name": name, "args": list(args), "kwargs": dict(kwargs)}


def _cache_spec(cache):
    """(class name, chunk sizes[, record]) -> the request's "cache"."""
    spec = {"cls": cache[0], "chunks": [int(n) for n in cache[1]]}
    if len(cache) > 2 and cache[2]:
        spec["record"] = True
    return spec


def _forward_spec(kwargs, chunked):
    """forward's keyword arguments ({name: wire record}) and how a cached run cuts each per chunk
    ({name: "chunk" | "prefix"}), as the runner's _forward_kwargs reads them."""
    return {"kwargs": dict(kwargs), "chunked": {str(k): str(v) for k, v in (chunked or {}).items()}}


def module_request(name, init, params, x, device, dtype, cache=None, kwargs=None, chunked=None):
    """Build the student's nn.Module `name(**init)`, load `params` by name, run forward(x).

    init: {keyword: wire record}; params: {parameter name: wire record}; x: a wire record;
    the module is moved to `dtype` (a torch dtype name) and `device`. cache: (class name, chunk
    sizes[, record]): forward runs over x's time axis chunk by chunk with one instance of the student's
    cache class, and the value is ((out of each chunk), [len(cache) after each]), with record a third
    item, (the keys forward passed to cache.append). kwargs: forward's keyword arguments {name: wire
    record}; chunked: {name: "chunk" | "prefix"}, how a cached run cuts one for each chunk."""
    req = {"op": "module", "name": name, "init": {"kwargs": dict(init)}, "params": dict(params),
           "input": x, "device": device, "dtype": dtype}
    if cache is not None:
        req["cache"] = _cache_spec(cache)
    if kwargs:
        req["forward"] = _forward_spec(kwargs, chunked)
    return req


def cache_request(cls, appends):
    """The student's cache class `cls` on its own: cls(), then append(k, v) for each pair of wire
    records in `appends`; the value is ([what each append returned], [len before and after each])."""
    return {"op": "cache", "cls": cls, "appends": [list(pair) for pair in appends]}


def ref(name):
    """An argument of a model_calls request that is one of the child's objects: "model", "cache",
    "optimizer" or "generator"."""
    return {"t": "ref", "name": name}


def model_calls_request(name, init, params, calls, device="cpu", dtype="float64", cache_fn=None, lr=None,
                        seed=None, grad=False, read=(), cotangents=None):
    """A sequence of calls on one state (the decoder's steps, see child/runner.py model_calls): the
    student's module `name(**init)` holding `params` (name None: no module), a cache from the student's
    `cache_fn(model)`, an SGD optimizer (lr), a generator seeded with `seed`; calls: [(function name or
    None for forward, [wire records or ref(...)], {keyword: ...}, a fresh cache first)]. The value is
    ((each call's return), [len(cache[0]) after each], (the parameters named in `read`, after), (4
    numbers the generator draws after)). cotangents (wire records, one per call, with grad): `read` holds
    instead the gradients of sum_i <call i's output, cotangent i> by those parameters."""
    return {"op": "model_calls", "name": name, "init": {"kwargs": dict(init)}, "params": dict(params),
            "device": device, "dtype": dtype, "cache_fn": cache_fn, "lr": lr, "seed": seed, "grad": bool(grad),
            "read": list(read), "cotangents": None if cotangents is None else list(cotangents),
            "calls": [{"fn": fn, "args": list(args), "kwargs": dict(kwargs), "fresh": bool(fresh)}
                      for fn, args, kwargs, fresh in calls]}


def function_target(name, inputs, extra=()):
    """A grad target: the student's function `name(*inputs, *extra)`, differentiated by `inputs`.

    inputs: {argument name: float64 array}, in the function's argument order; extra: plain
    further arguments (num_heads).
    """
    return {"op": "call", "name": name, "names": list(inputs),
            "inputs": [wire.encode_input(a) for a in inputs.values()], "extra": [_scalar(v) for v in extra]}


def module_target(name, init, params, x, cache=None, kwargs=None, chunked=None):
    """A grad target: the student's module `name(**init)` holding `params` ({name: array}),
    run on x; differentiated by x and every parameter. cache: (class name, chunk sizes), as in
    module_request: forward over x chunk by chunk with one student cache, the outputs being the
    chunks' (one cotangent each). kwargs, chunked: forward's keyword arguments (arrays, not
    differentiated) as in module_request."""
    target = {"op": "module", "name": name, "init": {"kwargs": {k: _scalar(v) for k, v in init.items()}},
              "params": {k: wire.encode_input(v) for k, v in params.items()}, "inputs": [wire.encode_input(x)]}
    if cache is not None:
        target["cache"] = {"cls": cache[0], "chunks": [int(n) for n in cache[1]]}
    if kwargs:
        target["forward"] = _forward_spec({k: wire.encode_input(v) for k, v in kwargs.items()}, chunked)
    return target


def grad_request(target, cotangents, small):
    """Run `target` forward and backward in float64 with one cotangent array per output, and
    torch's finite-difference test on the `small` target (see child/runner.py, grad)."""
    return {"op": "grad", "target": target, "cotangents": [wire.encode_input(c) for c in cotangents],
            "small": small}


def measure_request(request, forbidden=(), count=True, python_memory=True, precision=False, value=False):
    """Run a call or module request with the child's meters on (child/meters.py).

    forbidden: dotted names of APIs to watch for; count=False watches for them only;
    python_memory: tracemalloc's peak (the numpy steps); precision: watch for float32 inside a
    float64 run; value: reply with the value too (an ordinary call: every call of the student's
    code is made this way, so it cannot tell a measured call from an ordinary one)."""
    return {"op": "measure", "request": request, "forbidden": list(forbidden), "count": bool(count),
            "python_memory": bool(python_memory), "precision": bool(precision), "value": bool(value)}


# ------------------------------------------------------------------ replies: what each may cost
@dataclass(frozen=True)
class ReplyBudget:
    """What one reply may hold, read before any of it is: its JSON text (bytes and values, see
    wire.nodes) and its attached array bytes. Bounds the grader's memory per reply: about
    json_bytes + 100 bytes a value for the parsed JSON, twice attached_bytes for the arrays."""
    json_bytes: int
    attached_bytes: int
    nodes: int


REPLY_JSON_BYTES = 8 << 20     # an honest reply's text: records of a few fields, MAX_ITEMS of them at most
REPLY_NODES = 200_000          # MAX_ITEMS (10 000) array records of ~10 values each, twice over
REPLY_FLOOR = 16 << 20         # arrays any call may return whatever its inputs
SMALL_REPLY = ReplyBudget(REPLY_JSON_BYTES, 1 << 20, REPLY_NODES)    # load and measure: names and counts


def _sizes(x, arrays, ints):
    """Collect the shapes of the wire arrays and the plain integers inside a request."""
    if isinstance(x, dict):
        if x.get("t") == "array" and isinstance(x.get("shape"), list):
            arrays.append([n for n in x["shape"] if type(n) is int])
        elif x.get("t") == "scalar" and type(x.get("value")) is int:
            ints.append(x["value"])
        for v in x.values():
            _sizes(v, arrays, ints)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _sizes(v, arrays, ints)


def reply_budget(request):
    """The most a reply to `request` may hold, derived from what its answer can be: the references
    answer the same request with arrays no larger than an input times its longest axis (the
    (..., T, T) weights from (..., T, D) inputs, D at least the number of heads) or the square of
    an integer argument (a (T, T) mask from T), 8 bytes a value; with REPLY_FLOOR for slack and
    four times over for a tuple (output, weights) and gradients. Never above the wire's global cap.
    load and measure replies carry names and counts only (SMALL_REPLY)."""
    if isinstance(request, dict) and request.get("op") == "measure" and request.get("value"):
        request = request.get("request")            # an ordinary call, sent measured: its value comes back
    if not isinstance(request, dict) or request.get("op") not in ("call", "module", "cache", "grad", "model_calls"):
        return SMALL_REPLY
    arrays, ints = [], []
    _sizes(request, arrays, ints)
    values = 0
    for shape in arrays:
        count = 1
        for n in shape:
            count *= n
        values += count * max(shape + [1])
    values += sum(n * n for n in ints if 0 < n <= 1 << 16)
    attached = min(wire.MAX_MESSAGE_BYTES, REPLY_FLOOR + 4 * 8 * values)
    return ReplyBudget(REPLY_JSON_BYTES, attached, REPLY_NODES)


def over_budget(body, attached, budget):
    """The BadReply message for a reply whose header says it holds more than `budget`."""
    if body > budget.json_bytes:
        return _("a reply of {size} bytes of text is more than this request may return ({limit} bytes)",
                 size=body, limit=budget.json_bytes)
    return _("a reply of {size} bytes of arrays is more than this request may return ({limit} bytes, from "
             "the size of its expected results)", size=attached, limit=budget.attached_bytes)


# ------------------------------------------------------------------ replies: the rule
def checked(decoder, *args):
    """Run a decoder on what the child sent: whatever a forged reply makes it raise (a field of the
    wrong type, an absurd size) is a BadReply for this check, never an error of the grader."""
    try:
        return decoder(*args)
    except BadReply:
        raise
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError, RecursionError,
            UnicodeError, MemoryError) as exc:
        raise BadReply(_("malformed reply ({error})", error=f"{type(exc).__name__}: {str(exc)[:200]}")) from None


# ------------------------------------------------------------------ replies: loading, errors
MAX_NAMES = 500


def checked_error(err):
    """An error record as plain, bounded strings, whatever the child put in it."""
    return {k: str(err.get(k, ""))[:4000] for k in ("type", "message", "traceback")}


def _disk_full(err):
    return err["type"] in ("OSError", "IOError") and ("No space left on device" in err["message"]
                                                      or "[Errno 28]" in err["message"])


def checked_started(reply, spawned, now):
    """The child's first answer to "load": {"started": t}, the monotonic time (the host's clock: the
    child has no time namespace) when its runner began loading the student's file, sent before any
    student code runs. A time outside [spawned, now] is a BadReply."""
    started = reply.get("started") if isinstance(reply, dict) else None
    if type(started) is not float or not spawned <= started <= now:
        raise BadReply(_("malformed reply to loading the file"))
    return started


def checked_load_reply(reply):
    """The reply to "load", checked field by field: {"ok": True, "defined": [str], "cell_errors": [error]}.
    Anything else is a BadReply (only a tampered child sends one)."""
    defined, errors = reply.get("defined"), reply.get("cell_errors", [])
    if reply.get("ok") is False and isinstance(reply.get("error"), dict):
        # a well-formed error reply: the runner failed around the student's file (or a tampered child
        # says so); its own words, bounded, say which, instead of a bare "malformed"
        err = checked_error(reply["error"])
        raise BadReply(_("the child could not load the file ({error})",
                         error=f"{err['type'][:100]}: {err['message'][:300]}"))
    if reply.get("ok") is not True or not isinstance(defined, list) or not isinstance(errors, list):
        raise BadReply(_("malformed reply to loading the file"))
    if not all(isinstance(n, str) for n in defined) or not all(isinstance(e, dict) for e in errors):
        raise BadReply(_("malformed reply to loading the file"))
    return {"ok": True, "defined": [n[:100] for n in defined[:MAX_NAMES]],
            "cell_errors": [checked_error(e) for e in errors[:20]]}


def checked_answer(reply, what, limits, display, loaded):
    """The reply to a call, module, grad or measure request, returned when it succeeded; otherwise
    the student problem it reports: a name the file does not define, memory or disk over the
    limits (`limits`, a sandbox.limits.Limits), or what the student's code raised.

    what: the call, for messages; display: the step file's name; loaded: its checked load reply."""
    if reply.get("missing"):
        raise NotDefined(str(reply["missing"])[:100], display, loaded["defined"], loaded["cell_errors"])
    if reply.get("ok") is not True:
        err = reply.get("error")
        if not isinstance(err, dict):
            raise BadReply(_("malformed error reply"))
        err = checked_error(err)
        if err["type"] == "MemoryError" or (err["type"] == "OSError" and "[Errno 12]" in err["message"]):
            raise StudentOverMemory(what, limits.memory_bytes)   # RLIMIT_DATA, or RLIMIT_AS for a mapping
        if _disk_full(err):
            raise StudentOverDisk(what, limits.disk_bytes)
        raise StudentRaised(what, err)
    return reply


# ------------------------------------------------------------------ replies: values
@dataclass
class Returned:
    """An array the student's code returned, decoded and checked."""
    array: np.ndarray        # values (bfloat16 arrives widened to float32)
    kind: str                # "ndarray", "numpy-scalar" or "tensor"
    type: str                # the Python type the student's code returned
    dtype: str               # the dtype it had ("bfloat16" included)
    device: str = None
    requires_grad: bool = False
    # the caller's arguments (positions, or "x" and parameter names for a module) the call that
    # returned it changed in place, as the child reported them: every value check fails on it
    mutated: tuple = ()

    @property
    def shape(self):
        return tuple(self.array.shape)


@dataclass
class Seq:
    type: str
    items: list
    length: int


@dataclass
class Opaque:
    type: str
    repr: str


def decode(rec, depth=0):
    """Turn a child's record into Returned / Seq / Opaque / a plain scalar. Never trusts it."""
    if not isinstance(rec, dict) or depth > wire.MAX_DEPTH + 1:
        raise BadReply(_("malformed value"))
    t = rec.get("t")
    if t == "scalar":
        v = rec.get("value")
        if v is None or type(v) in (bool, int, float):
            return v
        raise BadReply(_("malformed scalar"))
    if t == "str":
        return str(rec.get("value", ""))[:wire.MAX_TEXT]
    if t == "array":
        try:
            arr = wire.decode_array(rec)
        except (ValueError, TypeError) as exc:
            raise BadReply(_("malformed array ({error})", error=exc)) from None
        return Returned(arr, str(rec.get("kind"))[:40], str(rec.get("type"))[:200], str(rec.get("dtype")),
                        None if rec.get("device") is None else str(rec.get("device"))[:40],
                        bool(rec.get("requires_grad")))
    if t == "seq":
        items = rec.get("items")
        if not isinstance(items, list):
            raise BadReply(_("malformed sequence"))
        return Seq(str(rec.get("type"))[:200], [decode(i, depth + 1) for i in items[:wire.MAX_ITEMS]],
                   _length(rec.get("length", len(items))))
    if t == "opaque":
        return Opaque(str(rec.get("type"))[:200], str(rec.get("repr"))[:wire.MAX_TEXT])
    raise BadReply(_("unknown value kind"))


def _length(n):
    if type(n) is not int or n < 0:
        raise BadReply(_("malformed sequence"))
    return n


# ------------------------------------------------------------------ replies: gradients
GRAD_MAX_NAMES = 100


@dataclass
class Gradients:
    """What `Student.grad` brings back, decoded and checked."""
    value: object                                   # the forward's return value (decoded), None if params did not fit
    params: dict = None                             # a module's {parameter: shape}
    grads: dict = field(default_factory=dict)       # {name: float64 array, or None: not reached by the graph}
    mutated: list = field(default_factory=list)     # inputs / parameters changed in place
    frozen: list = field(default_factory=list)      # parameters with requires_grad=False
    backward_error: dict = None                     # {"type", "message", "traceback"} when backward raised
    gradcheck: dict = None                          # {"ok", "message", "inputs"} or {"ok": False, "error"}


def _grad_names(items, allowed):
    if not isinstance(items, list):
        raise BadReply(_("malformed list of names"))
    return [str(n) for n in items[:GRAD_MAX_NAMES] if str(n) in allowed]


def _error(rec):
    if rec is None:
        return None
    if not isinstance(rec, dict):
        raise BadReply(_("malformed error reply"))
    return {k: str(rec.get(k, ""))[:4000] for k in ("type", "message", "traceback")}


def _gradcheck(rec):
    if rec is None:
        return None
    if not isinstance(rec, dict):
        raise BadReply(_("malformed gradcheck reply"))
    if rec.get("error") is not None:
        return {"ok": False, "error": _error(rec["error"])}
    inputs = rec.get("inputs") or []
    return {"ok": rec.get("ok") is True, "message": str(rec.get("message", ""))[:300],
            "inputs": [str(n)[:100] for n in inputs[:GRAD_MAX_NAMES]] if isinstance(inputs, list) else []}


def decode_gradients(reply, target):
    """Check and decode the child's reply to a "grad" request on `target`. Never trusts it."""
    value = reply.get("value")
    params = reply.get("params")
    if params is not None and not isinstance(params, dict):
        raise BadReply(_("malformed parameter list"))
    if target["op"] == "module" and not isinstance(params, dict):
        raise BadReply(_("malformed parameter list"))
    if value is None:
        return Gradients(None, params)
    allowed = set(target.get("names") or ["x"]) | set(target.get("params") or {})
    raw = reply.get("grads") or {}
    if not isinstance(raw, dict):
        raise BadReply(_("malformed gradients"))
    grads = {}
    for name, rec in list(raw.items())[:GRAD_MAX_NAMES]:
        if name not in allowed:
            continue
        try:
            grads[name] = None if rec is None else wire.decode_array(rec).astype(np.float64)
        except (ValueError, TypeError, AttributeError) as exc:
            raise BadReply(_("malformed array ({error})", error=exc)) from None
    return Gradients(decode(value), params, grads, _grad_names(reply.get("mutated") or [], allowed),
                     _grad_names(reply.get("frozen") or [], allowed), _error(reply.get("backward_error")),
                     _gradcheck(reply.get("gradcheck")))


# ------------------------------------------------------------------ replies: measurements
MAX_COUNT = 10 ** 15
METER_MAX_NAMES = 20


@dataclass(frozen=True)
class Measurement:
    """One measured call of the student's code (see child/meters.py for what each count is)."""
    ran: bool                 # False when a module's parameters did not fit: forward never ran
    lines: int
    calls: int
    ops: int
    flops: int
    peak_bytes: int
    forbidden: tuple          # dotted names of forbidden APIs called, in order
    tampered: tuple           # what switched a meter off
    errors: int               # the meters' own failures
    downcasts: tuple = ()     # torch ops that turned float64 tensors into lower precision ("op: float64 -> float32")


def _count(rec, key):
    value = rec.get(key)
    if type(value) is not int or not 0 <= value <= MAX_COUNT:
        raise BadReply(_("malformed measurement"))
    return value


def _meter_names(rec, key):
    items = rec.get(key)
    if not isinstance(items, list):
        raise BadReply(_("malformed measurement"))
    return tuple(str(n)[:200] for n in items[:METER_MAX_NAMES])


def decode_measurement(reply):
    """A Measurement from the child's reply to a "measure" request; never trusts it."""
    rec = reply.get("meters")
    if not isinstance(rec, dict):
        raise BadReply(_("malformed measurement"))
    return Measurement(bool(rec.get("ran")), *(_count(rec, k) for k in ("lines", "calls", "ops", "flops",
                                                                          "peak_bytes")),
                       _meter_names(rec, "forbidden"), _meter_names(rec, "tampered"), _count(rec, "errors"),
                       _meter_names(rec, "downcasts") if "downcasts" in rec else ())
