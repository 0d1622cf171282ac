"""The grader's own BLAS runs one thread before any child is started: children are forked from a
second thread while the main thread computes the references, and a multi-threaded OpenBLAS hangs
both there (its fork handler waits for a lock that the running BLAS call holds)."""
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from autograder.grading import run
from conftest import ROOT


class Stop(Exception):
    pass


def test_blas_has_one_thread_when_the_children_start(monkeypatch):
    threadpool_limits(limits=2, user_api="blas")     # as numpy loads on two cores without the command's env
    monkeypatch.setattr(run, "_blas_limited", False)
    seen = []

    def start_children(job):
        seen.append({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"})
        raise Stop

    monkeypatch.setattr(run.Job, "start_children", start_children)
    with pytest.raises(Stop):
        run.grade(ROOT / "samples" / "lesson" / "02_scores.py")
    assert seen == [{1}]
