"""The sample submissions get the grades they must: full marks, zero, and the lesson's mistakes named."""
import re

from autograder import contract
from conftest import by_step, tags_of

ALL_POINTS = sum(s.points for s in contract.STEPS)


def assert_full_marks(results):
    assert results["extra_data"]["max_score"] == ALL_POINTS
    failed = [(t["number"], t["output"]) for t in results["tests"] if t["status"] != "passed"]
    assert not failed
    assert results["score"] == ALL_POINTS
    assert not any(tag.startswith("misconception:") for t in results["tests"] for tag in t["tags"])


def test_source_notebooks_get_full_marks(graded):
    code, out, results = graded("source/self_attention")
    assert code == 0, out
    assert_full_marks(results)


def test_correct_code_in_unusual_style_gets_full_marks(graded):
    """einsum, moveaxis, permute, F.linear, unbind+cat ...: idioms never cost points."""
    code, out, results = graded("samples/unusual_style")
    assert code == 0, out
    assert_full_marks(results)


def test_released_stubs_score_zero_and_say_so(graded):
    code, out, results = graded("assignments/self_attention")
    assert code == 0, out
    assert results["score"] == 0
    for stem, tests in by_step(results).items():
        number = contract.step_for_stem(stem).number
        for t in tests:
            assert t["status"] == "failed"
            assert "NotImplementedError" in t["output"] and f"Step {number}: implement" in t["output"], t
            assert "not-implemented" in t["tags"]
    assert "total" in out and f"0/{ALL_POINTS}" in out


def test_lesson_module_loses_points_for_multiplying_by_sqrt_d(graded):
    code, out, results = graded("samples/lesson")
    assert code == 0, out
    steps = by_step(results)
    step7 = steps["07_full_module"]
    assert sum(t["score"] for t in step7) < sum(t["max_score"] for t in step7)
    named = [t for t in step7 if "misconception:scale-multiplied" in t["tags"]]
    assert named and all("multiplied the scores by sqrt(d_k) instead of dividing" in t["output"] for t in named)
    # and no other misconception is claimed for that module
    assert {tag for t in step7 for tag in t["tags"] if tag.startswith("misconception:")} == {
        "misconception:scale-multiplied"}


def test_lesson_other_habits_are_named(graded):
    _, _, results = graded("samples/lesson")
    assert "misconception:scale-by-d-model" in tags_of(results, "05_weighted_sum")
    assert "misconception:missing-output-projection" in tags_of(results, "06_multi_head")
    # its numpy softmax and scaling are right (with NumPy 2's float64 promotion accepted)
    steps = by_step(results)
    for stem in ("01_projection", "03_scaling", "04_softmax"):
        assert all(t["status"] == "passed" for t in steps[stem]), stem
    assert any("NumPy 2 promotes" in t["output"] for t in steps["03_scaling"])


def test_results_json_has_gradescope_fields(graded):
    _, _, results = graded("samples/lesson")
    assert isinstance(results["score"], (int, float))
    numbers = [t["number"] for t in results["tests"]]
    assert len(numbers) == len(set(numbers))
    for t in results["tests"]:
        assert set(t) >= {"name", "number", "score", "max_score", "status", "output", "visibility", "tags"}
        assert t["status"] in ("passed", "failed")
        assert 0 <= t["score"] <= t["max_score"]
        assert re.fullmatch(r"\d\.\d+", t["number"])
        assert any(tag.startswith("step:") for tag in t["tags"]) and any(tag.startswith("kind:") for tag in t["tags"])
    for stem, tests in by_step(results).items():
        assert sum(t["max_score"] for t in tests) == contract.step_for_stem(stem).points
    assert results["extra_data"]["isolation"]


def test_messages_never_show_grader_internals(graded):
    for sub in ("samples/lesson", "assignments/self_attention"):
        _, _, results = graded(sub)
        for t in results["tests"]:
            for needle in ("autograder/", "runner.py", "_pytest", "site-packages", "Traceback (most recent"):
                assert needle not in t["output"], (sub, t["number"], t["output"])
