"""MATHMO: automated mathematical modelling through bi-level adaptive search (ICLR 2026)."""

from mathmo.mose import mose_score, parsimony_judge
from mathmo.operators import Evaluation, Operators, ProgrammaticOperators
from mathmo.pareto import hypervolume, hypervolume_gain, non_dominated
from mathmo.sandbox import SandboxResult, run_sandboxed
from mathmo.search import (
    VARIANTS,
    Evaluator,
    SearchConfig,
    SearchResult,
    pareto_ucb,
    run_search,
    select_framework,
)
from mathmo.tasks import Candidate, Framework, ModelCard, PlantedTask, Task

__all__ = [
    "VARIANTS",
    "Candidate",
    "Evaluation",
    "Evaluator",
    "Framework",
    "ModelCard",
    "Operators",
    "PlantedTask",
    "ProgrammaticOperators",
    "SandboxResult",
    "SearchConfig",
    "SearchResult",
    "Task",
    "hypervolume",
    "hypervolume_gain",
    "mose_score",
    "non_dominated",
    "pareto_ucb",
    "parsimony_judge",
    "run_sandboxed",
    "run_search",
    "select_framework",
]
