"""JUnit XML for any CI (GitLab's test reports, Jenkins, Azure ...): `grade --format junit`.

One <testsuite> per step, one <testcase> per check. A failed check carries a <failure> with the
grader's message; a skipped check (the CUDA ones without a GPU) a <skipped> with the reason.
Points go in <properties>, which JUnit has no field for: `points` / `max_points` per testcase,
`score` / `max_score` per suite.
"""
import re
import xml.etree.ElementTree as ET

from autograder import contract
from autograder.i18n import _
from autograder.reports.text import written

# XML 1.0 cannot carry most control characters, not even escaped; student output can hold them
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _text(s):
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", str(s))


def _properties(parent, items):
    props = ET.SubElement(parent, "properties")
    for name, value in items:
        ET.SubElement(props, "property", name=name, value=_text(value))


def junit_xml(report):
    """The report as a JUnit XML document (str), in the current language."""
    report = written(report)
    assignment = contract.assignment_of_report([s.step.stem for s in report.steps]) or "attention-kit"
    root = ET.Element("testsuites", name=f"attention-kit {assignment}")
    totals = {"tests": 0, "failures": 0, "skipped": 0}
    for s in report.steps:
        failures = sum(c.status != "passed" for c in s.checks)
        counts = {"tests": len(s.checks) + len(s.skipped), "failures": failures, "skipped": len(s.skipped)}
        suite = ET.SubElement(root, "testsuite", name=str(_("Step {step}: {title}", step=s.step.number,
                                                              title=s.step.shown_title)),
                              errors="0", **{k: str(v) for k, v in counts.items()})
        _properties(suite, [("step", s.step.stem), ("file", s.file or str(_("(missing)"))),
                            ("score", f"{s.score:g}"), ("max_score", f"{s.max_score:g}")])
        classname = f"{assignment}.{s.step.stem}"
        for c in s.checks:
            case = ET.SubElement(suite, "testcase", name=_text(f"{c.number} {c.name}"), classname=classname)
            _properties(case, [("points", f"{c.score:g}"), ("max_points", f"{c.max_score:g}"),
                               ("kind", c.kind)] + [("misconception", m) for m in c.misconceptions])
            if c.status != "passed":
                first = c.output.strip().splitlines()[0] if c.output.strip() else str(_("failed"))
                failure = ET.SubElement(case, "failure", message=_text(first[:300]), type=c.kind)
                failure.text = _text(c.output)
        for number, name, reason in s.skipped:
            case = ET.SubElement(suite, "testcase", name=_text(f"{number} {name}"), classname=classname)
            ET.SubElement(case, "skipped", message=_text(reason))
        for key in totals:
            totals[key] += counts[key]
    root.attrib.update({k: str(v) for k, v in totals.items()}, errors="0")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
