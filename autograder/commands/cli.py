"""Command line: `python -m autograder grade SUBMISSION [--results FILE] [--format F --out FILE]`,
`build`, `gradescope-zip OUT.zip`, `nbgrader-crosscheck`, `grade-all`, `class-report OUT`, `audit`."""
import argparse
import sys

from autograder import contract, i18n
from autograder.grading import run as grading
from autograder.reports import gradescope_json as report
from autograder.sandbox import zygote
from autograder.safe_text import for_terminal
from autograder.sandbox.limits import Limits


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m autograder",
                                     description="attention-kit's grader for the self_attention assignment")
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("grade", help="grade one submission (a folder of step files, or one step file)")
    g.add_argument("submission", help="folder holding 01_projection.ipynb ... 07_full_module.ipynb (or .py)")
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
    z.add_argument("--assignment", choices=tuple(contract.ASSIGNMENTS), default=contract.ASSIGNMENT,
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
    if args.command == "grade-all":
        return grade_all(args)
    if args.command == "class-report":
        return class_report(args)
    if args.command == "audit":
        return audit(args)

    if args.command == "build":
        from autograder.commands import release
        if args.check:
            return release.check()
        release.build()
        print("rebuilt solutions/ and assignments/ from source/")
        return 0

    if args.command == "grade":
        from pathlib import Path
        if not Path(args.submission).exists():
            print(f"error: {args.submission} does not exist", file=sys.stderr)
            return 2
        steps = args.steps.split(",") if args.steps else None
        start_warm_children()
        limits = limits_from(args)
        result = grading.grade(args.submission, limits, steps, examples=bool(args.html))
        report.write_results(result, args.results)
        emit(args, result)
        if args.html:
            from autograder.reports import html as html_report
            page = html_report.write_html(result, args.submission, args.html)
            print(f"feedback page: {for_terminal(page)}", file=sys.stderr)   # stdout may carry --format's output
        return 0

    if args.command == "gradescope-zip":
        from autograder.commands import gradescope_zip as gradescope
        names = gradescope.build_zip(args.out, args.assignment)
        points = sum(s.points for s in contract.ASSIGNMENTS[args.assignment])
        print(f"wrote {args.out} ({len(names)} files), the autograder of {args.assignment} ({points:g} points): "
              "upload it as that assignment's autograder on Gradescope")
        return 0

    if args.command == "nbgrader-crosscheck":
        from autograder.commands import crosscheck
        return crosscheck.print_rows(crosscheck.crosscheck(args.course, args.db, args.student))
    return 2


# ------------------------------------------------------------------ limits, shared by grade and grade-all
def add_limit_args(parser):
    parser.add_argument("--call-timeout", type=float, default=Limits.call_seconds,
                        help="seconds one load or call of student code may take (default %(default)s)")
    parser.add_argument("--memory-gib", type=float, default=Limits.memory_bytes / 2**30,
                        help="memory limit of each child (all its processes) in GiB (default %(default)g)")
    parser.add_argument("--disk-mib", type=float, default=Limits.disk_bytes / 2**20,
                        help="all a child may write (its folder, /tmp and /dev/shm) in MiB (default %(default)g)")
    parser.add_argument("--submission-timeout", type=float, default=Limits.submission_seconds,
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
def start_warm_children():
    """Fork the step children from a zygote that imports numpy and torch once (autograder/sandbox/zygote.py),
    unless ATTENTION_KIT_WARM=0 asks for a fresh `python -I runner.py` per child (a no-op when
    __main__ started it already)."""
    zygote.start_unless_disabled()


# ------------------------------------------------------------------ grade-all (issue 7)
def add_grade_all(sub):
    a = sub.add_parser("grade-all", help="grade every submission under a folder (nbgrader's submitted/, "
                                         "a folder or a zip per student), in parallel, resumably")
    a.add_argument("root", help="submitted/<student>/self_attention/, <student>/ folders, or <student>.zip files")
    a.add_argument("--results-dir", required=True, help="OUT/<student>/results.json (Gradescope format)")
    a.add_argument("--csv", help="the gradebook: one row per student, a column per step, the total")
    a.add_argument("--jobs", type=int, help="worker processes (default: one per core)")
    a.add_argument("--scheduler", help="a Dask distributed scheduler address: grade on that cluster instead")
    a.add_argument("--report", metavar="PAGE", help="then write the class view: PAGE (e.g. OUT/class.html), "
                                                    "OUT/class.json and each student's OUT/<student>/feedback.html")
    a.add_argument("--no-similarity", action="store_true", help="with --report: leave out the similar-code pairs")
    add_limit_args(a)


def grade_all(args):
    from pathlib import Path
    from autograder.commands import batch
    from autograder.commands.progress import Progress
    if not Path(args.root).is_dir():
        print(f"error: {for_terminal(args.root)} is not a folder", file=sys.stderr)
        return 2
    limits = limits_from(args, hide=(str(Path(args.root).resolve()),))
    progress = Progress(0)                   # grade_all counts the submissions it finds
    outcomes = batch.grade_all(args.root, args.results_dir, limits, args.jobs, args.scheduler, args.csv, progress)
    print(progress.summary(), file=sys.stderr)
    print(f"results in {for_terminal(args.results_dir)}/<student>/results.json"
          + (f"; gradebook {for_terminal(args.csv)}" if args.csv else ""))
    if args.report:
        # built here, by the client, from the results it stored (also when a Dask cluster graded them)
        keys = [r["extra_data"]["batch"]["results"] for _outcome, r in outcomes.values()]
        return write_class_report(args.results_dir, args.report, keys, args.lang, not args.no_similarity, args.jobs)
    return 0


# ------------------------------------------------------------------ the class view (issue 16)
def add_class_report(sub):
    r = sub.add_parser("class-report", help="the class view from grade-all's results (no grading): a page, "
                                            "OUT/class.json and each student's feedback page")
    r.add_argument("results_dir", metavar="OUT", help="grade-all's --results-dir")
    r.add_argument("--report", metavar="PAGE", help="the page to write (default OUT/class.html)")
    r.add_argument("--no-similarity", action="store_true", help="leave out the similar-code pairs")
    r.add_argument("--jobs", type=int, help="processes for the similarity (default: one per core)")
    add_lang_arg(r)


def class_report(args):
    from pathlib import Path
    if not Path(args.results_dir).is_dir():
        print(f"error: {for_terminal(args.results_dir)} is not a folder", file=sys.stderr)
        return 2
    return write_class_report(args.results_dir, args.report, None, args.lang, not args.no_similarity, args.jobs)


def write_class_report(out_dir, page, keys, lang, with_similarity, jobs):
    from pathlib import Path
    from autograder.reports import class_view as cr
    try:
        path, timings = cr.build(out_dir, page, keys, lang, with_similarity, jobs)
    except ImportError as exc:
        print(f"error: the class view needs matplotlib and copydetect ({exc.name} is missing): "
              "pip install 'attention-kit[report]'", file=sys.stderr)
        return 2
    took = ", ".join(f"{k} {v:.1f} s" for k, v in timings.items())
    print(f"class view: {for_terminal(path)}; numbers: {for_terminal(Path(out_dir) / 'class.json')} ({took})")
    return 0


# ------------------------------------------------------------------ the mutation audit (issue 14)
def add_audit(sub):
    a = sub.add_parser("audit", help="mutation audit of the hidden suites: grade every small change of the "
                                     "references and count the ones that keep full marks")
    a.add_argument("--steps", help="comma-separated step stems, of one assignment or several, each audited "
                                   "apart (default: every step of every assignment)")
    a.add_argument("--jobs", type=int, help="worker processes (default: one per core)")
    a.add_argument("--report", metavar="FILE", help="write every mutant's verdict as JSON; survivors with "
                                                    "their diff and the checks they passed")
    a.add_argument("--sample", type=int, help="audit only this many mutants per step, drawn with --seed")
    a.add_argument("--seed", type=int, default=0, help="the draw of --sample (default %(default)s)")
    a.add_argument("--record", action="store_true", help="whole assignments only: write each one's record "
                                                          "(docs/mutation_audit*.json) and README table from this run")
    a.add_argument("--min-score", type=float, default=0.98,
                   help="exit 1 when a step's mutation score is below this (default %(default)s)")


def audit(args):
    from autograder.commands import audit as mutation_audit
    steps = args.steps.split(",") if args.steps else None
    unknown = [s for s in steps or () if s not in contract.STEP_BY_STEM]
    if unknown:
        print(f"error: unknown step {', '.join(unknown)}; steps are {', '.join(contract.STEP_BY_STEM)}",
              file=sys.stderr)
        return 2
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
            print(f"recorded: {path.relative_to(mutation_audit.KIT_ROOT)} and README.md\n")
        everything += outcomes
        total = {k: total.get(k, 0.0) + v for k, v in timings.items()}
    if args.report:
        mutation_audit.write_report(everything, total, args.report)
        print(f"report: {for_terminal(args.report)}")
    table = mutation_audit.scores(everything)
    bad = [k for k, v in table.items() if v["score"] < args.min_score]
    found = any(f for _t, f in mutation_audit.findings(everything)[1:])
    return 1 if bad or found else 0
