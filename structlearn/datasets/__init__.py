"""Bundled real data sets, CoNLL-U reading, token features and synthetic generators."""

from ._bundled import load_ocr_letters, load_scene, load_yeast
from .conllu import read_conllu
from .synthetic import (make_chain_data, make_grid_mrf, make_multilabel_pairwise,
                        make_sparse_multilabel)
from .sequence_vectorizer import SequenceVectorizer
from .token_features import token_features, vectorize_sequences

__all__ = [
    "SequenceVectorizer",
    "load_ocr_letters",
    "load_scene",
    "load_yeast",
    "read_conllu",
    "token_features",
    "vectorize_sequences",
    "make_chain_data",
    "make_grid_mrf",
    "make_multilabel_pairwise",
    "make_sparse_multilabel",
]
