"""The second assignment (modern_attention) as an nbgrader course, through nbgrader's own command
line, in English and in Chinese: release, autograde, export, generate feedback.

Two courses, graded side by side, each in a temporary copy of the repo's course:
- English: ada solved every step (the masters' solutions in the released notebooks); ben made one
  lesson-style mistake of the catalogue at each of four steps and left the other two stubs;
- Chinese (`c.AttentionKit.language = "zh"` in its nbgrader_config.py): the release must be the
  Chinese notebooks; li hands in two solved steps, a stub and three of ben's mistakes.
A few notebooks per student and language keep it under two minutes (every stub and every mistake
is graded on its own by tests/commands/test_release.py and tests/reference/test_misconception_catalogue.py).
nbgrader must record the standalone grader's scores (full, zero, partial), the hidden cells'
output and the feedback must name each stub's step and each mistake at its step in the course's
language, and the feedback must carry neither the hidden cells' source nor reference code."""
import csv
import subprocess
import sys
import threading

import nbformat
import pytest

from autograder import contract, i18n
from autograder.commands import release
from autograder.i18n import _, translate
from autograder.reference import misconceptions
from conftest import ROOT
from harness.nbgrader_course import (assert_ran_top_to_bottom, feedback_text, hidden_cell, make_course,
                                     master_solutions, nbgrader, recorded, standalone_scores, start_standalone,
                                     student_notebook, submit)

ASSIGNMENT = "modern_attention"
STEPS = contract.ASSIGNMENTS[ASSIGNMENT]
STEMS = [s.stem for s in STEPS]
NUMBER = {s.stem: s.number for s in STEPS}
TOTAL = sum(s.points for s in STEPS)

# One catalogued mistake per step, written into the master's own solution (so the rest of the
# cell is right): (misconception id, grade id of the cell, [(text of the master, the mistake)]).
MISTAKES = {
    "01_masks": ("mask-after-softmax", "step01_masked_attention", [
        ('torch.softmax(scores.masked_fill(blocked, float("-inf")), dim=-1)', "torch.softmax(scores, dim=-1)")]),
    "03_grouped_query": ("gqa-heads-tiled", "step03_grouped_query_attention", [   # repeat for repeat_interleave
        ("k.repeat_interleave(group, dim=1)", "k.repeat(1, group, 1, 1)"),
        ("v.repeat_interleave(group, dim=1)", "v.repeat(1, group, 1, 1)")]),
    "04_rope": ("rope-interleaved", "step04_apply_rope", [                      # pairs (2i, 2i + 1)
        ("x[..., :half], x[..., half:]", "x[..., 0::2], x[..., 1::2]"),
        ("torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)",
         "torch.stack([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).flatten(-2)")]),
    "06_flash_attention": ("online-no-rescale", "step06_tiled_attention", [     # the running sums never rescaled
        ("l = l * correction + p.sum(dim=-1)", "l = l + p.sum(dim=-1)"),
        ("acc = acc * correction[..., None] + p @ vb", "acc = acc + p @ vb")]),
}
EN_STUBS = ("02_cross_attention", "05_kv_cache")                                  # ben's other steps
ZH_SOLVED, ZH_STUB = ("02_cross_attention", "05_kv_cache"), "03_grouped_query"   # li's other steps
ZH_MISTAKES = ("01_masks", "04_rope", "06_flash_attention")
SECRETS = ["grade_step(", "autograder.commands.notebook_hook", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"]


def mistaken(course, stem):
    """The released notebook of `stem`, solved, with MISTAKES[stem] written into its cell."""
    _mid, gid, edits = MISTAKES[stem]
    code = master_solutions(stem, ASSIGNMENT)[gid]
    for right, wrong in edits:
        assert right in code, f"the master of {stem} changed: {right!r} is not in {gid}"
        code = code.replace(right, wrong)
    return student_notebook(course, stem, {gid: code}, assignment=ASSIGNMENT)


def graded_course(tmp, language, submissions_of, audited, warm):
    """Release, submit (submissions_of(course) -> {student: {stem: notebook}}), grade with nbgrader
    and, meanwhile, standalone; export and feedback, and meanwhile `nbgrader-crosscheck` of the
    student `audited`. A dict of what the tests read."""
    course, db = make_course(tmp, language)
    nbgrader(course, db, "generate_assignment", ASSIGNMENT)
    submissions = submissions_of(course)
    submit(course, ASSIGNMENT, submissions)
    procs = start_standalone(course, ASSIGNMENT, submissions, tmp, warm)
    nbgrader(course, db, "autograde", ASSIGNMENT)
    audit = subprocess.Popen([sys.executable, "-m", "autograder", "nbgrader-crosscheck", "--course", str(course),
                              "--db", db, "--student", audited], cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    nbgrader(course, db, "export")
    nbgrader(course, db, "generate_feedback", ASSIGNMENT)
    crosscheck = audit.communicate(timeout=600)[0]
    return {"dir": course, "db": db, "lang": language, "submissions": submissions, "crosscheck": crosscheck,
            "crosscheck_rc": audit.returncode, "standalone": standalone_scores(procs, tmp),
            "scores": recorded(db, ASSIGNMENT)}


def english(course):
    return {"ada": {stem: student_notebook(course, stem, assignment=ASSIGNMENT) for stem in STEMS},
            "ben": {stem: mistaken(course, stem) if stem in MISTAKES
                    else student_notebook(course, stem, fill=False, assignment=ASSIGNMENT) for stem in STEMS}}


def chinese(course):
    li = {stem: student_notebook(course, stem, assignment=ASSIGNMENT) for stem in ZH_SOLVED}
    li[ZH_STUB] = student_notebook(course, ZH_STUB, fill=False, assignment=ASSIGNMENT)
    li.update({stem: mistaken(course, stem) for stem in ZH_MISTAKES})
    return {"li": li}


@pytest.fixture(scope="module")
def courses(tmp_path_factory, warm_cli):
    """{"en": course, "zh": course}, the two graded at the same time (each is mostly waiting)."""
    found, errors = {}, []

    # The folders are made here, before the threads: pytest's mktemp is not thread-safe (two threads
    # both creating the worker's base folder fail with FileExistsError).
    folders = {lang: tmp_path_factory.mktemp(f"modern-{lang}") for lang in ("en", "zh")}

    def grade(lang, submissions_of, audited):
        try:
            found[lang] = graded_course(folders[lang], lang, submissions_of, audited, warm_cli)
        except BaseException as e:         # re-raised below, in the test's thread
            errors.append(e)
    threads = [threading.Thread(target=grade, args=args) for args in (("en", english, "ben"), ("zh", chinese, "li"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return found


def rendered(message, lang):
    return i18n.render(message, lang)


def step_total(stem, score, lang):
    """"Step 3: 0/10" (or "第 3 步：0/10"), the last line of a step's hidden cell."""
    return rendered(_("Step {step}: {score}/{max_score}", step=NUMBER[stem], score=f"{score:g}",
                      max_score=f"{contract.step_for_stem(stem).points:g}"), lang)


def diagnosis(mid, lang):
    return rendered(translate(misconceptions.CATALOGUE[mid].diagnosis), lang)


def stub_message(course, stem):
    """What the released stubs of `stem` raise ("Step 1: implement causal_mask"), in the course's language."""
    nb = nbformat.read(str(course["dir"] / "assignments" / ASSIGNMENT / f"{stem}.ipynb"), as_version=4)
    code = "\n".join(c.source for c in nb.cells if release.is_solution_cell(c))
    return [line.split('NotImplementedError("')[1].rstrip('")') for line in code.split("\n")
            if "raise NotImplementedError(" in line]


def hidden_output(course, student, stem):
    outputs = hidden_cell(course["dir"], student, stem, ASSIGNMENT).outputs
    assert [(o.output_type, o.get("name")) for o in outputs] == [("stream", "stdout"), ("execute_result", None)]
    return outputs[0].text, float(outputs[1].data["text/plain"])


# ------------------------------------------------------------------ the tests
def test_the_chinese_course_releases_the_chinese_notebooks(courses):
    for lang, course in courses.items():
        for stem in STEMS:
            stubs = stub_message(course, stem)
            assert stubs, (lang, stem)
            for message in stubs:
                expected = "第 {} 步：请实现 ".format(NUMBER[stem]) if lang == "zh" else f"Step {NUMBER[stem]}: implement "
                assert message.startswith(expected), (lang, stem, message)
            nb = nbformat.read(str(course["dir"] / "assignments" / ASSIGNMENT / f"{stem}.ipynb"), as_version=4)
            text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
            assert ("查询" in text) == (lang == "zh"), (lang, stem)      # the glossary's query, and the text's


def test_nbgrader_records_the_standalone_graders_scores(courses):
    for lang, course in courses.items():
        for student, notebooks in course["submissions"].items():
            for stem in STEMS:
                assert course["scores"][student][stem] == course["standalone"][student][stem], (lang, student, stem)
    en, zh = courses["en"]["scores"], courses["zh"]["scores"]["li"]
    assert en["ada"] == {stem: contract.step_for_stem(stem).points for stem in STEMS}
    for stem in EN_STUBS:
        assert en["ben"][stem] == 0, stem
    for stem in MISTAKES:
        assert 0 < en["ben"][stem] < contract.step_for_stem(stem).points, (stem, en["ben"][stem])
    # the same code scores the same in the Chinese notebooks
    assert zh == {stem: en["ada"][stem] if stem in ZH_SOLVED else en["ben"][stem] if stem in ZH_MISTAKES else 0
                  for stem in STEMS}


def test_the_crosscheck_audits_the_second_assignment(courses):
    for lang, course in courses.items():
        out = course["crosscheck"]
        assert course["crosscheck_rc"] == 0 and "<-- differs" not in out, (lang, out)
        assert f"0 of {len(STEPS)} notebooks" in out, (lang, out)
        assert all(stem in out for stem in STEMS), (lang, out)


def test_exported_csv_has_each_students_total(courses):
    for lang, course in courses.items():
        with open(course["dir"] / "grades.csv", newline="") as f:
            rows = {r["student_id"]: r for r in csv.DictReader(f)}
        for student in course["submissions"]:
            assert float(rows[student]["score"]) == sum(course["standalone"][student].values()), (lang, student)
            assert float(rows[student]["max_score"]) == TOTAL


def test_stubs_score_zero_naming_their_step(courses):
    for lang, course, student, stems in [("en", courses["en"], "ben", EN_STUBS), ("zh", courses["zh"], "li", [ZH_STUB])]:
        for stem in stems:
            text, points = hidden_output(course, student, stem)
            assert points == 0
            assert text.rstrip().endswith(step_total(stem, 0, lang)), (lang, stem, text[-300:])
            feedback = feedback_text(course["dir"], student, stem, ASSIGNMENT)
            # the stub's own words (the step and the name), the first one its checks called at least
            assert any(m in text and m in feedback for m in stub_message(course, stem)), (lang, stem, text)


def test_each_mistake_is_named_at_its_step_in_the_courses_language(courses):
    for lang, course, student, stems in [("en", courses["en"], "ben", list(MISTAKES)),
                                         ("zh", courses["zh"], "li", ZH_MISTAKES)]:
        for stem in stems:
            mid = MISTAKES[stem][0]
            text, points = hidden_output(course, student, stem)
            assert text.rstrip().endswith(step_total(stem, points, lang)), (lang, stem)
            feedback = feedback_text(course["dir"], student, stem, ASSIGNMENT)
            assert diagnosis(mid, lang) in text and diagnosis(mid, lang) in feedback, (lang, stem, mid, text[:2000])
            other = "en" if lang == "zh" else "zh"
            assert diagnosis(mid, other) not in feedback, (lang, stem)
            others = [m for m in misconceptions.CATALOGUE if m != mid and stem in misconceptions.CATALOGUE[m].stems]
            for m in others:                                        # named with its own id only
                assert diagnosis(m, lang) not in text, (lang, stem, mid, m)


@pytest.mark.parametrize("step", STEPS, ids=lambda s: s.stem)
def test_every_master_runs_top_to_bottom_and_grades_itself(courses, step):
    assert_ran_top_to_bottom(courses["en"]["dir"], "ada", step, ASSIGNMENT)


def test_solved_steps_pass_every_check(courses):
    for lang, course, student, stems in [("en", courses["en"], "ada", STEMS), ("zh", courses["zh"], "li", ZH_SOLVED)]:
        for stem in stems:
            text, points = hidden_output(course, student, stem)
            assert points == contract.step_for_stem(stem).points
            fail = rendered(_("[FAIL]"), lang)
            assert fail not in text and text.rstrip().endswith(step_total(stem, points, lang)), (lang, stem, text)


def test_feedback_has_no_hidden_code_or_references(courses):
    for lang, course in courses.items():
        for student, notebooks in course["submissions"].items():
            for stem in notebooks:
                text = feedback_text(course["dir"], student, stem, ASSIGNMENT)
                for secret in SECRETS:
                    assert secret not in text, (lang, student, stem, secret)
    # the masters' solution lines that are not in the released notebook, in the stubs' feedback
    for lang, course, student, stems in [("en", courses["en"], "ben", EN_STUBS), ("zh", courses["zh"], "li", [ZH_STUB])]:
        for stem in stems:
            released = "\n".join(c.source for c in course["submissions"][student][stem].cells)
            lines = [ln.split("#")[0].strip() for code in master_solutions(stem, ASSIGNMENT).values()
                     for ln in code.split("\n")]
            private = [ln for ln in lines if len(ln) > 12 and ln not in released]
            assert len(private) > 2, (stem, "the check needs reference lines to look for")
            text = feedback_text(course["dir"], student, stem, ASSIGNMENT)
            for line in private:
                assert line not in text, (lang, stem, line)
