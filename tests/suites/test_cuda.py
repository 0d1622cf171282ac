"""CUDA: device checks carry no points; they run where a GPU is present and skip with a reason elsewhere."""
import pytest
import torch

from conftest import by_step

HAS_CUDA = torch.cuda.is_available()


def device_checks(results):
    return [t for t in results["tests"] if "kind:device" in t["tags"]]


@pytest.mark.skipif(HAS_CUDA, reason="this machine has a GPU: the device checks run instead (see below)")
def test_without_a_gpu_device_checks_are_skipped_with_the_reason(graded):
    _, _, results = graded("source/self_attention")
    assert device_checks(results) == []
    for stem in ("06_multi_head", "07_full_module"):
        skipped = results["extra_data"]["steps"][stem]["skipped"]
        assert skipped and all("no CUDA GPU" in s["reason"] for s in skipped)


@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU on this machine")
@pytest.mark.parametrize("submission", ["source/self_attention", "samples/unusual_style"])
def test_with_a_gpu_correct_code_passes_every_device_check(graded, submission):
    _, _, results = graded(submission)
    checks = device_checks(results)
    assert checks, "device checks ran"
    assert all(t["status"] == "passed" and t["max_score"] == 0 for t in checks), \
        [(t["number"], t["output"]) for t in checks if t["status"] != "passed"]
    assert all(not s["skipped"] for s in results["extra_data"]["steps"].values())
    assert results["score"] == results["extra_data"]["max_score"] == 70


@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU on this machine")
def test_with_a_gpu_the_lesson_module_is_still_told_its_mistake(graded):
    _, _, results = graded("samples/lesson")
    step7 = by_step(results)["07_full_module"]
    assert any("misconception:scale-multiplied" in t["tags"] for t in step7 if "kind:device" in t["tags"])
