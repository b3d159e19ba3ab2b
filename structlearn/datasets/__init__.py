"""Bundled real data sets, CoNLL-U reading, token features and synthetic generators."""

from ._bundled import load_ocr_letters, load_scene, load_yeast

__all__ = [
    "load_ocr_letters",
    "load_scene",
    "load_yeast",
]
