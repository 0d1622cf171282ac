"""Fixtures for the hidden suites: `student` calls the submission's code for the module's STEP."""
import pytest

from autograder import contract
from autograder.reference import misconceptions
from autograder.checks.expect import EVIDENCE, Evidence, skip
from autograder.checks.student import STEP_CHILDREN, Student
from autograder.i18n import _


@pytest.fixture(autouse=True)
def step_framework(request):
    """Hints in the names of the step's library (contract.Step.framework) for every check of the module."""
    token = misconceptions.FRAMEWORK.set(contract.step_for_stem(request.module.STEP).framework)
    # the step's evidence for this submission (checks.expect.Evidence): kept on its StepChild, which
    # every check of the step shares and the next submission does not
    child = request.config.stash.get(STEP_CHILDREN, {}).get(request.module.STEP)
    if child is not None and not isinstance(getattr(child, "evidence", None), Evidence):
        child.evidence = Evidence()
    told = EVIDENCE.set(child.evidence if child is not None else Evidence())
    yield
    EVIDENCE.reset(told)
    misconceptions.FRAMEWORK.reset(token)


@pytest.fixture(scope="module")
def student(request):
    """The student's code for this suite's step (a `Student` adapter, CPU inputs)."""
    sessions = request.config.stash[STEP_CHILDREN]
    return Student(sessions[request.module.STEP])


@pytest.fixture
def cuda():
    """The CUDA device name; skips the check with a reason where no GPU is present."""
    import torch
    if not torch.cuda.is_available():
        skip(_("no CUDA GPU on the grading machine; GPU checks carry no points and are skipped"))
    return "cuda"
