"""The sample submissions get the grades they must: full marks, zero, and the lesson's mistakes named."""
import re

import pytest

from autograder import contract, i18n
from autograder.reference import misconceptions
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


@pytest.mark.parametrize("assignment", list(contract.ASSIGNMENTS))
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_released_stubs_score_zero_and_say_so(graded, assignment, lang):
    """Every released stub, English or Chinese, graded in its language: zero, every check naming its step."""
    folder = f"assignments/{assignment}" if lang == "en" else f"assignments/zh/{assignment}"
    code, out, results = graded(folder, "--lang", lang)
    assert code == 0, out
    points = sum(s.points for s in contract.ASSIGNMENTS[assignment])
    assert results["score"] == 0 and results["extra_data"]["max_score"] == points
    steps = by_step(results)
    assert set(steps) == {s.stem for s in contract.ASSIGNMENTS[assignment]}
    for stem, tests in steps.items():
        number = contract.step_for_stem(stem).number
        says = f"Step {number}: implement" if lang == "en" else f"第 {number} 步：请实现"
        for t in tests:
            assert t["status"] == "failed"
            assert "NotImplementedError" in t["output"] and says in t["output"], t
            assert "not-implemented" in t["tags"]
    assert ("total" if lang == "en" else "总计") in out and f"0/{points}" in out


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
    assert any("makes NumPy 2 promote the float32 array" in t["output"] for t in steps["03_scaling"])


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


CJK = re.compile("[\u4e00-\u9fff]")


def test_lesson_in_chinese_gets_the_same_grades_in_chinese_words(graded):
    """`--lang zh` changes the words, never the grade: the same checks pass and fail with the same points
    and misconception tags, and what the student reads is Chinese (code and numbers aside)."""
    _, _, english = graded("samples/lesson")
    code, out, chinese = graded("samples/lesson", "--lang", "zh")
    assert code == 0, out

    def outcome(results):
        return [(t["number"], t["status"], t["score"], t["max_score"], t["tags"]) for t in results["tests"]]
    assert outcome(chinese) == outcome(english)
    assert chinese["score"] == english["score"]
    for t in chinese["tests"]:
        assert CJK.search(t["name"]), t["name"]                       # check titles and step titles too
        assert CJK.search(t["output"]), (t["number"], t["output"])    # "通过。" for a passed check
        for english_words in ("Likely cause", "Hint:", "Passed.", "values differ from the expected",
                              "does not define", "(same message as"):
            assert english_words not in t["output"], (t["number"], t["output"])
    with i18n.language("zh"):
        diagnosis = str(i18n.translate(misconceptions.CATALOGUE["scale-multiplied"].diagnosis))
    named = [t for t in by_step(chinese)["07_full_module"] if "misconception:scale-multiplied" in t["tags"]]
    assert named and all(diagnosis in t["output"] for t in named)
    assert "总分" in chinese["output"] and "总计" in out            # results.json's summary, the terminal table


def test_lesson_complexity_a_heads_loop_is_told_in_step_6_and_nothing_else_is_charged(graded):
    """The lesson's multi-head demo loops over the heads: step 6 tells it in a note and keeps the point.
    Its other code is vectorised and calls no forbidden API, so the complexity and api checks fail
    only in step 7, whose MultiHeadSelfAttention the lesson never defines."""
    _, _, results = graded("samples/lesson")
    rules = {t["number"]: t for t in results["tests"]
             if {"kind:complexity", "kind:api"} & set(t["tags"])}
    assert len(rules) == 10                      # one complexity check per step, api checks in 4, 6, 7
    assert "it loops over the heads, as the lesson's demo does" in rules["6.11"]["output"]
    assert "with 2, 4, 8 heads your code" in rules["6.11"]["output"]
    failed = {n for n, t in rules.items() if t["status"] != "passed"}
    assert failed == {"7.12", "7.13"}
    assert all("does not define `MultiHeadSelfAttention`" in rules[n]["output"] for n in failed)
    # its K.T cannot take batch axes: the batch is not measured (told), the checks with batch axes charge it
    assert "raised ValueError on inputs with batch axes" in rules["2.7"]["output"]


# samples/modern_mistakes: the second assignment's references, each step with one habit the
# catalogue names (the file's docstring says which)
MODERN_HABITS = {"01_masks": "mask-after-softmax", "02_cross_attention": "kv-from-x",
                 "03_grouped_query": "gqa-heads-tiled", "04_rope": "rope-interleaved",
                 "05_kv_cache": "kv-cache-no-causal-new", "06_flash_attention": "online-no-rescale"}


def test_modern_mistakes_are_named_at_their_steps_in_both_languages(graded):
    code, out, english = graded("samples/modern_mistakes")
    assert code == 0, out
    code, out, chinese = graded("samples/modern_mistakes", "--lang", "zh")
    assert code == 0, out
    assert english["extra_data"]["max_score"] == sum(s.points for s in contract.ASSIGNMENTS["modern_attention"])
    assert [(t["number"], t["score"], t["tags"]) for t in chinese["tests"]] == \
        [(t["number"], t["score"], t["tags"]) for t in english["tests"]]
    steps_en, steps_zh = by_step(english), by_step(chinese)
    assert set(steps_en) == set(MODERN_HABITS)
    for stem, habit in MODERN_HABITS.items():
        assert sum(t["score"] for t in steps_en[stem]) < contract.step_for_stem(stem).points, stem
        entry = misconceptions.CATALOGUE[habit]
        for tests, lang in ((steps_en[stem], "en"), (steps_zh[stem], "zh")):
            named = [t for t in tests if f"misconception:{habit}" in t["tags"]]
            with i18n.language(lang):
                diagnosis = str(i18n.translate(entry.diagnosis))
            assert named and all(diagnosis in t["output"] for t in named), (stem, lang)
