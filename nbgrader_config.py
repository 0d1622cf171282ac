"""nbgrader configuration: the repo root is the course; source/ is the master, assignments/ the release."""
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.converters.generate_assignment import GenerateAssignment
from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions, GetGrades

from autograder.release import StepStubs

c = get_config()  # noqa: F821 (provided by nbgrader)
c.CourseDirectory.course_id = "attention-kit"
c.CourseDirectory.source_directory = "source"
c.CourseDirectory.release_directory = "assignments"

# The language of the grader's messages in the hidden-test cells and the feedback: "en" (English)
# or "zh" (Simplified Chinese). Read by autograder/notebook.py's grade_step, not by nbgrader;
# the environment variable ATTENTION_KIT_LANG overrides it.
c.AttentionKit.language = "en"

# the same pipeline as nbgrader's, with stubs that name the step
_default = GenerateAssignment.class_traits()["preprocessors"].default()
c.GenerateAssignment.preprocessors = [StepStubs if p is ClearSolutions else p for p in _default]

# Feedback shows every cell of the autograded notebook, the hidden-test cells' source included
# (nbgrader restores it from the master when autograding): strip those regions again, keep the
# cells' output (the grader's messages) and scores.
c.GenerateFeedback.preprocessors = [GetGrades, ClearHiddenTests, CSSHTMLHeaderPreprocessor]

# nbgrader's default of 30 s per cell is shorter than a hidden-test cell may legitimately take:
# one step may spend up to (1 + max_restarts) call time-outs of 20 s on a student's endless loop.
c.Execute.timeout = 300
