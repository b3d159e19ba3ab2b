"""structlearn.learners."""

from .chain_crf import fit_chain_crf_lbfgs
from .convex_bp_learning import (
    fit_convex_bp_crf,
    grid_block_labels,
    index_block_labels,
)

__all__ = [
    "fit_chain_crf_lbfgs",
    "fit_convex_bp_crf",
    "grid_block_labels",
    "index_block_labels",
]
