"""A test-only third assignment (issue 26): one numpy step, registered from outside the kit.

It proves that an assignment is data: its step (below), its hidden suite (suites/), its
reference (references/), its released stub notebook (stubs/), its catalogue entry and the audit's
probes (variants/) are all in this folder (its audit record too: mutation_audit.json), and registering it (`contract.load_file(this file)`, or naming this file in the
environment variable ATTENTION_KIT_ASSIGNMENTS for every process of a run) is all it takes for
every path of the kit to grade it: tests/e2e/test_assignment_matrix.py does so, with no change to the
kit's modules. docs/architecture.md's "Adding an assignment" is the list of what this folder holds.
"""
from pathlib import Path

from autograder import contract
from autograder.contract import Assignment, Function, Step, Value as V
from autograder.i18n import N_

HERE = Path(__file__).resolve().parent
NAME = "toy_scores"
MISTAKE = "toy-scores-transposed"

STEPS = (
    Step(1, "01_toy_scores", N_("Toy scores Q K^T"), "numpy", (
        Function("toy_scores", (V("Q", "(..., T_q, d)"), V("K", "(..., T_k, d)")), (V("scores", "(..., T_q, T_k)"),),
                 "Q K^T over the last two axes"),)),
)


def _catalogue_entry():
    from autograder.reference.misconceptions import Misconception
    return Misconception(MISTAKE, ("01_toy_scores",), N_("you computed K Q^T instead of Q K^T."),
                         N_("Rows of the scores are queries, columns are keys."),
                         N_("use Q @ np.swapaxes(K, -1, -2)."))


def register():
    """Register the assignment and its catalogue entry (idempotent)."""
    from autograder.reference import misconceptions
    contract.register(Assignment(NAME, STEPS, suites=HERE / "suites", stubs=HERE / "stubs", home=HERE,
                                 references=HERE / "references", variants=HERE / "variants"))
    misconceptions.CATALOGUE.setdefault(MISTAKE, _catalogue_entry())


def unregister():
    from autograder.reference import misconceptions
    contract.unregister(NAME)
    misconceptions.CATALOGUE.pop(MISTAKE, None)


register()
