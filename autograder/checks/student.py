"""The `Student` adapter: how a hidden suite reaches the student's code, in its child process.

Suites never talk to the child themselves: `student.call(...)`, `student.module(...)`,
`student.grad(...)` and `student.measure(...)` have the request built (sandbox/protocol.py), send
it through the step's child (sandbox.step_child.StepChild) and have the reply decoded into checked
plain data (protocol.decode, decode_gradients, decode_measurement), which the expectations,
gradients.py and complexity.py then judge.
"""
import dataclasses

import pytest

from autograder.i18n import _
from autograder.sandbox import protocol
from autograder.sandbox.problems import BadReply
from autograder.sandbox.protocol import Returned, Seq, checked, decode

# the step children of the submission being graded, {stem: StepChild}: set by the grading
# run (grading.py) before the suites' checks run, read by the `student` fixture (suites/conftest.py)
STEP_CHILDREN = pytest.StashKey[dict]()


class Student:
    """Calls into the student's step file, in its child process, on one device."""

    def __init__(self, session, device="cpu", cast=None):
        self.session, self.device, self.cast = session, device, cast

    @property
    def framework(self):
        return self.session.step.framework

    def on(self, device, cast=None):
        """The same student code, with inputs sent to `device` (torch steps) and cast to `cast`."""
        return Student(self.session, device, cast)

    def _checked(self, decoder, *args):
        """protocol.checked(decoder, *args); a reply that fails its checks also retires the child
        (StepChild.distrust): what it forged must not be read as the answer to the next request."""
        try:
            return checked(decoder, *args)
        except BadReply:
            self.session.distrust()
            raise

    def _encode(self, x):
        return protocol.encode_value(x, self.framework == "torch", self.device, self.cast)

    def _watched(self, request, what):
        """Send an ordinary request the way a measuring one is sent, with the same meters on
        (child/meters.py): the student's code cannot tell the two apart, so it cannot behave only
        while measured. What the meters saw (forbidden APIs, tampering) is kept for the step's
        api and complexity checks (`measure` adds it to theirs)."""
        return self.session.request(protocol.measure_request(request, self._forbidden(), True,
                                                             self.framework == "numpy", value=True), what)

    def _keep_meters(self, reply):
        """Keep what the meters saw in an ordinary call (after its value is decoded: a forged reply
        is told by what is wrong with its value first)."""
        seen = self._checked(protocol.decode_measurement, reply)
        kept = _seen(self.session, create=True)
        kept.forbidden += [n for n in seen.forbidden if n not in kept.forbidden]
        kept.tampered += [n for n in seen.tampered if n not in kept.tampered]
        kept.errors += seen.errors

    def _forbidden(self):
        """The step's forbidden APIs (checks/forbidden_apis.toml), watched in every call."""
        from autograder.checks import complexity
        stem = self.session.step.stem
        return complexity.forbidden_apis(stem) if stem in complexity.API_STEPS else ()

    def call(self, name, *args, **kwargs):
        """Call the student's function `name` and return what it returned, decoded."""
        what = f"{name}(...)"
        reply = self._watched(self.call_request(name, *args, **kwargs), what)
        self.mutated = _mutated(reply, lambda i: _("argument {n}", n=int(i) + 1) if type(i) is int else str(i))
        value = _with_mutated(self._checked(decode, reply.get("value")), self.mutated)
        self._keep_meters(reply)
        return value

    def module(self, name, init, params, x, dtype="float64", cache=None, kwargs=None, chunked=None):
        """Build the student's nn.Module `name(**init)`, load `params` by name, run forward(x)
        (with `cache` = (class name, chunk sizes[, record]): chunk by chunk with one student cache;
        `kwargs`: forward's keyword arguments, cut per chunk as `chunked` says; see
        protocol.module_request).

        Returns (value, param_shapes) where value is None when the parameters did not fit.
        """
        reply = self._watched(self.module_request(name, init, params, x, dtype, cache, kwargs, chunked),
                              f"{name}(...).forward(x)")
        shapes = reply.get("params")
        if not isinstance(shapes, dict):
            self.session.distrust()
            raise BadReply(_("malformed parameter list"))
        value = reply.get("value")
        self.mutated = _mutated(reply, str)
        value = None if value is None else _with_mutated(self._checked(decode, value), self.mutated)
        self._keep_meters(reply)
        return value, shapes

    def grad(self, target, cotangents, small):
        """Run the student's code forward and backward in float64 (see gradients.py).

        target, small: protocol.function_target(...) or protocol.module_target(...), the
        second for torch.autograd.gradcheck; cotangents: one array per output.
        Returns a protocol.Gradients (plain, checked data).
        """
        reply = self._watched(protocol.grad_request(target, cotangents, small),
                              f"{target['name']}(...) and its backward pass")
        gradients = self._checked(protocol.decode_gradients, reply, target)
        self._keep_meters(reply)
        return gradients

    def call_request(self, name, *args, **kwargs):
        """The request that calls the student's function `name` (sent by `call`, or to `measure`)."""
        return protocol.call_request(name, [self._encode(a) for a in args],
                                     {k: self._encode(v) for k, v in kwargs.items()})

    def module_request(self, name, init, params, x, dtype="float64", cache=None, kwargs=None, chunked=None):
        """The request that builds the student's module and runs forward (sent by `module`, or to `measure`)."""
        return protocol.module_request(name, {k: self._encode(v) for k, v in init.items()},
                                       {k: protocol.encode_value(v) for k, v in params.items()},
                                       self._encode(x), self.device, dtype, cache,
                                       # forward's keyword arguments (positions, masks) are sent as they are: never cast
                                       {k: protocol.encode_value(v, self.framework == "torch", self.device)
                                        for k, v in (kwargs or {}).items()}, chunked)

    def model_calls_request(self, name, init, params, calls, dtype="float64", **options):
        """The request of a sequence of calls on one state (protocol.model_calls_request): inputs
        encoded for this device; an argument that is protocol.ref(...) stays a reference."""
        def enc(v):
            return v if isinstance(v, dict) and v.get("t") == "ref" else self._encode(v)
        calls = [(fn, [enc(a) for a in args], {k: enc(v) for k, v in kwargs.items()}, fresh)
                 for fn, args, kwargs, fresh in calls]
        return protocol.model_calls_request(name, {k: self._encode(v) for k, v in init.items()},
                                            {k: protocol.encode_value(v) for k, v in params.items()}, calls,
                                            self.device, dtype, **options)

    def model_calls(self, request, what):
        """Send a model_calls_request; returns (value, param_shapes), value None when the parameters
        did not fit (as `module`)."""
        reply = self._watched(request, what)
        shapes = reply.get("params")
        if not isinstance(shapes, dict):
            self.session.distrust()
            raise BadReply(_("malformed parameter list"))
        value = reply.get("value")
        value = None if value is None else self._checked(decode, value)
        self._keep_meters(reply)
        return value, shapes

    def cache(self, cls, appends):
        """The student's cache class `cls` on its own: cls(), append(k, v) for each (k, v) of `appends`.
        Returns the decoded ([what each append returned], [len before any append and after each])."""
        reply = self._watched(protocol.cache_request(cls, [[self._encode(k), self._encode(v)] for k, v in appends]),
                              f"{cls}().append(k, v)")
        value = self._checked(decode, reply.get("value"))
        self._keep_meters(reply)
        return value

    def measure(self, request, what, forbidden=(), count=True, precision=False):
        """Run a call_request / module_request with the child's meters on (child/meters.py).

        forbidden: dotted names of APIs to watch for; count=False watches for them only;
        precision: also watch a numpy step's arrays for float32 inside a float64 run (.downcasts).
        Returns a protocol.Measurement (plain, checked counts); the value never comes back.
        """
        # tracemalloc in the numpy steps only: the torch steps' tensors are tracked by the dispatch mode
        reply = self.session.request(protocol.measure_request(request, forbidden, count, self.framework == "numpy",
                                                              precision), what)
        measured = self._checked(protocol.decode_measurement, reply)
        # what the meters saw in the step's earlier ordinary calls counts here too: a forbidden API
        # used in any call, a meter switched off or broken in any call
        kept = _seen(self.session)
        if kept is None:
            return measured
        # watching for forbidden calls only (count=False), what blinds the forbidden-call watch counts
        # (the profiler, torch's modes, the meters' code), not what blinds the counters
        tampered = [n for n in kept.tampered if count or n in WATCH_TAMPERING]
        return dataclasses.replace(
            measured, forbidden=measured.forbidden + tuple(n for n in kept.forbidden
                                                           if n in forbidden and n not in measured.forbidden),
            tampered=measured.tampered + tuple(n for n in tampered if n not in measured.tampered),
            errors=measured.errors + (kept.errors if count else 0))


WATCH_TAMPERING = ("sys.setprofile", "the torch modes", "the meters' code")


class _Seen:
    """What the meters saw in one step child's ordinary calls."""

    def __init__(self):
        self.forbidden, self.tampered, self.errors = [], [], 0


def _seen(session, create=False):
    """The _Seen of a step's session (a StepChild: kept on it, so it goes with the submission)."""
    kept = getattr(session, "meters_seen", None)
    if kept is None and create:
        kept = _Seen()
        session.meters_seen = kept
    return kept


def _mutated(reply, name):
    """The names of the inputs the child says the call changed in place (bounded: a name the child
    sent cut to 100 characters; a position is a message, "argument 2")."""
    mutated = reply.get("mutated") or []
    if not isinstance(mutated, list):
        return []
    return [name(m if type(m) is int else m[:100]) for m in mutated[:100] if type(m) in (int, str)]


def _with_mutated(value, mutated):
    """Mark every array in a decoded value with what its call changed in place."""
    if mutated:
        if isinstance(value, Returned):
            value.mutated = tuple(mutated)
        elif isinstance(value, Seq):
            for item in value.items:
                _with_mutated(item, mutated)
    return value
