"""The third assignment (decoder, issue 31) as an nbgrader course, through nbgrader's own command
line, in English and in Chinese: a new user releases it (`nbgrader generate_assignment decoder`),
fills it with the masters and gets full marks, sees the loss fall and the model generate (step 6's
demo cells, run by autograde, read data/corpus.txt, which nbgrader copies beside the notebooks
from the course's source/decoder/data/); the stubs score 0, each naming its step.

Two courses graded side by side, each in a temporary copy of the repo's course (harness.nbgrader_course):
- English: ada solved every step with the masters' solutions; ben handed in every stub as released;
- Chinese (`c.AttentionKit.language = "zh"`): li solved every step; wen handed in three stubs.
"""
import re
import threading

import nbformat
import pytest

from autograder import contract, i18n
from autograder.commands import release
from autograder.i18n import _
from harness import nbgrader_course
from harness.nbgrader_course import (assert_ran_top_to_bottom, hidden_cell, make_course, nbgrader, recorded,
                                     student_notebook, submit)

ASSIGNMENT = "decoder"
STEPS = contract.ASSIGNMENTS[ASSIGNMENT]
STEMS = [s.stem for s in STEPS]
NUMBER = {s.stem: s.number for s in STEPS}
POINTS = {s.stem: s.points for s in STEPS}
ZH_STUBS = ("01_rmsnorm", "03_decoder_block", "05_generation")      # wen's stubs (fewer notebooks: faster)
SOLVED = {"en": "ada", "zh": "li"}
STUBS = {"en": ("ben", STEMS), "zh": ("wen", ZH_STUBS)}


def graded_course(tmp, language):
    course, db = make_course(tmp, language)
    nbgrader(course, db, "generate_assignment", ASSIGNMENT)
    stub_student, stub_stems = STUBS[language]
    submissions = {SOLVED[language]: {stem: student_notebook(course, stem, assignment=ASSIGNMENT) for stem in STEMS},
                   stub_student: {stem: student_notebook(course, stem, fill=False, assignment=ASSIGNMENT)
                                  for stem in stub_stems}}
    submit(course, ASSIGNMENT, submissions)
    nbgrader(course, db, "autograde", ASSIGNMENT)
    return {"dir": course, "lang": language, "scores": recorded(db, ASSIGNMENT)}


@pytest.fixture(scope="module")
def courses(tmp_path_factory):
    """{"en": course, "zh": course}, the two graded at the same time (each is mostly waiting)."""
    found, errors = {}, []

    # The folders are made here, before the threads: pytest's mktemp is not thread-safe (two threads
    # both creating the worker's base folder fail with FileExistsError).
    folders = {lang: tmp_path_factory.mktemp(f"decoder-{lang}") for lang in ("en", "zh")}

    def grade(lang):
        try:
            found[lang] = graded_course(folders[lang], lang)
        except BaseException as e:         # re-raised below, in the test's thread
            errors.append(e)
    threads = [threading.Thread(target=grade, args=(lang,)) for lang in ("en", "zh")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return found


def step_total(stem, score, lang):
    """"Step 3: 0/10" (or "第 3 步：0/10"), the last line of a step's hidden cell."""
    return i18n.render(_("Step {step}: {score}/{max_score}", step=NUMBER[stem], score=f"{score:g}",
                         max_score=f"{POINTS[stem]:g}"), lang)


def autograded(course, student, stem):
    return nbgrader_course.autograded(course["dir"], student, stem, ASSIGNMENT)


def stub_messages(course, stem):
    """What the released stubs of `stem` raise ("Step 1: implement RMSNorm"), in the course's language."""
    nb = nbformat.read(str(course["dir"] / "assignments" / ASSIGNMENT / f"{stem}.ipynb"), as_version=4)
    code = "\n".join(c.source for c in nb.cells if release.is_solution_cell(c))
    return [line.split('NotImplementedError("')[1].rstrip('")') for line in code.split("\n")
            if "raise NotImplementedError(" in line]


def hidden_output(course, student, stem):
    outputs = hidden_cell(course["dir"], student, stem, ASSIGNMENT).outputs
    assert [(o.output_type, o.get("name")) for o in outputs] == [("stream", "stdout"), ("execute_result", None)]
    return outputs[0].text, float(outputs[1].data["text/plain"])


def demo_text(course, student, grade_id):
    (cell,) = [c for c in autograded(course, student, "06_training").cells
               if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id]
    assert not [o for o in cell.outputs if o.output_type == "error"], cell.outputs
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


# ------------------------------------------------------------------ the tests
def test_the_release_has_the_corpus_and_the_courses_language(courses):
    for lang, course in courses.items():
        released = course["dir"] / "assignments" / ASSIGNMENT         # the config's release folder
        assert (released / "data" / "corpus.txt").read_text(encoding="utf-8") == \
            (contract.REGISTRY[ASSIGNMENT].stub_folder / "data" / "corpus.txt").read_text(encoding="utf-8")
        for stem in STEMS:
            messages = stub_messages(course, stem)
            assert messages, (lang, stem)
            expected = f"第 {NUMBER[stem]} 步：请实现 " if lang == "zh" else f"Step {NUMBER[stem]}: implement "
            assert all(m.startswith(expected) for m in messages), (lang, stem, messages)


def test_the_masters_get_full_marks_in_both_languages(courses):
    for lang, course in courses.items():
        student = SOLVED[lang]
        assert course["scores"][student] == POINTS, (lang, course["scores"][student])
        for stem in STEMS:
            text, points = hidden_output(course, student, stem)
            assert points == POINTS[stem]
            assert i18n.render(_("[FAIL]"), lang) not in text, (lang, stem, text)
            assert text.rstrip().endswith(step_total(stem, points, lang)), (lang, stem, text[-300:])


@pytest.mark.parametrize("step", STEPS, ids=lambda s: s.stem)
def test_every_master_runs_top_to_bottom_and_grades_itself(courses, step):
    assert_ran_top_to_bottom(courses["en"]["dir"], SOLVED["en"], step, ASSIGNMENT)


def test_the_loss_falls_and_the_model_generates(courses):
    """Step 6's demo cells ran in nbgrader's autograded copy: the corpus was found, the loss fell
    below the notebook's stated 2.3 within 200 steps, and the model wrote text after the prompt."""
    for lang, course in courses.items():
        student = SOLVED[lang]
        training = demo_text(course, student, "step06_training_demo")
        losses = [float(x) for x in re.findall(r"(\d+\.\d+)\s*$", training, re.M)]    # a line each 25 steps
        assert len(losses) == 8 and losses[-1] < 2.3 < losses[0], (lang, training)
        written = demo_text(course, student, "step06_generation_demo").strip().split("\n")
        assert len(written) == 2, (lang, written)                      # greedy, then sampled
        for line in written:                                            # the prompt, then 80 characters
            assert "The attention " in line and len(line) > len("The attention ") + 60, (lang, line)


def test_the_stubs_score_zero_naming_their_step(courses):
    for lang, course in courses.items():
        student, stems = STUBS[lang]
        assert {stem: course["scores"][student][stem] for stem in stems} == {stem: 0 for stem in stems}, lang
        for stem in stems:
            text, points = hidden_output(course, student, stem)
            assert points == 0
            assert text.rstrip().endswith(step_total(stem, 0, lang)), (lang, stem, text[-300:])
            assert any(m in text for m in stub_messages(course, stem)), (lang, stem, text)
