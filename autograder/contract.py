"""The student contract: which file defines what, shared by the grader, the release and the tests.

Names, signatures and shapes are fixed here once; everything else reads them from this table.
"""
from dataclasses import dataclass

from .i18n import N_, translate

ASSIGNMENT = "self_attention"


@dataclass(frozen=True)
class Step:
    number: int          # 1..7
    stem: str            # file stem, e.g. "04_softmax"
    title: str
    framework: str       # "numpy" or "torch": what the student's code works with
    names: tuple         # the functions / classes the file must define
    points: int = 10     # the step's total; the hidden suite splits it between checks

    @property
    def shown_title(self):
        """The title in the current language (for reports; `title` stays the English msgid)."""
        return translate(self.title)

    @property
    def files(self):
        """The file names a submission may use for this step."""
        return (f"{self.stem}.ipynb", f"{self.stem}.py")


STEPS = (
    Step(1, "01_projection", N_("Projection X -> Q, K, V"), "numpy", ("project_qkv",)),
    Step(2, "02_scores", N_("Scores Q K^T"), "numpy", ("attention_scores",)),
    Step(3, "03_scaling", N_("Scaling by 1/sqrt(d_k)"), "numpy", ("scale_scores",)),
    Step(4, "04_softmax", N_("Numerically stable softmax"), "numpy", ("softmax",)),
    Step(5, "05_weighted_sum", N_("Weighted sum and the five steps chained"), "numpy",
         ("weighted_sum", "self_attention")),
    Step(6, "06_multi_head", N_("Multi-head attention"), "torch",
         ("split_heads", "merge_heads", "multi_head_attention")),
    Step(7, "07_full_module", N_("The full nn.Module"), "torch",
         ("SingleHeadSelfAttention", "MultiHeadSelfAttention")),
)

STEP_BY_STEM = {s.stem: s for s in STEPS}


def step_for_stem(stem):
    """The Step whose file stem is `stem`, or None."""
    return STEP_BY_STEM.get(stem)
