"""Joint oracle for binary variables with pairwise interaction factors.

Multilabel prediction with pairwise label interactions has one binary
variable per label and one 2 x 2 factor per label pair: ``L (L - 1) / 2``
factors per sample.  A pair factor scores its rare *active outcome*
``(1, 1)`` by ``s[i, j]`` (the other outcomes score 0), so (Appendix C-2 of
the GDMM structural-SVM paper) the greedy step of block-greedy coordinate
descent, which picks the factor of largest gradient among all pairs of one
sample, reduces to

    argmax over unordered pairs {i, j} not excluded of  s[i, j] + c[i] + c[j]

where ``c`` is sparse: only the sample's *active labels* (labels whose
variable has non-zero dual/messages, e.g. its positive labels and labels
already in its active set) have ``c[i] != 0``; the caller folds its message
and multiplier terms for outcome 1 into ``c``.  Excluded pairs are those
already in the sample's active factor set (or any pair the caller wants to
skip).  With the pair scores kept in sorted multimaps (a heap over all
pairs and one heap per label over its partners, updated in O(log L) per
changed score), the search splits as in Appendix C-1:

(i)   no active label: walk the global heap to the first pair with both
      labels inactive and not excluded;
(ii)  one active label ``a``: walk ``a``'s partner heap to the first
      inactive, non-excluded partner;
(iv)  both active: every pair of active labels.

Cost: O(|A|^2 + |A| + a few heap entries) instead of O(L^2), i.e.
sublinear in the number of factors when few labels are active.  The result
equals a dense scan bit for bit (ties and -inf included).

The unigram side of the joint search (the label whose unigram factor has
the largest gradient) is a dense argmax over ``L`` values that the caller
computes anyway from the inner products; :func:`masked_argmax` does it with
an exclusion list.

State and calling from numba
----------------------------
:func:`make_binary_oracle` returns ``state = (s, meta, pair_i, pair_j,
g_keys, g_items, g_pos, r_keys, r_items, r_pos)``: ``s`` float64
``(L (L - 1) / 2,)`` holds the pair scores in row-major upper-triangle order
(``pair_id(i, j, L)``; read freely, change only through the kernels),
``meta = [L]``, ``pair_i/pair_j`` decode pair ids, then the global heap and
the per-label heaps (label ``i``'s heap at ``i * L``, its own slot holds
``-inf``; empty arrays in a state built with ``partner_heaps=False``).
Memory: about 64 bytes per pair (32 without the partner heaps).  Kernels
(``structlearn.oracles._binary_kernels``)::

    best, i, j, n_visited = binary_pair_fmo(
        state, act_idx, act_val, n_act, excl_i, excl_j, n_excl, workspace)
    binary_update(state, i, j, value)      # s[i, j] = value
    binary_add(state, i, j, delta)         # s[i, j] += delta
    best, i = masked_argmax(values, excl_idx, n_excl, mark)

``act_idx[:n_act]`` (distinct int64 labels) with ``act_val[:n_act]``
(float64) is the sparse ``c``; ``excl_i[:n_excl], excl_j[:n_excl]`` the
excluded pairs (int64, ``i != j``, either order).  ``workspace`` comes from
:func:`make_binary_workspace`; ``workspace[2]`` holds the entries visited in
cases (i), (ii), -, (iv) after a call.  Returns ``i < j``, or
``(-inf, -1, -1, n)`` when no pair is above ``-inf``.
"""

from __future__ import annotations

import numpy as np

from ._binary_kernels import (
    binary_add,
    binary_build,
    binary_pair_fmo,
    binary_update,
    dense_binary_pair_argmax,
    masked_argmax,
    pair_id,
)
from .sorted_tables import _sparse_message

__all__ = [
    "make_binary_oracle",
    "make_binary_workspace",
    "binary_pair_argmax",
    "binary_add",
    "binary_pair_fmo",
    "binary_update",
    "dense_binary_pair_argmax",
    "masked_argmax",
    "pair_id",
]


def make_binary_oracle(pair_scores, *, partner_heaps=True):
    """Build the joint oracle state.

    Parameters
    ----------
    pair_scores : array-like of float, shape (L, L) or (L * (L - 1) // 2,)
        A square matrix (its strict upper triangle is used) or the pair
        scores in upper-triangle order. No NaN or +inf.
    partner_heaps : bool, default=True
        Keep one heap per label over its partners (case (ii)).  Without
        them an update costs one heap operation instead of three and case
        (ii) scans the active label's ``L - 1`` partners: the choice for
        callers that search with no active label (case (i) only), such as
        multilabel training.

    Returns
    -------
    state : tuple of 10 arrays
        See the module docstring.
    """
    arr = np.asarray(pair_scores, dtype=np.float64)
    if arr.ndim == 2:
        if arr.shape[0] != arr.shape[1]:
            raise ValueError(f"pair_scores must be square, got shape {arr.shape}")
        L = arr.shape[0]
        s = arr[np.triu_indices(L, 1)].copy()
    elif arr.ndim == 1:
        P = arr.shape[0]
        L = int(round((1 + np.sqrt(1 + 8 * P)) / 2))
        if L * (L - 1) // 2 != P:
            raise ValueError(f"{P} pair scores do not form a full upper triangle")
        s = arr.copy()
    else:
        raise ValueError(f"pair_scores must be 1-D or 2-D, got shape {arr.shape}")
    if L < 2:
        raise ValueError("need at least 2 labels")
    if np.isnan(s).any() or np.isposinf(s).any():
        raise ValueError("pair_scores must not contain NaN or +inf")
    if L * L > np.iinfo(np.int32).max:
        raise ValueError("too many labels")
    P = s.shape[0]
    state = (
        s,
        np.array([L], dtype=np.int64),
        np.empty(P, dtype=np.int32),
        np.empty(P, dtype=np.int32),
        np.empty(P, dtype=np.float64),
        np.empty(P, dtype=np.int32),
        np.empty(P, dtype=np.int32),
        np.empty(L * L if partner_heaps else 0, dtype=np.float64),
        np.empty(L * L if partner_heaps else 0, dtype=np.int32),
        np.empty(L * L if partner_heaps else 0, dtype=np.int32),
    )
    binary_build(state)
    return state


def make_binary_workspace(n_labels):
    """Scratch for :func:`binary_pair_fmo`: ``(pos, excl, stats, fr_key, fr_slot)``.

    Parameters
    ----------
    n_labels : int

    Returns
    -------
    workspace : tuple
        ``pos`` int64 (L,) of -1, ``excl`` uint8 (L (L - 1) / 2,) of 0 (both
        restored by every call), ``stats`` int64 (4,), frontier buffers.
    """
    L = int(n_labels)
    if L != n_labels or L < 0:
        raise ValueError(f"n_labels must be a non-negative integer, got {n_labels!r}")
    return (
        np.full(L, -1, dtype=np.int64),
        np.zeros(L * (L - 1) // 2, dtype=np.uint8),
        np.zeros(4, dtype=np.int64),
        np.empty(64, dtype=np.float64),
        np.empty(64, dtype=np.int64),
    )


def binary_pair_argmax(state, act_idx=None, act_val=None, exclude=None, workspace=None):
    """Checked Python entry to :func:`binary_pair_fmo`.

    Parameters
    ----------
    state : tuple from :func:`make_binary_oracle`
    act_idx, act_val : arrays of shape (n_act,), optional
        Active labels and their additive terms ``c``.
    exclude : array-like of shape (n_excl, 2), optional
        Excluded pairs.
    workspace : tuple, optional

    Returns
    -------
    best : float
    i, j : int
    n_visited : int
    """
    L = int(state[1][0])
    act_idx, act_val = _sparse_message(act_idx, act_val, L, "active labels")
    ex = np.zeros((0, 2), dtype=np.int64) if exclude is None else np.asarray(exclude).reshape(-1, 2)
    ex = ex.astype(np.int64)
    if ex.size and (ex.min() < 0 or ex.max() >= L or (ex[:, 0] == ex[:, 1]).any()):
        raise ValueError("excluded pairs must be two distinct labels in [0, L)")
    if workspace is None:
        workspace = make_binary_workspace(L)
    best, i, j, nv = binary_pair_fmo(
        state, act_idx, act_val, act_idx.shape[0],
        np.ascontiguousarray(ex[:, 0]), np.ascontiguousarray(ex[:, 1]), ex.shape[0], workspace,
    )
    return float(best), int(i), int(j), int(nv)
