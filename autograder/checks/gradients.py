"""Gradient checks for the torch steps: the student's backward pass against the reference's.

The student's code runs forward and backward in its child process (runner.py, op "grad"), in
float64, on the grader's inputs, with seeded cotangents for both outputs (out and the attention
weights), so every path to the inputs and parameters is covered. What comes back is plain data, checked by sandbox/protocol.py:
the forward values, one gradient per input and parameter (None where the graph never reached
it), which inputs or parameters the code changed in place, and the verdict of a
finite-difference gradient check (the test torch.autograd.gradcheck's fast mode makes) on a
small case. Here, in the parent, that is compared with the
reference's gradients (torch autograd on solutions/, float64, same inputs and cotangents).

A missing or zero gradient where the reference's is not, or an output that does not require
grad, means the graph was cut (.detach(), .data, .item(), a numpy round trip, torch.no_grad()):
`misconception:detached-graph`, named only when the forward values are right (a wrong forward,
e.g. a W_O never used, also leaves gradients missing, for another reason).
"""
import re

import numpy as np

from autograder.checks.expect import compare, fail
from autograder.i18n import N_, _, join, translate
from autograder.sandbox.problems import StudentRaised
from autograder.sandbox.protocol import function_target, module_target  # noqa: F401  (the suites' grad targets)
from autograder.checks.tolerances import tolerance


# torch's refusal when code turns a tensor that requires grad into numpy (.numpy(), np.asarray, np.exp(t), ...)
NUMPY_REFUSED = "Can't call numpy() on Tensor that requires grad"


def run_backward(student, target, cotangents, small, what):
    """student.grad(...), telling a numpy round trip for what it is: torch refuses it on tensors that
    require grad, so such code passes every check without gradients and raises only here."""
    try:
        return student.grad(target, cotangents, small)
    except StudentRaised as exc:
        if NUMPY_REFUSED not in str(exc.error.get("message", "")):
            raise
        refused = _("{what} turns a tensor that requires grad into a numpy array, which torch refuses "
                    "({error}): numpy values have no autograd history, so no gradient could flow back "
                    "through them. Keep every step in torch.", what=what,
                    error=str(exc.error.get("message", ""))[:200])
    fail(refused, ["detached-graph"])      # outside the except: the student's error is told, not chained


# ------------------------------------------------------------------ the reference
def reference_gradients(forward, inputs, cotangents):
    """The reference's outputs and float64 gradients on the same inputs and cotangents.

    forward(*tensors) -> tuple of output tensors, taking float64 tensors in the order of
    `inputs` ({name: array}); cotangents: one array per output, of its shape.
    Returns ([output arrays], {name: gradient of sum_i <output_i, cotangent_i> w.r.t. input name}).
    """
    import torch
    leaves = {n: torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for n, a in inputs.items()}
    outs = forward(*leaves.values())
    # one scalar, sum_i <output_i, cotangent_i>: the same gradients as passing the cotangents as
    # grad_outputs, without torch's first-use import of sympy (0.3 s) that grad_outputs triggers
    objective = sum((o * torch.from_numpy(np.asarray(c, np.float64))).sum() for o, c in zip(outs, cotangents))
    grads = torch.autograd.grad(objective, list(leaves.values()), allow_unused=True)
    return ([o.detach().numpy() for o in outs],
            {n: np.zeros(inputs[n].shape) if g is None else g.numpy() for n, g in zip(leaves, grads)})


def module_forward(module):
    """forward(x, *parameters) for `reference_gradients`: the module with its parameters swapped
    for the given tensors (in the order of named_parameters())."""
    import torch
    names = [n for n, _p in module.named_parameters()]

    def forward(x, *ps):
        return tuple(torch.func.functional_call(module, dict(zip(names, ps)), (x,)))
    return forward


def small_case(b, t, d, h=None):
    """The gradcheck case in words, e.g. "B=2, T=3, d_model=4, 2 heads"."""
    if h is None:
        return _("B={b}, T={t}, d_model={d}", b=b, t=t, d=d)
    return _("B={b}, T={t}, d_model={d}, {h} heads", b=b, t=t, d=d, h=h)


# ------------------------------------------------------------------ judging
DETACH_HINT = N_("a .detach(), .data, .item() or .tolist(), a numpy round trip (.numpy() then torch.from_numpy) or a "
                 "torch.no_grad() block")


def _forward_is_right(outputs):
    rtol, atol = tolerance("float64", "composed")
    return all(compare(got.array, exp, rtol, atol).ok for _name, got, exp in outputs)


def _is_missing(g, expected):
    """No gradient (None) or an all-zero one, where the reference's is not zero."""
    return bool(np.any(expected != 0)) and (g is None or not np.any(g != 0))


def _gradcheck_text(result, small, output_names):
    """What gradcheck said, in words; None when it passed. output_names: the outputs, in order."""
    if result is None or result.get("ok"):
        return None
    if result.get("error"):
        err = result["error"]
        return _("A finite-difference gradient check (gradcheck's fast mode) could not run your code on a small "
                 "float64 case ({small}): it "
                 "raised {type}: {message}", small=small, type=err["type"], message=err["message"][:500])
    m = re.search(r"output (\d+) with respect to input (\d+)", result.get("message", ""))
    inputs = result.get("inputs") or []
    if m and int(m.group(2)) < len(inputs) and int(m.group(1)) < len(output_names):
        detail = _("the derivative of {output} with respect to {input}",
                   output=output_names[int(m.group(1))], input=inputs[int(m.group(2))])
    else:
        detail = result.get("message", "")
    return _("A finite-difference gradient check (gradcheck's fast mode) on a small float64 case ({small}): "
             "your backward pass does not agree "
             "with finite differences of your own forward ({detail}). A custom autograd.Function whose "
             "backward is wrong, or a cut graph, does that.", small=small, detail=detail)


def _mismatch_text(what, name, g, expected):
    rtol, atol = tolerance("float64", "composed")
    cmp = compare(g, expected, rtol, atol)
    if cmp.ok:
        return None
    if g.shape != expected.shape:
        return _("{what}: the gradient w.r.t. {name} has shape {got}; expected {shape}.",
                 what=what, name=name, got=g.shape, shape=expected.shape)
    return _("{what}: the gradient w.r.t. {name} differs from the expected one in {n} of {total} values "
             "(tolerance rtol={rtol:g}, atol={atol:g}, float64). Worst at index {index}: expected {expected:.6g}, "
             "got {got:.6g}.", what=what, name=name, n=cmp.n - cmp.n_close, total=cmp.n, rtol=rtol, atol=atol,
             index=cmp.worst_index, expected=cmp.worst_expected, got=cmp.worst_got)


def _state_problems(got, outputs, expected, what):
    """What went wrong before any gradient can be compared: inputs changed in place, a backward that
    raised, frozen parameters, outputs cut off the graph. Returns (messages, outputs cut off)."""
    problems = []
    if got.mutated:
        problems.append(_("{what} changed {names} in place (an in-place operation such as `x /= ...`, "
                          "`x.mul_(...)` or `x[...] = ...`, or a write through .data). The caller, and autograd, "
                          "may still need the original values: compute new tensors instead.",
                          what=what, names=join(", ", got.mutated)))
    if got.backward_error:
        err = got.backward_error
        text = _("Backpropagating through {what} raised {type}: {message}", what=what, type=err["type"],
                 message=err["message"][:1000])
        tb = err.get("traceback", "").strip()
        # a traceback without any of the student's frames only repeats the message
        problems.append(text + (_("\nYour code's traceback:\n{traceback}", traceback=tb) if 'File "' in tb else ""))
    frozen = [n for n in got.frozen if n in expected]
    if frozen:
        problems.append(_("{what}: {names} has requires_grad=False, so it gets no gradient and training would "
                          "never change it. Leave the parameters of nn.Linear trainable.",
                          what=what, names=join(", ", frozen)))
    stopped = [name for name, ret, _exp in outputs if not ret.requires_grad]
    if stopped:
        problems.append(_("{what}: {outputs} does not require grad although every input does: the graph from "
                          "the inputs to it is cut. Did {hint} come between them?",
                          what=what, outputs=join(", ", stopped), hint=translate(DETACH_HINT)))
    return problems, stopped


def _compare_gradients(got, expected, what):
    """(missing, wrong): "name (None)" / "name (all zero)" for each gradient that never arrived where
    the reference's is not zero, and (name, message) for each that differs."""
    missing, wrong = [], []
    for name, exp in expected.items():
        if name in got.frozen:
            continue            # told already
        g = got.grads.get(name)
        if _is_missing(g, exp):
            missing.append(_("{name} ({state})", name=name, state=_("None") if g is None else _("all zero")))
        elif g is not None:
            text = _mismatch_text(what, name, g, exp)
            if text:
                wrong.append((name, text))
    return missing, wrong


def _missing_text(what, missing, forward_right):
    if forward_right:
        return _("{what}: no gradient flows back to {names}, though the expected gradient is not zero: "
                 "did {hint} cut the graph between them and the outputs?",
                 what=what, names=join(", ", missing), hint=translate(DETACH_HINT))
    # a wrong forward may simply not use it (e.g. no output projection): not necessarily a cut
    return _("{what}: no gradient flows back to {names}, though the expected gradient is not zero: "
             "does your forward use them at all? If it does, {hint} cuts the graph on the way.",
             what=what, names=join(", ", missing), hint=translate(DETACH_HINT))


def expect_gradients(got, outputs, expected, what, small, precision=None):
    """The student's float64 gradients w.r.t. every input and parameter match the reference's.

    got: Gradients; outputs: [(name, Returned, expected forward array)], the forward's outputs,
    already checked for type and shape; expected: {name: reference gradient}; small: the small
    gradcheck case in words; precision: checks.precision_lost's message when the float64 run computed
    in float32 inside (then that is the cause told, not a wrong backward). Raises CheckFailed saying everything that is wrong, naming
    detached-graph when the forward values are right and the graph is cut.
    """
    forward_right = _forward_is_right(outputs)
    problems, stopped = _state_problems(got, outputs, expected, what)
    reached = len(stopped) < len(outputs) and not got.backward_error
    missing, wrong = _compare_gradients(got, expected, what) if reached else ([], [])
    cut = bool(stopped) or (bool(missing) and forward_right)
    if missing:
        problems.append(_missing_text(what, missing, forward_right))
    if forward_right:
        problems += [text for _name, text in wrong]
    elif wrong:
        # every gradient of a wrong forward differs: their names say enough
        problems.append(_("{what}: the gradients w.r.t. {names} differ from the expected ones too.",
                          what=what, names=join(", ", [name for name, _text in wrong])))
    # after an in-place change, a failed backward, a cut graph or float32 arithmetic inside, gradcheck
    # only says the same again
    plain = not (got.mutated or got.backward_error or cut or precision)
    check = _gradcheck_text(got.gradcheck, small, [name for name, _ret, _exp in outputs]) if plain else None
    if check:
        problems.append(check)
    if precision:
        # the same verdict as every float64 check that sees it, whatever the gradients' luck
        problems = [precision] + [p for p in problems if p not in [text for _n, text in wrong]]
    if not problems:
        return
    if not forward_right and not precision:
        problems.insert(0, _("{what}: your forward values already differ from the expected ones (the numbers "
                             "checks say where): fix those first. The gradients are compared with the "
                             "reference's, so they differ too.", what=what))
        if plain and got.gradcheck is not None and got.gradcheck.get("ok"):
            problems.append(_("A finite-difference gradient check (gradcheck's fast mode) finds your backward pass "
                              "consistent with your own "
                              "forward: fixing the forward values should fix the gradients too."))
    elif wrong and plain:
        problems.append(_("Your forward values are right, so the backward pass is what differs: part of the "
                          "graph may be cut ({hint}), or a custom autograd.Function's backward may be wrong.",
                          hint=translate(DETACH_HINT)))
    found = ["detached-graph"] if cut and forward_right else []
    fail(join("\n", problems), found)
