"""The third assignment's suites: the `student` fixture, as the kit's suites/conftest.py gives it."""
import pytest

from autograder.checks.student import STEP_CHILDREN, Student


@pytest.fixture(scope="module")
def student(request):
    return Student(request.config.stash[STEP_CHILDREN][request.module.STEP])
