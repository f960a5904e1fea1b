"""The pipeline: the ledger and the two jobs that commit through it.

Each job is given the ledger it commits through, and `Attempts` the `Parents` it stores
sub-riddles with; neither holds the pipeline that owns it, so no module of the pipeline
imports another that imports it back.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from riddlectl.pipeline.attempts import Attempts
from riddlectl.pipeline.ledger import Ledger
from riddlectl.pipeline.parents import Parents
from riddlectl.pipeline.retry import RetryPolicy


@dataclass
class Pipeline(Ledger):
    """The ledger, and the two jobs that commit through it: `attempts` runs stages on
    claimed riddles, `parents` resumes parents once their sub-riddles are final."""

    retry: RetryPolicy
    max_abandoned: int = 5  # claims abandoned in a row before a riddle is poison
    parents: Parents = field(init=False)
    attempts: Attempts = field(init=False)

    def __post_init__(self) -> None:
        self.parents = Parents(self)
        self.attempts = Attempts(self, self.parents, self.retry, self.max_abandoned)
        self.on_child_final = self.parents.resume
