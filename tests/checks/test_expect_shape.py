"""expect_shape on a result of the wrong shape: always the student's failure with a message, never the
grader's internal error (a wrong-shaped loss, expected of shape (), raised IndexError where the hint
about swapped axes looked at the last two axes of a shape that has none)."""
import numpy as np
import pytest

from autograder import i18n
from autograder.checks import expect


class _Got:
    def __init__(self, array):
        self.array, self.shape, self.dtype = array, array.shape, str(array.dtype)


@pytest.fixture(autouse=True)
def step_evidence():
    told = expect.EVIDENCE.set(expect.Evidence())
    yield
    expect.EVIDENCE.reset(told)


@pytest.mark.parametrize("got, shape", [((3,), ()), ((2, 3), ()), ((), (3,)), ((3,), (4,)), ((2,), (2, 3))])
def test_a_wrong_shape_fails_with_a_message_in_both_languages(got, shape):
    with pytest.raises(expect.CheckFailed) as failure:
        expect.expect_shape(_Got(np.zeros(got)), shape, "lm_loss(logits, tokens)")
    texts = {lang: i18n.render(failure.value.args[0], lang) for lang in i18n.LANGUAGES}
    assert all(str(shape) in t for t in texts.values()), texts
    assert texts["en"] != texts["zh"]


def test_a_scalar_expected_says_one_number_and_swapped_axes_still_said():
    with pytest.raises(expect.CheckFailed) as failure:
        expect.expect_shape(_Got(np.zeros(3)), (), "lm_loss(logits, tokens)")
    assert "One number is expected" in i18n.render(failure.value.args[0], "en")
    with pytest.raises(expect.CheckFailed) as failure:
        expect.expect_shape(_Got(np.zeros((3, 2))), (2, 3), "scores")
    assert "swapped" in i18n.render(failure.value.args[0], "en")
