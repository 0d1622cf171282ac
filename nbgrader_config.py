"""nbgrader configuration: the repo root is the course; source/ is the master, assignments/ the release."""
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.converters.autograde import Autograde
from nbgrader.converters.generate_assignment import GenerateAssignment
from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions, Execute, GetGrades

from autograder.commands.nbgrader_wall import TrustedGrades, WalledExecute
from autograder.commands.release import StepStubs, TranslateNotebook

c = get_config()  # noqa: F821 (provided by nbgrader)
c.CourseDirectory.course_id = "attention-kit"
c.CourseDirectory.source_directory = "source"
c.CourseDirectory.release_directory = "assignments"

# The course's language: "en" (English) or "zh" (Simplified Chinese). It chooses
#  - the notebooks `nbgrader generate_assignment` releases: with "zh", the masters' text in Chinese
#    (TranslateNotebook, from autograder/locale/zh/LC_MESSAGES/notebooks.po; same cells, ids,
#    grade ids and points), a glossary cell first, stubs that say which step in Chinese;
#  - the grader's messages in the hidden-test cells and the feedback (autograder/commands/notebook_hook.py reads
#    this line; the environment variable ATTENTION_KIT_LANG overrides it there, not in the release).
c.AttentionKit.language = "en"

# the same pipeline as nbgrader's, the master translated first, with stubs that name the step
_default = GenerateAssignment.class_traits()["preprocessors"].default()
c.GenerateAssignment.preprocessors = [TranslateNotebook] + [StepStubs if p is ClearSolutions else p
                                                            for p in _default]

# Feedback shows every cell of the autograded notebook, the hidden-test cells' source included
# (nbgrader restores it from the master when autograding): strip those regions again, keep the
# cells' output (the grader's messages) and scores.
c.GenerateFeedback.preprocessors = [GetGrades, ClearHiddenTests, CSSHTMLHeaderPreprocessor]

# Autograding (autograder/commands/nbgrader_wall.py): nbgrader's pipeline, its Execute replaced by two steps.
#  - WalledExecute runs the student's notebook in a kernel walled off like the kit's child
#    processes: no view of this folder (source/, solutions/, the gradebook, other students), no
#    network, a uid of its own when nbgrader runs as root, the limits of c.WalledKernelManager
#    below. The hidden-test cells are not run in it.
#  - TrustedGrades then grades the notebook as submitted with the kit's grader, here in nbgrader's
#    own process, and writes each hidden-test cell's output (messages and points): the number
#    SaveAutoGrades records next can come from nowhere else.
_autograde = []
for _p in Autograde.class_traits()["autograde_preprocessors"].default():
    _autograde += [WalledExecute, TrustedGrades] if _p is Execute else [_p]
c.Autograde.autograde_preprocessors = _autograde

# The walled kernel's limits (these are the defaults): memory, CPU time of its process, processes
# and threads, largest file, all it may write. c.WalledKernelManager.isolation = "process" turns
# the wall off (limits only); "auto" takes the strongest level this machine allows.
c.WalledKernelManager.memory_gib = 4
c.WalledKernelManager.cpu_seconds = 600
c.WalledKernelManager.max_processes = 64
c.WalledKernelManager.file_mib = 64
c.WalledKernelManager.disk_mib = 128

# Time limit of each cell in the walled kernel (nbgrader's default is 30 s). The hidden-test cells
# no longer run there, so this bounds the student's own cells and the visible tests only; the
# kit's grading has its own limits (20 s a call, 600 s a submission).
c.Execute.timeout = 300
