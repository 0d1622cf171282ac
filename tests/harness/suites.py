"""A hidden suite (autograder/suites/stepNN_name.py) loaded as a module from its file, as the
grader's pytest loads it, for tests that call its helpers without grading anything."""
import importlib.util
import warnings
from pathlib import Path

import pytest

SUITES = Path(__file__).resolve().parents[2] / "autograder" / "suites"


def load_suite(stem, prefix="suite"):
    """The suite of step `stem` ("06_multi_head") as a fresh module named f"{prefix}_{stem}"."""
    spec = importlib.util.spec_from_file_location(f"{prefix}_{stem}", SUITES / f"step{stem}.py")
    module = importlib.util.module_from_spec(spec)
    with warnings.catch_warnings():
        # its marks (check, points...) are the grader's, registered by the grader's plugin, not by this session
        warnings.simplefilter("ignore", pytest.PytestUnknownMarkWarning)
        spec.loader.exec_module(module)
    return module
