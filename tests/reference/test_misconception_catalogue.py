"""Every catalogued mistake, written into code of a style unlike the reference, is named at its step.

Each step has a correct template written in another idiom than solutions/ (einsum, tensordot,
unflatten/flatten, a shared helper for both modules...). A case fills one or two of its `$slots`
with the mistake. All cases are graded step by step by the real grader (tests/harness/grade_many.py)
in two processes at once (numpy steps, torch steps: one per core), and each case must:

- be diagnosed with exactly its own id, and no other id anywhere in the step;
- fail exactly the checks listed (so the step loses exactly those checks' points);
- while the correct template gets full marks and no misconception at all;
- and, its messages rendered in Chinese (graded once: results keep messages as data), fail the same checks with the same ids,
  the diagnosis shown in Chinese.

`samples/unusual_style` and the source notebooks (other correct styles) are checked for "no
misconception" by tests/suites/test_samples.py.
"""
import pytest

from autograder import contract, i18n
from autograder.reference import misconceptions
from harness.catalogue import CASES, TEMPLATES, case_id, source
from harness.grade_many import grade_many, summary as _summary


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """{(label, stem): [check dicts]} for every case and every step's correct template, and
    {(label, stem, "zh"): the same checks rendered in Chinese} for every case."""
    root = tmp_path_factory.mktemp("catalogue")
    jobs = {("correct", stem): source(stem) for stem in TEMPLATES}
    jobs.update({(case_id(c), c[1]): source(c[1], c[2]) for c in CASES})
    keyed = []
    for i, ((label, stem), code) in enumerate(jobs.items()):
        folder = root / f"{i:02d}-{label}"
        folder.mkdir()
        (folder / f"{stem}.py").write_text(code)
        # every case also rendered in Chinese (the correct templates have no message to translate)
        keyed.append(((label, stem), (folder, stem, "en")))
        if label != "correct":
            keyed.append(((label, stem, "zh"), (folder, stem, "zh")))
    # numpy steps in one process, torch steps in another: the two cores grade side by side
    checks = grade_many([job for _key, job in keyed], processes=2)
    return {key: found for (key, _job), found in zip(keyed, checks)}


@pytest.mark.parametrize("stem", sorted(TEMPLATES))
def test_correct_template_gets_full_marks_and_no_misconception(graded, stem):
    checks = graded["correct", stem]
    assert checks and all(c["status"] == "passed" for c in checks), _summary(checks)
    assert sum(c["score"] for c in checks) == contract.step_for_stem(stem).points
    assert not any(c["misconceptions"] for c in checks)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_mistake_is_named_at_its_step(graded, case):
    mid, stem, _, must_fail = case
    checks = graded[case_id(case), stem]
    failed = {c["number"] for c in checks if c["status"] != "passed"}
    assert failed == set(must_fail.split()), _summary(checks)
    # exactly this id, never another one, and it is named by at least one graded check on CPU (a property
    # check counts: 6.5 is where a row with no allowed key is looked at)
    named = {m for c in checks for m in c["misconceptions"]}
    assert named == {mid}, _summary(checks)
    assert any(mid in c["misconceptions"] and c["kind"] in ("numbers", "stability", "shape", "gradients",
                                                             "complexity", "api", "property")
               for c in checks)
    # so the step scores its points less exactly those checks' points
    assert sum(c["score"] for c in checks) == contract.step_for_stem(stem).points - sum(
        c["max_score"] for c in checks if c["number"] in failed)
    # and the student reads the diagnosis
    text = misconceptions.CATALOGUE[mid].diagnosis
    assert any(text in c["output"] for c in checks if mid in c["misconceptions"])


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_mistake_is_named_at_its_step_in_chinese(graded, case):
    """The same grading in Chinese: the same checks fail with the same ids and points, and the
    student reads the diagnosis in Chinese, with no English sentence of the catalogue left."""
    mid, stem = case[:2]
    english, chinese = graded[case_id(case), stem], graded[case_id(case), stem, "zh"]
    def outcome(checks):
        return [(c["number"], c["status"], c["score"], c["misconceptions"]) for c in checks]
    assert outcome(chinese) == outcome(english), _summary(chinese)
    with i18n.language("zh"):
        text = str(i18n.translate(misconceptions.CATALOGUE[mid].diagnosis))
    assert text != misconceptions.CATALOGUE[mid].diagnosis, f"no Chinese diagnosis for {mid}"
    named = [c for c in chinese if mid in c["misconceptions"]]
    assert named and all(text in c["output"] for c in named), _summary(chinese)
    for c in named:
        assert "Likely cause" not in c["output"] and misconceptions.CATALOGUE[mid].why not in c["output"], c["output"]


def test_every_catalogued_mistake_has_a_case_at_every_step_it_can_occur():
    wanted = {(mid, stem) for mid, m in misconceptions.CATALOGUE.items() for stem in m.stems}
    covered = {(mid, stem) for mid, stem, _, _ in CASES}
    assert covered == wanted
