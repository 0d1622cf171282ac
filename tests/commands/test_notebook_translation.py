"""The notebooks in Chinese: every message translated, code left as code, graded like English.

The catalogue (autograder/locale/zh/LC_MESSAGES/notebooks.po) is held to the masters' messages
as extracted now (autograder/notebook_i18n.py): none missing or fuzzy, none left over, each
keeping its msgid's `code`, $math$, tags, {fields} and escapes. The Chinese release
(assignments/zh/self_attention/) is checked for drift by `build --check` (tests/commands/test_release.py);
here: its cells, ids and nbgrader metadata are the English release's, its filled notebooks run,
nbgrader validates them, and the grader scores Chinese and English notebooks alike.
"""
import concurrent.futures
import contextlib
import copy
import io
import re
import shutil

import nbformat
import pytest

from autograder import contract
from autograder.grading import run as grading
from autograder.commands import notebook_i18n, notebook_text, release
from conftest import ROOT

ZH_RELEASE = ROOT / release.release_folder("zh") / contract.ASSIGNMENT
EN_RELEASE = ROOT / release.release_folder("en") / contract.ASSIGNMENT
SECOND = "modern_attention"             # the second assignment, with its own catalogue
ALL_STEPS = [(a, step) for a, steps in contract.ASSIGNMENTS.items() for step in steps]
CJK = "\u4e00-\u9fff"


@pytest.fixture(scope="module")
def entries():
    return notebook_i18n.extract(release.master_notebooks(), ROOT)


@pytest.fixture(scope="module")
def catalogue():
    return notebook_i18n.read_catalogue(notebook_i18n.catalogue_path("zh"))


def _table(catalogue):
    return {(m.context, m.id): m for m in catalogue if m.id}


# ------------------------------------------------------------------ the catalogue
def test_every_message_has_a_translation(entries, catalogue):
    table = _table(catalogue)
    missing = [e.msgid for e in entries if (e.context, e.msgid) not in table or not table[(e.context, e.msgid)].string]
    fuzzy = [e.msgid for e in entries if (e.context, e.msgid) in table and table[(e.context, e.msgid)].fuzzy]
    assert not missing, f"{len(missing)} message(s) without a Chinese translation (run `python -m autograder " \
                        f"build`, then `pybabel update`, and translate):\n" + "\n".join(missing[:20])
    assert not fuzzy, f"{len(fuzzy)} fuzzy translation(s) to review:\n" + "\n".join(fuzzy[:20])


def test_translations_keep_code_math_fields_and_escapes(entries, catalogue):
    table = _table(catalogue)
    wrong = []
    for e in entries:
        m = table.get((e.context, e.msgid))
        if m and m.string and notebook_text.invariants(e.msgid, e.kind) != notebook_text.invariants(m.string, e.kind):
            wrong.append(f"{e.msgid!r}\n  -> {m.string!r}")
    assert not wrong, "translations that change what must stay as written:\n" + "\n".join(wrong[:10])


def test_no_obsolete_or_unknown_entries(entries, catalogue):
    extracted = {(e.context, e.msgid) for e in entries}
    leftover = [m.id for m in catalogue if m.id and (m.context, m.id) not in extracted]
    assert not leftover, "entries no notebook has any more (delete them):\n" + "\n".join(leftover[:20])
    assert not catalogue.obsolete, f"obsolete (#~) entries left in the catalogue: {list(catalogue.obsolete)[:5]}"


def test_the_template_is_the_masters_messages(tmp_path):
    release.write_template(tmp_path / "notebooks.pot")
    assert (tmp_path / "notebooks.pot").read_text() == notebook_i18n.TEMPLATE.read_text(), \
        "autograder/locale/notebooks.pot is out of date: run `python -m autograder build`"


def test_the_catalogue_checks_catch_a_broken_translation(entries):
    """The checks above, on entries broken on purpose (the same code as the tests)."""
    field = next(e for e in entries if e.kind == "string" and "{" in e.msgid)
    code = next(e for e in entries if e.kind == "markdown" and "`" in e.msgid)
    for e, broken in [(field, field.msgid.replace("{", "{x", 1)), (code, code.msgid.replace("`", "", 2))]:
        assert notebook_text.invariants(e.msgid, e.kind) != notebook_text.invariants(broken, e.kind)


def test_the_second_assignments_catalogue_is_complete_and_keeps_what_must_stay():
    """modern_attention's catalogue (notebooks_modern_attention.po), held to its masters as the
    first one is above: every message translated, none fuzzy, none left over or obsolete, each
    keeping its `code`, $math$, tags, {fields} and escapes."""
    entries = notebook_i18n.extract(release.master_notebooks(SECOND), ROOT)
    catalogue = notebook_i18n.read_catalogue(notebook_i18n.catalogue_path("zh", SECOND))
    table = _table(catalogue)
    missing = [e.msgid for e in entries if not getattr(table.get((e.context, e.msgid)), "string", "")]
    fuzzy = [e.msgid for e in entries if (e.context, e.msgid) in table and table[(e.context, e.msgid)].fuzzy]
    wrong = [f"{e.msgid!r}\n  -> {table[(e.context, e.msgid)].string!r}" for e in entries
             if (e.context, e.msgid) in table and table[(e.context, e.msgid)].string
             and notebook_text.invariants(e.msgid, e.kind) != notebook_text.invariants(table[(e.context, e.msgid)].string, e.kind)]
    extracted = {(e.context, e.msgid) for e in entries}
    leftover = [m.id for m in catalogue if m.id and (m.context, m.id) not in extracted]
    assert not missing, f"{len(missing)} message(s) of {SECOND} without a Chinese translation (run `python -m " \
                        f"autograder build`, then `pybabel update -D notebooks_{SECOND}`, and translate):\n" + "\n".join(missing[:20])
    assert not fuzzy, f"{len(fuzzy)} fuzzy translation(s) to review:\n" + "\n".join(fuzzy[:20])
    assert not wrong, "translations that change what must stay as written:\n" + "\n".join(wrong[:10])
    assert not leftover and not catalogue.obsolete, f"entries no notebook has any more: {leftover[:20]}"



# ------------------------------------------------------------------ terms, punctuation, math
# One Chinese term per concept, across both catalogues (the words Chinese practitioners use):
# (the concept, the English that asks for it in a msgid (a regex) or None, the Chinese term every
# translation of such a msgid uses (a regex), the variants no translation may use)
TERMS = [
    ("the demo sections' heading, 'Seeing it'", r"^Seeing it", "亲眼看看", ["动手看看", "直观感受"]),
    ("kernel (a library's or GPU's attention routine)", r"\bkernels?\b", "内核", ["计算核", "核函数"]),
    ("RoPE's fast and slow pairs: high- and low-frequency pairs", r"\b(?:[Ff]ast|[Ss]low)(?:est)? pairs?\b", "频对",
     ["快的对", "慢的对", "快对", "慢对"]),
    ("rotary position embedding", r"\b[Rr]otary\b", "旋转位置编码", ["旋转位置嵌入", "旋转嵌入"]),
    ("KV cache", r"\bKV cache\b", "KV 缓存", ["键值缓存", "KV缓存"]),
    # the noun is 掩码, the verb ("masks the future") 屏蔽; not a parameter's name ("mask: None")
    ("mask", r"\bmasks?\b(?!\s*[:=])", "掩码|屏蔽", ["遮罩", "蒙版"]),
    ("gradient", r"\bgradients?\b", "梯度", ["斜率"]),
    ("multiply-add", r"\bmultiply-adds?\b", "乘加", ["乘-加", "乘法加法"]),
    ("online softmax", r"\bonline softmax\b", "在线 softmax", ["联机 softmax", "在线softmax"]),
    ("log-sum-exp", None, "log-sum-exp", ["对数和指数"]),
    ("token", None, "token", ["令牌"]),
]
_NOT_PROSE = (notebook_text._CODE_SPAN, notebook_text._MATH, notebook_text._HTML_TAG, notebook_text._LINK_TARGET)
# an ASCII sentence mark right after a Chinese character, outside `code`, $math$ and {fields}
ASCII_MARK_AFTER_CJK = re.compile(f"[{CJK}][.,;:!?](?![0-9])")


def _prose(text):
    """`text` without its code spans, math, tags, link targets and {fields}: the words a reader reads."""
    for pattern in _NOT_PROSE:
        text = pattern.sub(" ", text)
    for f in notebook_text.format_fields(text):
        text = text.replace(f, " ", 1)
    return text


def _every_translation():
    """(assignment, context, msgid, msgstr) of both Chinese catalogues."""
    for assignment in contract.ASSIGNMENTS:
        for m in notebook_i18n.read_catalogue(notebook_i18n.catalogue_path("zh", assignment)):
            if m.id and m.string:
                yield assignment, m.context, m.id, m.string


def term_problems(translations):
    """Each translation that uses a variant of a term, or misses the term its msgid asks for."""
    problems = []
    for assignment, context, msgid, msgstr in translations:
        for concept, english, term, variants in TERMS:
            used = [v for v in variants if v in msgstr]
            if used:
                problems.append(f"{assignment}: {used} for {concept} (say {term}): {msgstr[:90]!r}")
            elif english and context is None and re.search(english, _prose(msgid)) and not re.search(term, msgstr) \
                    and re.search(f"[{CJK}]", msgstr):
                problems.append(f"{assignment}: {concept} is {term}: {msgid[:60]!r} -> {msgstr[:90]!r}")
    return problems


def punctuation_problems(translations):
    """Chinese text closed by ASCII punctuation ("。" and "，" are Chinese text's own)."""
    return [f"{assignment}: {m.group(0)!r} in {msgstr[:90]!r}" for assignment, _c, _i, msgstr in translations
            for m in ASCII_MARK_AFTER_CJK.finditer(_prose(msgstr))]


def math_problems(translations):
    """English prose inside a translation's math: a \\text{...} holding more than one name."""
    return [f"{assignment}: {t!r} in {msgstr[:90]!r}" for assignment, _c, _i, msgstr in translations
            for math in notebook_text._MATH.findall(msgstr)
            for t in re.findall(r"\\(?:text|textrm|mathrm)\{([^{}]*)\}", math) if not re.fullmatch(r"[\w\\]+", t)]


def test_one_chinese_term_per_concept():
    problems = term_problems(list(_every_translation()))
    assert not problems, "terms off the table (tests/commands/test_notebook_translation.py, TERMS):\n" + "\n".join(problems[:20])


def test_no_ascii_sentence_punctuation_in_chinese_text():
    problems = punctuation_problems(list(_every_translation()))
    assert not problems, "use 。，；：！？ in Chinese text:\n" + "\n".join(problems[:20])


def test_no_english_inside_translated_math():
    problems = math_problems(list(_every_translation()))
    assert not problems, "math keeps the English of its msgid: write the master's formula with symbols " \
                         "and say the words in the text:\n" + "\n".join(problems[:20])


def test_the_rules_catch_what_they_forbid():
    """Each rule above, on translations broken on purpose."""
    broken = [("modern_attention", None, "Seeing it: memory", "动手看看：内存"),
              ("modern_attention", None, "PyTorch's kernel", "PyTorch 的计算核"),
              ("modern_attention", None, "Fast pairs tell neighbours apart", "快的对能区分相邻位置。"),
              ("modern_attention", None, "the KV cache", "缓存")]
    assert len(term_problems(broken)) == 4
    assert punctuation_problems([("a", None, "x", "测试通过.")]) and punctuation_problems([("a", None, "x", "形状 (批次, 头)")])
    assert not punctuation_problems([("a", None, "x", "`x.sum(-1)` 为 3.5，`{a:.2f}` 对。")])
    assert math_problems([("a", None, "x", r"$\text{cache bytes} = 2$")])
    assert not math_problems([("a", None, "x", r"$\text{head\_dim} + \text{lse}$")])


@pytest.mark.parametrize("assignment", sorted(contract.ASSIGNMENTS))
def test_chinese_tables_are_padded_by_display_width(assignment):
    """A label padded with a format width (f"{'注意力':>29}") counts a Chinese character as one column,
    and the table's columns slip: the notebooks pad their labels with fit() (unicodedata's display
    width), in the tools cell."""
    slipping = re.compile(r"\{(?:'[^'\n]*'|\"[^\"\n]*\"|name|label):[<>^]?\d+\}")
    found = [f"{nb_path.name}: {m.group(0)}" for nb_path in sorted((ROOT / release.release_folder("zh") / assignment).glob("*.ipynb"))
             for cell in nbformat.read(str(nb_path), as_version=4).cells if cell.cell_type == "code"
             for m in slipping.finditer(cell.source)]
    assert not found, "labels padded by characters, not display width: use fit(label, width)\n" + "\n".join(found)
    tools = next(c.source for c in nbformat.read(str(release.source_folder(assignment) / f"{contract.ASSIGNMENTS[assignment][0].stem}.ipynb"), as_version=4).cells
                 if c.metadata.get("nbgrader", {}).get("grade_id", "").endswith("_test_tools_tests"))
    namespace = {"np": __import__("numpy"), "torch": __import__("torch"), "__name__": "tools"}
    exec(compile(tools, "tools", "exec"), namespace)
    fit = namespace["fit"]
    assert fit("注意力", 9) == "   注意力" and fit("ab", 4, "<") == "ab  " and fit("ab", 4) == "  ab"


def test_a_translation_that_changes_code_stops_the_release(monkeypatch):
    cell = nbformat.v4.new_code_cell('assert x, f"x is {x!r}"\nprint("done")  # a comment')
    nb = nbformat.v4.new_notebook(cells=[cell], metadata={"attention_kit": {"stem": "04_softmax"}})

    def translate(text):
        monkeypatch.setitem(notebook_i18n._loaded, "zh", {(None, "x is {x!r}"): text})
        return notebook_i18n.translate_notebook(nb, "zh").cells[1].source
    assert translate("{x!r} 就是 x") == 'assert x, f"{x!r} 就是 x"\nprint("done")  # a comment'   # fields reordered
    for broken in ['x 是 "{x!r}"', "x 是 {y!r}", "x 是 {x!r", "x 是 {x}"]:     # a quote, another field...
        with pytest.raises(notebook_i18n.TranslationError, match="x is"):
            translate(broken)


# ------------------------------------------------------------------ the release
@pytest.mark.parametrize("assignment, step", ALL_STEPS, ids=[f"{a}/{s.stem}" for a, s in ALL_STEPS])
def test_chinese_release_has_the_english_cells_ids_and_metadata(assignment, step):
    en = nbformat.read(str(ROOT / release.release_folder("en") / assignment / f"{step.stem}.ipynb"), as_version=4)
    zh = nbformat.read(str(ROOT / release.release_folder("zh") / assignment / f"{step.stem}.ipynb"), as_version=4)
    glossary, *cells = zh.cells
    assert glossary.id.endswith("-glossary") and "术语表" in glossary.source and "| 查询 | query |" in glossary.source
    assert [(c.id, c.cell_type) for c in cells] == [(c.id, c.cell_type) for c in en.cells]

    def grading_metadata(c):       # the checksum is of the cell's (translated) source
        return {k: v for k, v in c.metadata.get("nbgrader", {}).items() if k != "checksum"}
    assert [grading_metadata(c) for c in cells] == [grading_metadata(c) for c in en.cells]
    assert zh.metadata == en.metadata
    for (a, spans), b in zip(notebook_text.notebook_spans(en), cells):
        if spans:
            assert a.source != b.source and re.search(f"[{CJK}]", b.source), a.id
        if a.cell_type == "code":
            assert notebook_text.code_shape(a.source) == notebook_text.code_shape(b.source), a.id
    assert f'raise NotImplementedError("第 {step.number} 步：请实现' in "\n".join(c.source for c in cells)


def table_slips(text):
    """Lines of a printed table (consecutive lines with " | ") whose columns do not line up on screen:
    the display column of every " | " separator (a Chinese character takes two columns,
    unicodedata.east_asian_width; a "|" inside a label, as in "|J| raw", is not a separator)."""
    import unicodedata

    def bars(line):
        columns, width = [], 0
        for i, ch in enumerate(line):
            if line[i - 1:i + 2] == " | ":
                columns.append(width)
            width += 2 if unicodedata.east_asian_width(ch) in "WF" else 1
        return columns
    slips, previous = [], None
    for line in text.splitlines():
        here = bars(line) if " | " in line else None
        if here and previous and here != previous:
            slips.append(line)
        previous = here
    return slips


_printed = {}


def chinese_master_printed(assignment, stem):
    """What a master translated into Chinese prints (the solutions, visible tests and demos: code
    unchanged, text translated), run top to bottom in one namespace as a student's notebook runs,
    the grader's hidden cells left out; run once per notebook and kept for the tests below."""
    if (assignment, stem) not in _printed:
        master = nbformat.read(str(release.source_folder(assignment) / f"{stem}.ipynb"), as_version=4)
        nb = notebook_i18n.translate_notebook(master, "zh", assignment)
        namespace, printed = {"__name__": "__main__"}, io.StringIO()
        for cell in nb.cells:
            if cell.cell_type == "code" and not cell.metadata.get("nbgrader", {}).get("grade"):
                # in the notebook's folder, as Jupyter runs it (decoder's training reads data/ there)
                with contextlib.redirect_stdout(printed), contextlib.chdir(release.source_folder(assignment)):
                    exec(compile(cell.source, cell.id, "exec"), namespace)
        _printed[assignment, stem] = printed.getvalue()
    return _printed[assignment, stem]


@pytest.mark.parametrize("stem", ["02_cross_attention", "03_grouped_query", "04_rope"])
def test_the_second_assignments_chinese_masters_run_and_pass_their_visible_tests(stem):
    """Three of modern_attention's masters in Chinese: no cell raises, every visible test cell passes,
    and what they print is Chinese. (Three of six, the cheap ones: the others' cells differ from
    English only in text, which the release checks; all of them run for their tables, below.)"""
    text = chinese_master_printed(SECOND, stem)
    assert f"第 {int(stem[:2])} 步的可见测试全部通过" in text and "测试通过" in text, text[-500:]
    assert len(re.findall(f"[{CJK}]", text)) > 100 and "tests passed" not in text, text[-500:]


@pytest.mark.parametrize("assignment, step", ALL_STEPS, ids=[f"{a}/{s.stem}" for a, s in ALL_STEPS])
def test_every_table_the_chinese_notebooks_print_lines_up_on_screen(assignment, step):
    """Every table a Chinese notebook prints, measured in its executed output: the " | " separators
    of each row sit at the header's display columns. A unit (字节, 4 columns against "bytes", 5) or a
    header wider than its column (fit() pads, it cannot shrink) makes the rows slip."""
    text = chinese_master_printed(assignment, step.stem)
    slips = table_slips(text)
    assert not slips, "a printed table's columns slip on screen (pad with fit(), keep units as wide as English's):\n" + "\n".join(slips)


def test_the_table_check_sees_a_slip():
    assert table_slips("   注意力 | 1\n   attention | 2") and not table_slips("   注意力 | 1\n      abc | 2")
    assert table_slips("  T | 4,096 bytes | x\n  1 | 4,096 字节 | x")
    assert not table_slips("|J| raw | x\n   12.5 | x")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_courses_setting_chooses_the_release_language(lang, tmp_path):
    """`c.AttentionKit.language` in a course's nbgrader_config.py reaches nbgrader's
    generate_assignment pipeline: its first preprocessor translates the master (or leaves it
    alone for English) and the stubs speak the same language. (`build` sets the same trait on
    nbgrader's command line; test_release shows that release equals the committed one.)"""
    from traitlets.config.loader import PyFileConfigLoader
    text = (ROOT / "nbgrader_config.py").read_text()
    assert 'c.AttentionKit.language = "en"' in text
    (tmp_path / "nbgrader_config.py").write_text(text.replace('language = "en"', f'language = "{lang}"'))
    config = PyFileConfigLoader("nbgrader_config.py", path=str(tmp_path)).load_config()
    translate, *pipeline = config.GenerateAssignment.preprocessors
    assert translate is release.TranslateNotebook and release.StepStubs in pipeline
    master = nbformat.read(str(release.SOURCE / "04_softmax.ipynb"), as_version=4)
    nb, _ = release.TranslateNotebook(config=config).preprocess(copy.deepcopy(master), {})
    nb, _ = release.StepStubs(config=config).preprocess(nb, {})
    text = "\n".join(c.source for c in nb.cells)
    if lang == "zh":
        assert nb.cells[0].id == "step04-glossary" and [c.id for c in nb.cells[1:]] == [c.id for c in master.cells]
        assert 'raise NotImplementedError("第 4 步：请实现 softmax")' in text and "数值稳定" in text
    else:
        assert [c.id for c in nb.cells] == [c.id for c in master.cells]
        assert 'raise NotImplementedError("Step 4: implement softmax")' in text and "数值稳定" not in text


def test_a_drifted_chinese_release_is_detected(tmp_path):
    for rel in release.generated_paths():            # the committed copies, as if freshly built
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / rel).is_dir():
            shutil.copytree(ROOT / rel, tmp_path / rel)
        else:
            shutil.copy(ROOT / rel, tmp_path / rel)
    assert release.differences(tmp_path) == []
    nb = tmp_path / release.release_folder("zh") / contract.ASSIGNMENT / "04_softmax.ipynb"
    nb.write_text(nb.read_text().replace("注意力", "注 意力", 1))
    assert release.differences(tmp_path) == [f"{release.release_folder('zh')}/{contract.ASSIGNMENT}/04_softmax.ipynb"]


def _filled(stub_path, lang):
    """A student's notebook: the released stub, each solution cell replaced by the master's in
    `lang` (its docstring and comments translated, the reference's code in the solution region)."""
    nb = nbformat.read(str(stub_path), as_version=4)
    master = notebook_i18n.translate_notebook(nbformat.read(str(release.SOURCE / stub_path.name), as_version=4), lang)
    solutions = {c.id: c.source for c in master.cells if release.is_solution_cell(c)}
    for cell in nb.cells:
        if cell.id in solutions:
            cell.source = solutions[cell.id]
    return nb


@pytest.fixture(scope="module")
def chinese_students(tmp_path_factory):
    """Folders of notebooks as students hand them in: zh/filled (the Chinese stubs, solved),
    zh/stub and en/stub (the releases as they are)."""
    out = tmp_path_factory.mktemp("students")
    for lang, kind in [("zh", "filled"), ("zh", "stub"), ("en", "stub")]:
        (out / lang / kind).mkdir(parents=True)
        for step in contract.STEPS:
            stub = ROOT / release.release_folder(lang) / contract.ASSIGNMENT / f"{step.stem}.ipynb"
            if kind == "filled":
                nbformat.write(_filled(stub, lang), str(out / lang / kind / stub.name))
            else:
                shutil.copy(stub, out / lang / kind / stub.name)
    return out


def test_chinese_visible_tests_judge_like_the_grader(tmp_path):
    """The Chinese notebooks' visible test cells, run by the visible-agree runner (tests/harness/visible.py)
    against the catalogue's mistakes and correct templates and the masters' solutions: each passes
    visibly exactly when the hidden grader gives full marks, as the English cells do there; with
    the masters' solutions the demo cells run too, and print Chinese."""
    from harness import visible as agree
    for master in release.master_notebooks():
        nbformat.write(notebook_i18n.translate_notebook(nbformat.read(str(master), as_version=4), "zh"),
                       str(tmp_path / master.name))
    cells = {s.stem: agree.notebook_cells(s.stem, tmp_path / f"{s.stem}.ipynb")[:2] for s in contract.STEPS}
    # every catalogued mistake; of the correct styles the masters' solutions (the English test runs
    # the others: the cells differ only in their text, which the release checked is not code)
    known = {**agree._catalogue(), **{k: v for k, v in agree._correct_styles().items() if k.startswith("master:")}}
    # demos once per step (with the masters' solutions): the other correct styles' demos are the
    # English test's business, and the torch demos run at BERT-base size
    jobs = {key: (stem, agree.with_copies(stem, code), key.startswith("master:")) for key, (stem, code, _ok)
            in known.items()}
    halves = [dict(list(jobs.items())[i::2]) for i in (0, 1)]      # two processes side by side
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        seen = {k: v for half in pool.map(lambda half: agree.run_visible(half, cells=cells), halves)
                for k, v in half.items()}
    disagree = [f"{key}: hidden {'full marks' if ok else 'not full marks'}, visible {seen[key]['failed']}"
                for key, (_stem, _code, ok) in known.items() if (seen[key]["failed"] is None) != ok]
    assert not disagree, "\n".join(disagree)
    for step in contract.STEPS:
        run = seen[f"master:{step.stem}"]
        assert run["demo_error"] is None and run["demo_output"], (step.stem, run["demo_error"])
        assert re.search(f"[{CJK}]", "".join(run["demo_output"].values())), step.stem


def test_chinese_notebooks_grade_exactly_like_english(chinese_students):
    """Check by check, the same verdicts and points as English: the Chinese stubs exactly the
    English stubs', the filled Chinese notebooks every check passed (as the English masters do,
    tests/e2e/test_nbgrader*.py), and no cell of theirs raising."""
    grader = grading.Grader()          # one pytest session for the three submissions
    try:
        reports = {key: grader.grade(chinese_students / key[0] / key[1])
                   for key in [("zh", "filled"), ("zh", "stub"), ("en", "stub")]}
    finally:
        grader.close()
    verdicts = {key: {(c.step, c.number): (c.status, c.score) for s in r.steps for c in s.checks}
                for key, r in reports.items()}
    assert verdicts["zh", "stub"] == verdicts["en", "stub"]
    assert verdicts["zh", "filled"].keys() == verdicts["en", "stub"].keys()
    assert {status for status, _ in verdicts["zh", "filled"].values()} == {"passed"}
    assert reports["zh", "filled"].score == sum(s.points for s in contract.STEPS)
    assert reports["zh", "stub"].score == 0
    assert not [e for s in reports["zh", "filled"].steps for e in s.cell_errors]


def test_nbgrader_validates_the_chinese_notebooks(chinese_students, tmp_path):
    """nbgrader's validator on a Chinese step 4: filled passes, the stub fails, and a changed locked
    cell is caught by the checksums computed on the Chinese text."""
    from nbgrader.validator import Validator
    folder = chinese_students / "zh"
    filled, stub = folder / "filled" / "04_softmax.ipynb", folder / "stub" / "04_softmax.ipynb"
    tampered = nbformat.read(str(filled), as_version=4)
    test_cell = next(c for c in tampered.cells if c.metadata.get("nbgrader", {}).get("grade_id", "").endswith("_tests"))
    test_cell.source += "\n# 改动"
    nbformat.write(tampered, str(tmp_path / "04_softmax.ipynb"))
    validator = Validator(validate_all=True)
    assert validator.validate(str(filled)) == {}
    assert validator.validate(str(stub)).get("failed")
    assert validator.validate(str(tmp_path / "04_softmax.ipynb")).get("changed")


@pytest.mark.parametrize("assignment, step", ALL_STEPS, ids=[f"{a}/{s.stem}" for a, s in ALL_STEPS])
def test_the_glossary_names_only_what_its_notebook_uses(assignment, step):
    """A glossary row's names are the notebook's own: no NumPy `keepdims=True` in a torch notebook, no
    class or function of the other assignment (issue 30)."""
    master = nbformat.read(str(release.source_folder(assignment) / f"{step.stem}.ipynb"), as_version=4)
    glossary = notebook_i18n.glossary_cell(master, lambda m: notebook_i18n.gettext("zh", m, "glossary", assignment))
    text = "\n".join(c.source for c in master.cells)
    names = re.findall(r"`([^`]+)`", glossary.source.split("|---|---|---|")[1])
    assert names and all(n in text for n in names), [n for n in names if n not in text]
    assert all(f"{n}(" in text for n in names if n in contract.ASSIGNMENTS), "an assignment's name listed as code"
    if "import torch" in text:
        assert "`keepdims=True`" not in glossary.source
