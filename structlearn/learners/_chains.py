"""The training chains as the chain learners' kernels read them."""

from typing import NamedTuple

import numpy as np

__all__ = ["TrainingChains"]


class TrainingChains(NamedTuple):
    """The training sequences: token features in CSR form (``data`` float64
    (nnz,), ``indices`` int64 (nnz,), ``indptr`` int64 (n_tokens + 1,)),
    sequence ``offsets`` (int64, n_seq + 1; sequence ``s`` spans tokens
    ``offsets[s]:offsets[s + 1]``) and true label codes ``labels`` (int64,
    (n_tokens,))."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    offsets: np.ndarray
    labels: np.ndarray
