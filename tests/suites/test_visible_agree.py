"""The notebooks' visible tests agree with the hidden grader, step by step (issue 17; the second
assignment, modern_attention, since issue 15).

For every step of both assignments, the visible test cells of the master notebook (its locked
`*_tests` cells, after its imports cell) run against many candidate programs, each in a forked
process: no kernel, the cells' code executed as it is. A candidate passes visibly when every test
cell runs without an exception. The hidden verdict is full marks at that step or not. The two must
agree for:

- every catalogued mistake of tests/reference/test_misconception_catalogue.py (its CASES: each fails hidden
  checks there, so no regrading) and its correct templates (full marks there), both assignments:
  a mistake the grader names, the student's visible tests catch too, complexity and library
  calls included (every notebook's visible tests count the work and watch the calls);
- the correct styles the kit grades with full marks: samples/unusual_style (the first assignment,
  tests/suites/test_samples.py) and the masters' own solution cells (both assignments);
- the programs below (the issue's wrong programs, leniencies the grader grants, idioms it accepts)
  and issue 14's CASES (tests/harness/leniency.py), whose hidden verdict is graded here
  (tests/harness/grade_many.py), and samples/lesson, graded here too (all of the first
  assignment).

The demo cells are run too for the correct styles: they must not raise, and every correct style
must print the same numbers there (the demos set weights by name, never through creation order).
"""
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autograder import contract
from conftest import ROOT
from harness.visible import (BREAKS, CASES, CAUSE, FIRST, PROGRAMS, _catalogue, _correct_styles, _graded_programs, _story,
                             case_key, dedent, grade_hidden, notebook_cells, run_visible, with_copies)


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    """{key: (stem, hidden full marks?, visible result, hidden failures)} for every candidate."""
    known = {**_catalogue(), **_correct_styles()}
    graded_programs = _graded_programs()
    hidden = grade_hidden(graded_programs, tmp_path_factory.mktemp("hidden"))
    jobs = {key: (stem, with_copies(stem, code), key.startswith(("master:", "unusual:", "catalogue:correct")))
            for key, (stem, code, *_rest) in {**known, **graded_programs}.items()}
    visible = run_visible(jobs)
    out = {key: (stem, ok, visible[key], []) for key, (stem, _code, ok) in known.items()}
    out.update({key: (stem, hidden[key][0], visible[key], hidden[key][1])
                for key, (stem, _code) in graded_programs.items()})
    return out


def test_visible_tests_agree_with_the_grader_at_every_step(verdicts):
    disagree = [_story(key, *v) for key, v in verdicts.items() if (v[2]["failed"] is None) != v[1]]
    assert not disagree, "\n".join(disagree)


def test_visible_messages_name_each_catalogued_mistake(verdicts):
    """The message a student reads first names the mistake the values (or counts) show."""
    wrong = []
    for case in CASES:
        failed = verdicts[case_key(case)][2]["failed"]
        message = failed[2] if failed else ""
        if not re.search(CAUSE[case[0]], message):
            wrong.append(f"{case_key(case)} ({case[0]}): "
                         + (f"{failed[0]}: {message[:500]}" if failed else "no visible test failed"))
    assert not wrong, "\n".join(wrong)
    assert set(CAUSE) == {case[0] for case in CASES}


def test_every_step_is_tried_with_mistakes_and_correct_code(verdicts):
    for step in contract.ALL_STEPS:
        mine = [v for v in verdicts.values() if v[0] == step.stem]
        assert any(ok for _s, ok, _v, _f in mine) and sum(not ok for _s, ok, _v, _f in mine) >= 3, step.stem


def test_demo_cells_run_and_print_the_same_numbers_for_every_correct_style(verdicts):
    """Demos depend on nothing the contract leaves open (layer creation order, extra attributes)."""
    for step in contract.ALL_STEPS:
        runs = {key: v[2] for key, v in verdicts.items()
                if v[0] == step.stem and key.startswith(("master:", "unusual:", "catalogue:correct"))}
        assert len(runs) == (3 if step.stem in FIRST else 2), step.stem
        errors = [f"{key}: {r['demo_error']}" for key, r in runs.items() if r["demo_error"]]
        assert not errors, "\n".join(errors)
        outputs = {key: r["demo_output"] for key, r in runs.items()}
        reference = outputs[f"master:{step.stem}"]
        assert reference, step.stem
        for key, output in outputs.items():
            for cell, text in reference.items():
                assert output.get(cell) == text, f"{key}, {cell}:\n{output.get(cell)}\n---- master:\n{text}"


@pytest.mark.parametrize("stem", sorted(BREAKS))
def test_a_broken_visible_test_is_caught(verdicts, stem):
    """Break a notebook's closeness test once: programs the grader fails (the issue's wrong modules in
    step 7, catalogued mistakes) now pass visibly, so the agreement above would fail."""
    line, keys = BREAKS[stem]
    imports, locked, _solutions = notebook_cells(stem)
    broken = [(gid, code.replace(line, "    return None\n" + line)) for gid, code in locked]
    assert broken != locked, "the line to break is gone: update BREAKS"
    codes = {**{f"program:{label}": dedent(code) for label, (_stem, code) in PROGRAMS.items()},
             **{key: code for key, (_stem, code, _ok) in _catalogue().items()}}
    jobs = {key: (stem, codes[key], False) for key in keys}
    assert not any(verdicts[key][1] for key in keys)      # the grader fails them all
    assert all(v["failed"] is not None for v in run_visible(jobs).values())
    assert all(v["failed"] is None for v in run_visible(jobs, cells={stem: (imports, broken)}).values())
