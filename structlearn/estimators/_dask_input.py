"""Training data given as a ``dask.bag.Bag`` of ``(X_i, y_i)`` sequences.

Each partition of the bag is validated, summarized and turned into a
training partition on the worker that holds it; the client sees only the
summaries (labels, feature counts, sizes) and, during the fit, the weights.
The functions that run on the workers name the bag partition and the element
(its index within the partition) of any bad input.
"""

import numpy as np
import scipy.sparse as sp

from ._validation import check_sequences, csr_arrays

__all__ = ["bag_summaries", "is_dask_bag", "partitions_on_workers"]


def is_dask_bag(X):
    """Whether ``X`` is a ``dask.bag.Bag`` (without importing dask)."""
    return type(X).__name__ == "Bag" and type(X).__module__.startswith("dask.bag")


def _checked_items(items, part):
    """``(Xcat CSR, offsets, ycat)`` of one bag partition's ``(X_i, y_i)`` pairs."""
    items = list(items)
    if not items:
        raise ValueError(f"dask bag partition {part} holds no sequence")
    X, y = [], []
    for j, item in enumerate(items):
        if not (isinstance(item, (tuple, list)) and len(item) == 2):
            raise ValueError(f"dask bag partition {part}, element {j}: expected a pair "
                             f"(X_i, y_i) of a sequence's features and labels, got "
                             f"{type(item).__name__}")
        X.append(item[0])
        y.append(item[1])
    try:
        Xcat, offsets, ycat = check_sequences(X, y)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"dask bag partition {part} (X[j] is its element j): {exc}") from exc
    return sp.csr_matrix(Xcat), offsets, ycat


def _summary(items, part):
    Xcat, offsets, ycat = _checked_items(items, part)
    lengths = np.diff(offsets)
    return {"labels": np.unique(ycat), "n_features": Xcat.shape[1],
            "n_tokens": int(offsets[-1]), "n_edges": int(np.maximum(lengths - 1, 0).sum()),
            "features": np.unique(Xcat.indices).astype(np.int64),
            "sq_norm_sum": float(Xcat.multiply(Xcat).sum()),
            "max_abs": float(np.abs(Xcat.data).max(initial=0.0))}


def bag_summaries(client, bag):
    """Validate every partition of ``bag`` on the workers; returns one summary
    dict per partition (``labels``, ``n_features``, ``n_tokens``, ``n_edges``,
    ``features`` used, ``sq_norm_sum``, ``max_abs``).

    Raises
    ------
    ValueError, TypeError
        A bad element (named by partition and index), or partitions whose
        sequences have different numbers of features.
    """
    from dask import delayed

    parts = bag.to_delayed()
    summaries = client.compute([delayed(_summary)(p, i) for i, p in enumerate(parts)],
                               sync=True)
    widths = {s["n_features"] for s in summaries}
    if len(widths) > 1:
        first = summaries[0]["n_features"]
        bad = next(i for i, s in enumerate(summaries) if s["n_features"] != first)
        raise ValueError(f"dask bag partition {bad} has sequences of "
                         f"{summaries[bad]['n_features']} features but partition 0 has "
                         f"{first}: all sequences must have the same number of features")
    return summaries


def _partition(items, part, classes, sigma, settings, float32, sublinear):
    from ..learners.gdmm_chain_cluster import remote_chain_partition
    from ..learners._ssvm_common import ChainProblem

    Xcat, offsets, ycat = _checked_items(items, part)
    codes = np.searchsorted(classes, ycat)
    data, indices, indptr = csr_arrays(Xcat)
    problem = ChainProblem(data, indices, indptr, offsets, codes.astype(np.int64),
                           Xcat.shape[1], classes.shape[0])
    return remote_chain_partition(problem, sigma, settings, float32, sublinear)


def partitions_on_workers(client, bag, classes, sigma, settings, float32, sublinear):
    """One training partition per bag partition, built where the bag's data
    are (futures of :class:`structlearn.learners._gdmm_chain_dask.RemotePartition`)."""
    from dask import delayed

    return client.compute([delayed(_partition)(p, i, classes, sigma, settings, float32,
                                               sublinear)
                           for i, p in enumerate(bag.to_delayed())])
