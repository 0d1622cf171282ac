"""nbgrader configuration: the repo root is the course; source/ is the master, assignments/ the release."""
from nbgrader.converters.generate_assignment import GenerateAssignment
from nbgrader.preprocessors import ClearSolutions

from autograder.release import StepStubs

c = get_config()  # noqa: F821 (provided by nbgrader)
c.CourseDirectory.course_id = "attention-kit"
c.CourseDirectory.source_directory = "source"
c.CourseDirectory.release_directory = "assignments"

# the same pipeline as nbgrader's, with stubs that name the step
_default = GenerateAssignment.class_traits()["preprocessors"].default()
c.GenerateAssignment.preprocessors = [StepStubs if p is ClearSolutions else p for p in _default]
