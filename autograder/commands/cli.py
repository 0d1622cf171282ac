"""Command line: `python -m autograder grade SUBMISSION [--results FILE] [--format F --out FILE]`,
`build`, `gradescope-zip OUT.zip`, `nbgrader-crosscheck`, `grade-all`, `class-report OUT`, `audit`,
`--version`.

What a command cannot do right it refuses before doing anything (`Refused`: one `error:` line,
exit 2): a class folder given to `grade`, one student's folder to `grade-all`, a near-miss step
file name (the right one named, from the file search's own names), no step file, unknown steps,
a results folder without results, an output path that cannot be written, a number not above 0.
Anything else that fails ends in one line too (commands/entry.py), its traceback in a log.
"""
import argparse
import difflib
import os
import sys
from pathlib import Path

from autograder import contract, i18n, submitted_files
from autograder.i18n import _
from autograder.reports import gradescope_json as report
from autograder.sandbox import zygote
from autograder.safe_text import for_terminal
from autograder.sandbox.limits import Limits


class Refused(Exception):
    """What a command cannot do right, said before it does anything: one `error:` line, exit 2."""


def version():
    """The installed kit's version (pyproject.toml's)."""
    from importlib.metadata import PackageNotFoundError, version as installed
    try:
        return installed("attention-kit")
    except PackageNotFoundError:        # run from a checkout that was never installed
        return "unknown"


def description():
    """--help's first line: the assignments and their step files, read from the contract's registry."""
    names = "; ".join(f"{name}: {', '.join(s.stem for s in steps)} (.ipynb or .py)"
                      for name, steps in contract.ASSIGNMENTS.items())
    return f"attention-kit's grader, for {len(contract.ASSIGNMENTS)} assignments. {names}."


class Parser(argparse.ArgumentParser):
    """argparse with a bad argument said in one line (not the whole usage), exit 2."""

    def error(self, message):
        self.exit(2, f"error: {message} (see `{self.prog} --help`)\n")


def main(argv=None):
    parser = Parser(prog="python -m autograder", description=description())
    parser.add_argument("--version", action="version", version=f"attention-kit {version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("grade", help="grade one submission (a folder of step files, or one step file)")
    g.add_argument("submission", help="one student's folder of step files (.ipynb or .py), of one assignment: "
                   + "; ".join(f"{steps[0].stem} ... {steps[-1].stem}" for steps in contract.ASSIGNMENTS.values())
                   + "; or one step file")
    g.add_argument("--results", default="results.json", help="where to write Gradescope results.json")
    g.add_argument("--steps", help="comma-separated step stems to grade (default: all)")
    add_limit_args(g)
    g.add_argument("--quiet", action="store_true", help="print the table only, without check messages")
    g.add_argument("--format", choices=FORMATS, default="table",
                   help="what to write besides results.json: the terminal table (default), JUnit XML, "
                        "GitHub Actions' summary + annotations + Classroom outputs, or the Classroom "
                        "reporter's base64 result")
    g.add_argument("--out", help="file for --format's output (default: stdout; for github, "
                                 "$GITHUB_STEP_SUMMARY); the table then still goes to stdout")
    g.add_argument("--html", metavar="DIR", help="also write a feedback page, DIR/<submission name>.html "
                                                 "(scores, messages, attention-weight heatmaps)")
    b = sub.add_parser("build", help="regenerate solutions/ and assignments/ from source/ (nbgrader)")
    b.add_argument("--check", action="store_true",
                   help="regenerate into a temporary folder and fail if the committed copies differ")
    z = sub.add_parser("gradescope-zip", help="build the Gradescope autograder zip (setup.sh, run_autograder, the kit)")
    z.add_argument("out", help="the zip to write, e.g. attention-kit-gradescope.zip")
    z.add_argument("--assignment", choices=tuple(contract.ASSIGNMENTS), default=contract.DEFAULT_ASSIGNMENT,
                   help="the assignment it grades, one zip per Gradescope assignment (default %(default)s)")
    x = sub.add_parser("nbgrader-crosscheck",
                       help="regrade nbgrader's autograded submissions standalone; list notebooks whose scores differ")
    x.add_argument("--course", default=".", help="the nbgrader course folder (default: here)")
    x.add_argument("--db", help="nbgrader's gradebook URL (default: sqlite:///COURSE/gradebook.db)")
    x.add_argument("--student", action="append", help="only this student (repeatable; default: all)")
    add_grade_all(sub)
    add_class_report(sub)
    add_audit(sub)
    args = parser.parse_args(argv)
    safe_streams()
    # every student-facing message from here on (grade-all hands the language to its workers)
    i18n.set_language(getattr(args, "lang", "en"))
    try:
        return run_command(args)
    except Refused as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 2


def run_command(args):
    if args.command == "grade-all":
        return grade_all(args)
    if args.command == "class-report":
        return class_report(args)
    if args.command == "audit":
        return audit(args)

    if args.command == "build":
        from autograder.commands import release
        from autograder.commands.progress import stages
        if args.check:
            return release.check(stages())
        release.build(say=stages())
        print("rebuilt solutions/ and assignments/ from source/")
        return 0

    if args.command == "grade":
        if not os.path.lexists(args.submission):
            raise Refused(_("{path} does not exist", path=for_terminal(args.submission, newlines=False)))
        steps = steps_arg(args.steps)
        one_submission(args.submission, steps)
        output_file(args.results, "--results")
        if args.out:
            output_file(args.out, "--out")
        if args.html:
            output_folder(args.html, "--html")
        try:        # read once, as data: what it holds says which zygotes to start
            found = submitted_files.find(args.submission)
        except submitted_files.Unreadable:
            found = None        # grade reads it again and says why, step by step
        start_warm_children(frameworks_of(found, steps) if found is not None else ())
        from autograder.grading import run as grading     # pytest and the suites: imported beside the zygotes'
        limits = limits_from(args)
        result = grading.grade(args.submission, limits, steps, found=found, examples=bool(args.html))
        report.write_results(result, args.results)
        emit(args, result)
        if args.html:
            from autograder.reports import html as html_report
            page = html_report.write_html(result, args.submission, args.html)
            print(f"feedback page: {for_terminal(page)}", file=sys.stderr)   # stdout may carry --format's output
        return 0

    if args.command == "gradescope-zip":
        from autograder.commands import gradescope_zip as gradescope
        output_file(args.out, "gradescope-zip")
        names = gradescope.build_zip(args.out, args.assignment)
        points = sum(s.points for s in contract.ASSIGNMENTS[args.assignment])
        print(f"wrote {args.out} ({len(names)} files), the autograder of {args.assignment} ({points:g} points): "
              "upload it as that assignment's autograder on Gradescope")
        return 0

    if args.command == "nbgrader-crosscheck":
        from autograder.commands import crosscheck
        course = Path(args.course)
        if not course.is_dir():
            raise Refused(_("{path} is not a folder", path=shown(args.course)))
        if not args.db and not any((course / f).is_file() for f in ("nbgrader_config.py", "gradebook.db")):
            raise Refused(_("{path} is not an nbgrader course (no nbgrader_config.py or gradebook.db): give the "
                            "course folder with --course, or its gradebook with --db", path=shown(args.course)))
        return crosscheck.print_rows(crosscheck.crosscheck(args.course, args.db, args.student))
    return 2


# ------------------------------------------------------------------ refusals: what a command cannot do right
def shown(path):
    return for_terminal(os.fspath(path), newlines=False)


def steps_arg(text):
    """--steps as a list of stems (None: all), every one a step of the kit's assignments."""
    if not text:
        return None
    steps = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [s for s in steps if s not in contract.STEP_BY_STEM]
    if unknown or not steps:
        raise Refused(_("unknown step {steps}; the steps are {known}",
                        steps=", ".join(unknown) or repr(text), known=", ".join(contract.STEP_BY_STEM)))
    return steps


def near_miss(name):
    """The step file name that `name` almost is ("04_softmax (1).ipynb", "04_Softmax.ipynb":
    04_softmax.ipynb), from the names the file search looks for; None when it is none of them."""
    if name in contract.step_file_names() or not name.endswith((".ipynb", ".py")):
        return None
    match = difflib.get_close_matches(name.casefold(), contract.step_file_names(), n=1, cutoff=0.8)
    return match[0] if match else None


def survey_folder(folder, limit=20_000):
    """({top-level entry ("" for the folder itself): stems of the step files below it},
    [(relative path, the name it almost is)]): a look at the folder's file names only, never
    through a link, skipping the folders the file search skips."""
    by_top, misses, seen = {}, [], 0
    for here, dirs, files in os.walk(folder):
        rel = os.path.relpath(here, folder)
        parts = [] if rel == "." else rel.split(os.sep)
        dirs[:] = sorted(d for d in dirs if d not in submitted_files.SKIPPED_FOLDERS
                         and len(parts) < submitted_files.MAX_DEPTH)
        seen += len(dirs) + len(files)
        if seen > limit:
            break
        for name in sorted(files):
            step = contract.step_file_names().get(name)
            top = parts[0] if parts else ""
            if step is not None:
                by_top.setdefault(top, set()).add(step.stem)
            elif near_miss(name):
                misses.append(("/".join(parts + [name]), near_miss(name)))
    return by_top, misses


def misses_text(misses):
    return "; ".join(f"{shown(path)} -> {good}" for path, good in misses[:5])


def one_submission(path, steps):
    """Refuse what `grade` cannot grade right: a file that is no step file, a folder with no step
    file, a folder holding several students' submissions, steps the submission does not have."""
    if os.path.isfile(path):
        name = os.path.basename(path)
        if name not in contract.step_file_names():
            good = near_miss(name)
            if good:
                raise Refused(_("{file} is not a step file name: rename it {good} (the grader looks for the "
                                "exact names, e.g. 04_softmax.ipynb)", file=shown(name), good=good))
            raise Refused(_("{file} is not a step file: give a folder of step files, or one step file such "
                            "as 04_softmax.ipynb", file=shown(name)))
        return
    if not os.path.isdir(path):
        return                           # a link or a FIFO given as the submission: the file search says why
    by_top, misses = survey_folder(path)
    if not by_top:
        if misses:
            raise Refused(_("no step file in {folder}, but some are named almost right: rename {files}",
                            folder=shown(path), files=misses_text(misses)))
        raise Refused(_("no step file in {folder}: the grader looks for 01_projection.ipynb ... (or .py); "
                        "the step files of each assignment are listed by `python -m autograder --help`",
                        folder=shown(path)))
    tops = sorted(t for t in by_top if t)
    from autograder.commands import batch
    if "" not in by_top and batch.nbgrader_base(path) is not None:
        raise Refused(_("{folder} is an nbgrader course: grade its students with `python -m autograder grade-all "
                        "{folder} --results-dir OUT`, or one of them with `grade {folder}/submitted/<student>`",
                        folder=shown(path)))
    if "" not in by_top and len(tops) > 1:
        raise Refused(_("{folder} holds {n} submissions ({names}): grade one student's folder, or grade them all "
                        "with `python -m autograder grade-all {folder} --results-dir OUT`",
                        folder=shown(path), n=len(tops), names=", ".join(shown(t) for t in tops[:5])
                        + (", ..." if len(tops) > 5 else "")))
    for name, good in misses:
        print(_("note: {file} is not graded: rename it {good}", file=shown(name), good=good), file=sys.stderr)
    if steps:
        have = set().union(*by_top.values())
        absent = [s for s in steps if s not in have]
        if len(absent) == len(steps):
            raise Refused(_("{folder} holds none of the steps asked for ({steps})",
                            folder=shown(path), steps=", ".join(steps)))


def nearest_existing(path):
    path = Path(os.path.abspath(path))
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def output_file(path, option):
    """Refuse an output file that cannot be written: a folder by that name, a folder that does not
    exist, or one this user cannot write. An existing file is replaced (a rerun)."""
    target = Path(path)
    if target.is_dir():
        raise Refused(_("{option}: {path} is a folder; give a file name", option=option, path=shown(path)))
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise Refused(_("{option}: the folder {folder} does not exist; create it first",
                        option=option, folder=shown(parent)))
    if not os.access(parent, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise Refused(_("{option}: {path} cannot be written (permission denied)", option=option, path=shown(path)))


def output_folder(path, option):
    """Refuse an output folder that cannot be made: a file by that name, or a place this user
    cannot write."""
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise Refused(_("{option}: {path} exists and is not a folder; give a folder", option=option, path=shown(path)))
    base = nearest_existing(target)
    if not base.is_dir():
        raise Refused(_("{option}: {path} cannot be made: {base} is a file", option=option, path=shown(path),
                        base=shown(base)))
    if not os.access(base, os.W_OK):
        raise Refused(_("{option}: {path} cannot be written (permission denied)", option=option, path=shown(path)))


def positive(kind):
    """argparse type: a number above zero (`--jobs 0`, `--memory-gib -1` refused by argparse)."""
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"{text!r} must be above 0")
        return value
    parse.__name__ = kind.__name__
    return parse


# ------------------------------------------------------------------ limits, shared by grade and grade-all
def add_limit_args(parser):
    parser.add_argument("--call-timeout", type=positive(float), default=Limits.call_seconds,
                        help="seconds one load or call of student code may take (default %(default)s)")
    parser.add_argument("--memory-gib", type=positive(float), default=Limits.memory_bytes / 2**30,
                        help="memory limit of each child (all its processes) in GiB (default %(default)g)")
    parser.add_argument("--disk-mib", type=positive(float), default=Limits.disk_bytes / 2**20,
                        help="all a child may write (its folder, /tmp and /dev/shm) in MiB (default %(default)g)")
    parser.add_argument("--submission-timeout", type=positive(float), default=Limits.submission_seconds,
                        help="seconds all of one submission's code may run together (default %(default)s)")
    parser.add_argument("--isolation", choices=("auto", "uid", "userns", "landlock", "none-unsafe", "process"),
                        default="auto",
                        help="how student code is walled off (default: the strongest available; the grader "
                             "refuses where none is; none-unsafe: no wall, for code you trust; see docs/security.md)")
    add_lang_arg(parser)


def add_lang_arg(parser):
    parser.add_argument("--lang", choices=i18n.LANGUAGES, default="en",
                        help="language of the messages students read: en (English, the default) or zh "
                             "(Simplified Chinese)")


def limits_from(args, **extra):
    """The Limits the limit options ask for."""
    return Limits(call_seconds=args.call_timeout, submission_seconds=args.submission_timeout,
                  memory_bytes=int(args.memory_gib * 2**30), disk_bytes=int(args.disk_mib * 2**20),
                  isolation=args.isolation, **extra)


# ------------------------------------------------------------------ grade --format
FORMATS = ("table", "junit", "github", "classroom")


def safe_streams():
    """Whatever reaches stdout or stderr is written: text the terminal's encoding cannot hold
    (a lone surrogate; Chinese on a Latin-1 terminal) comes out as a backslash escape instead
    of failing the command after results.json was written."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="backslashreplace")
            except (ValueError, OSError):      # a stream that cannot change: the text is sanitised anyway
                pass


def emit(args, result):
    """Write --format's output to --out or stdout; the table goes to stdout unless stdout is
    taken by the format's own output (so that output can be piped). The table holds student
    text (their messages, exception names, file names): it is printed through for_terminal, so
    escape sequences show as `\\x1b[...`; in a GitHub job log it is also inside
    `::stop-commands::`, so a line of it cannot be a workflow command."""
    table = for_terminal(report.table(result, details=not args.quiet))
    if args.format == "github":
        from pathlib import Path
        from autograder.reports import github
        from autograder.grading import run as grading
        root = Path(args.submission)
        paths = ({stem: f.relative for stem, f in grading.find_step_files(root).items()}
                 if root.is_dir() else {})
        print(github.log_block(table))
        print(github.write_github(result, paths, args.out))
        return
    if args.format == "table":
        text = table
    elif args.format == "junit":
        from autograder.reports import junit
        text = junit.junit_xml(result)
    else:
        from autograder.reports import github
        text = github.classroom_base64(result)
    if args.out is None:
        print(text)
        if args.format == "table":
            print(f"\nresults written to {for_terminal(args.results)}")
        return
    with open(args.out, "w", encoding="utf-8", errors="backslashreplace") as f:
        f.write(text if text.endswith("\n") else text + "\n")
    print(table)
    print(f"\nresults written to {for_terminal(args.results)}; {args.format} to {for_terminal(args.out)}")


# ------------------------------------------------------------------ warm children (issue 7)
def frameworks_of(found, steps=None):
    """The frameworks ("numpy", "torch") of the step children grading `found` starts: one per step
    file it holds (of those asked for, with `steps`)."""
    stems = set(found.files) if steps is None else set(found.files) & set(steps)
    return {step.framework for step in map(contract.step_for_stem, stems) if step is not None}


def start_warm_children(frameworks=zygote.FRAMEWORKS):
    """Fork the step children of `frameworks` from a zygote that imports numpy (and torch) once
    (autograder/sandbox/zygote.py), unless ATTENTION_KIT_WARM=0 asks for a fresh `python -I
    runner.py` per child. Only the frameworks a submission's steps use: a torch zygote costs some
    2 s of CPU to start, for nothing when only numpy steps are graded."""
    zygote.start_unless_disabled(frameworks)


# ------------------------------------------------------------------ grade-all (issue 7)
def add_grade_all(sub):
    a = sub.add_parser("grade-all", help="grade every submission under a folder (nbgrader's submitted/, "
                                         "a folder or a zip per student), in parallel, resumably")
    a.add_argument("root", help="the folder holding one folder or .zip per student, or an nbgrader course "
                                "(its submitted/<student>/<assignment>/)")
    a.add_argument("--results-dir", required=True, help="OUT/<student>/results.json (Gradescope format)")
    a.add_argument("--csv", help="the gradebook: one row per student, a column per step, the total")
    a.add_argument("--jobs", type=positive(int), help="worker processes (default: one per core)")
    a.add_argument("--scheduler", help="a Dask distributed scheduler address: grade on that cluster instead")
    a.add_argument("--report", metavar="PAGE", help="then write the class view: PAGE (e.g. class.html), "
                                                    "OUT/_class.json and each student's OUT/<student>/feedback.html")
    a.add_argument("--no-similarity", action="store_true", help="with --report: leave out the similar-code pairs")
    a.add_argument("--student", action="append", metavar="NAME",
                   help="grade this student again even if unchanged since the last run (repeatable); the "
                        "others as in any rerun")
    add_limit_args(a)


def class_root(root):
    """Refuse a grade-all ROOT that is not a class: not a folder, empty, or one student's own
    submission (step files, or an assignment's folder, at its top)."""
    from autograder.commands import batch
    if not os.path.isdir(root):
        raise Refused(_("{path} is not a folder", path=shown(root)))
    base = batch.nbgrader_base(root) or Path(root)
    names = [e.name for e in base.iterdir() if not e.name.startswith(".")]
    if not names:
        raise Refused(_("{path} holds no submissions (an empty folder)", path=shown(base)))
    own = [n for n in sorted(names) if n in contract.step_file_names() or near_miss(n) or n in contract.ASSIGNMENTS]
    if own:
        raise Refused(_("{path} looks like one student's submission ({names} at its top), not a class of them: "
                        "grade it with `python -m autograder grade {path}`; grade-all takes the folder holding "
                        "one folder or .zip per student", path=shown(root), names=", ".join(shown(n) for n in own[:3])))


def grade_all(args):
    from autograder.commands import batch
    from autograder.commands.progress import Progress
    class_root(args.root)
    output_folder(args.results_dir, "--results-dir")
    for path, option in ((args.csv, "--csv"), (args.report, "--report")):
        # the class view usually goes inside --results-dir (OUT/_class.html), which grade-all makes
        if path and Path(os.path.abspath(path)).parent != Path(os.path.abspath(args.results_dir)):
            output_file(path, option)
    only = None
    if args.student:
        known = {s.student for s in batch.discover(args.root)}
        unknown = [s for s in args.student if s not in known]
        if unknown:
            close = difflib.get_close_matches(unknown[0], known, n=3)
            raise Refused(_("no submission of {students} in {root}{close}", students=", ".join(map(shown, unknown)),
                            root=shown(args.root),
                            close=(" (" + _("did you mean {names}?", names=", ".join(map(shown, close))) + ")")
                            if close else ""))
        only = set(args.student)
    limits = limits_from(args, hide=(str(Path(args.root).resolve()),))
    progress = Progress(0)                   # grade_all counts the submissions it finds
    try:
        outcomes = batch.grade_all(args.root, args.results_dir, limits, args.jobs, args.scheduler, args.csv,
                                   progress, only=only)
    except KeyboardInterrupt:
        print(_("error: interrupted after {done} of {total} submissions; their results are written in {out}: "
                "run the same command again to resume (what was graded is not graded again)",
                done=progress.done, total=progress.total, out=shown(args.results_dir)), file=sys.stderr)
        return 130
    print(progress.summary(), file=sys.stderr)
    print(f"results in {for_terminal(args.results_dir)}/<student>/results.json"
          + (f"; gradebook {', '.join(for_terminal(str(p)) for p in batch.gradebook_paths(args.csv, outcomes))}"
             if args.csv else ""))
    if args.report:
        # built here, by the client, from the results it stored (also when a Dask cluster graded them)
        keys = [r["extra_data"]["batch"]["results"] for _outcome, r in outcomes.values()]
        return write_class_report(args.results_dir, args.report, keys, args.lang, not args.no_similarity, args.jobs)
    return 0


# ------------------------------------------------------------------ the class view (issue 16)
def add_class_report(sub):
    r = sub.add_parser("class-report", help="the class view from grade-all's results (no grading): a page, "
                                            "OUT/_class.json and each student's feedback page")
    r.add_argument("results_dir", metavar="OUT", help="grade-all's --results-dir")
    r.add_argument("--report", metavar="PAGE", help="the page to write (default OUT/_class.html)")
    r.add_argument("--no-similarity", action="store_true", help="leave out the similar-code pairs")
    r.add_argument("--jobs", type=positive(int), help="processes for the similarity (default: one per core)")
    add_lang_arg(r)


def class_report(args):
    if not Path(args.results_dir).is_dir():
        raise Refused(_("{path} is not a folder", path=shown(args.results_dir)))
    if not any(p.is_file() for p in Path(args.results_dir).glob("*/results.json")):
        raise Refused(_("{path} holds no results (no <student>/results.json): give the --results-dir of a "
                        "grade-all run", path=shown(args.results_dir)))
    if args.report:
        output_file(args.report, "--report")
    return write_class_report(args.results_dir, args.report, None, args.lang, not args.no_similarity, args.jobs)


def write_class_report(out_dir, page, keys, lang, with_similarity, jobs):
    from autograder.reports import class_view as cr
    try:
        path, timings = cr.build(out_dir, page, keys, lang, with_similarity, jobs)
    except ImportError as exc:
        print(f"error: the class view needs matplotlib and copydetect ({exc.name} is missing): "
              "pip install 'attention-kit[report]'", file=sys.stderr)
        return 2
    took = ", ".join(f"{k} {v:.1f} s" for k, v in timings.items())
    print(f"class view: {for_terminal(path)}; numbers: {for_terminal(cr.numbers_path(out_dir))} ({took})")
    return 0


# ------------------------------------------------------------------ the mutation audit (issue 14)
def add_audit(sub):
    a = sub.add_parser("audit", help="mutation audit of the hidden suites: grade every small change of the "
                                     "references and count the ones that keep full marks")
    a.add_argument("--steps", help="comma-separated step stems, of one assignment or several, each audited "
                                   "apart (default: every step of every assignment)")
    a.add_argument("--jobs", type=positive(int), help="worker processes (default: one per core)")
    a.add_argument("--report", metavar="FILE", help="write every mutant's verdict as JSON; survivors with "
                                                    "their diff and the checks they passed")
    a.add_argument("--sample", type=positive(int), help="audit only this many mutants per step, drawn with --seed")
    a.add_argument("--seed", type=int, default=0, help="the draw of --sample (default %(default)s)")
    a.add_argument("--record", action="store_true", help="whole assignments only: write each one's record "
                                                          "(docs/mutation_audit*.json) and its table in docs/audit.md from this run")
    a.add_argument("--min-score", type=float, default=0.98,
                   help="exit 1 when a step's mutation score is below this (default %(default)s)")


def audit(args):
    from autograder.commands import audit as mutation_audit
    steps = steps_arg(args.steps)
    if args.report:
        output_file(args.report, "--report")
    runs = mutation_audit.plan(steps)          # {assignment: its steps}, one run each
    partial = [a for a, its in runs.items() if its != mutation_audit.audited_steps(a)]
    if args.record and args.sample is not None:
        print("error: --record records a full audit: leave out --sample", file=sys.stderr)
        return 2
    if args.record and partial:
        print(f"error: --record records whole assignments: name every step of {', '.join(partial)} in --steps, "
              "or leave --steps out", file=sys.stderr)
        return 2

    def progress(done, total, mutant):
        if done % 10 == 0 or done == total:
            print(f"graded {done}/{total} mutants", file=sys.stderr)

    everything, total = [], {}
    for assignment, its_steps in runs.items():
        outcomes, timings = mutation_audit.run(its_steps, args.jobs, args.sample, args.seed, progress=progress)
        print(f"{assignment}:\n{mutation_audit.text(outcomes, timings)}\n")
        if args.record:
            path = mutation_audit.record(outcomes, timings, args.jobs, assignment)
            page = "" if contract.REGISTRY[assignment].home is not None else " and docs/audit.md"
            print(f"recorded: {os.path.relpath(path, mutation_audit.KIT_ROOT)}{page}\n")
        everything += outcomes
        total = {k: total.get(k, 0.0) + v for k, v in timings.items()}
    if args.report:
        mutation_audit.write_report(everything, total, args.report)
        print(f"report: {for_terminal(args.report)}")
    table = mutation_audit.scores(everything)
    bad = [k for k, v in table.items() if v["score"] < args.min_score]
    found = any(f for _t, f in mutation_audit.findings(everything)[1:])
    return 1 if bad or found else 0
