"""Bundled real data sets, CoNLL-U reading, token features and synthetic generators."""

from ._bundled import load_ocr_letters, load_scene, load_yeast
from .synthetic import make_chain_data, make_grid_mrf, make_multilabel_pairwise

__all__ = [
    "load_ocr_letters",
    "load_scene",
    "load_yeast",
    "make_chain_data",
    "make_grid_mrf",
    "make_multilabel_pairwise",
]
