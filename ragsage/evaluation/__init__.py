"""Retrieval evaluation: datasets, metrics, and the runs ``ragsage eval`` prints.

The pieces are separable on purpose: :func:`load_dataset` reads a dataset,
a backend (:mod:`ragsage.cli.evaluation.backends`) indexes it, and :func:`evaluate`
scores any search callable — so a re-index gate can evaluate one generation
that is already built without indexing anything.
"""

from ragsage.evaluation.datasets import Dataset, EvalDocument, Question, load_dataset
from ragsage.evaluation.errors import DatasetError, EvalBackendError
from ragsage.evaluation.runner import EvalReport, QuestionResult, SearchFn, evaluate
from ragsage.evaluation.runs import compare, load_run, save_run

__all__ = [
    "Dataset",
    "DatasetError",
    "EvalBackendError",
    "EvalDocument",
    "EvalReport",
    "Question",
    "QuestionResult",
    "SearchFn",
    "compare",
    "evaluate",
    "load_dataset",
    "load_run",
    "save_run",
]
