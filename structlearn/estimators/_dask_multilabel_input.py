"""Multilabel training data given as a ``dask.bag.Bag`` of ``(x_i, y_i)`` samples.

Each bag partition is validated and stacked on the worker that computes it
(``x_i`` a 1-D feature vector or a one-row sparse matrix, ``y_i`` a 1-D 0/1
indicator vector); the client receives per partition only its sizes, label
counts and label co-occurrence counts (what ``pairwise="tree"`` needs); each
partition is then split into two sample blocks where it is
(:class:`structlearn.learners._gdmm_multilabel_blocks.SampleBlock`).  Bad
input is named by its bag partition and element.
"""

import numpy as np
import scipy.sparse as sp

from ._dask_input import _named, _split_pairs

__all__ = ["multilabel_blocks_on_workers", "multilabel_parts_on_workers"]


def _row(x, j):
    """Sample ``j``'s features as a one-row CSR matrix of float64."""
    if sp.issparse(x):
        if x.ndim != 2 or x.shape[0] != 1:
            raise ValueError(f"x[{j}] is a sparse matrix of shape {x.shape}; a sample's "
                             "features are one row")
        row = sp.csr_matrix(x, dtype=np.float64)
    else:
        try:
            v = np.asarray(x, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"x[{j}] is not a vector of numbers: {exc}") from exc
        if v.ndim != 1:
            raise ValueError(f"x[{j}] has shape {v.shape}; a sample's features are a 1-D "
                             "vector")
        row = sp.csr_matrix(v[None, :])
    if not np.isfinite(row.data).all():
        raise ValueError(f"x[{j}] holds NaN or infinity")
    return row


def _local_samples(items, part, bias):
    """One bag partition validated and stacked on its worker: CSR features
    (with the intercept column of value ``bias`` appended unless None) and
    int8 labels."""
    from ._validation import append_constant, check_multilabel, csr_arrays

    X, Y = _split_pairs(items, part)
    try:
        rows = [_row(x, j) for j, x in enumerate(X)]
        widths = np.array([r.shape[1] for r in rows])
        if (widths != widths[0]).any():
            j = int(np.flatnonzero(widths != widths[0])[0])
            raise ValueError(f"x[{j}] has {widths[j]} features, x[0] has {widths[0]}")
        labels = []
        for j, y in enumerate(Y):
            y = np.asarray(y.toarray() if sp.issparse(y) else y)
            if y.ndim == 2 and y.shape[0] == 1:
                y = y.reshape(-1)
            if y.ndim != 1:
                raise ValueError(f"y[{j}] has shape {y.shape}; a sample's labels are a 1-D "
                                 "0/1 vector")
            if len(labels) and y.shape != labels[0].shape:
                raise ValueError(f"y[{j}] has {y.shape[0]} labels, y[0] has "
                                 f"{labels[0].shape[0]}")
            labels.append(y)
        Xs, Ys = check_multilabel(sp.vstack(rows, format="csr"), np.stack(labels))
    except (TypeError, ValueError) as exc:
        raise _named(exc, part) from exc
    if bias is not None:
        Xs = append_constant(Xs, bias)
    data, indices, indptr = csr_arrays(Xs)
    return {"data": data, "indices": indices, "indptr": indptr, "Y": Ys,
            "n_features": int(Xs.shape[1])}


def _local_summary(local):
    """What the client needs of a partition: sizes, squared norms, label
    counts and the upper triangle of the label co-occurrence counts."""
    Y = local["Y"]
    Ys = sp.csr_matrix(Y, dtype=np.float64)
    x = local["data"]
    return {"n_samples": Y.shape[0], "n_labels": Y.shape[1], "n_features": local["n_features"],
            "sq_norm_sum": float(x @ x), "counts": np.asarray(Ys.sum(axis=0)).ravel(),
            "co": sp.triu(Ys.T @ Ys, k=1).tocsr()}


def multilabel_parts_on_workers(client, bag, bias):
    """The partitions of ``bag`` validated and stacked on the workers.

    Parameters
    ----------
    client : distributed.Client
    bag : dask.bag.Bag
        Of ``(x_i, y_i)`` pairs.
    bias : float or None
        The intercept column's value (None: no column).

    Returns
    -------
    parts : list of Future
        Per bag partition, its stacked samples (on a worker).
    summary : dict
        ``n_samples``, ``n_features`` (with the intercept column),
        ``n_labels``, ``sq_norm_sum``, ``counts`` (L,) and ``co`` (the label
        co-occurrence counts' upper triangle, sparse (L, L)), over the bag,
        and ``part_sizes`` (the samples of each partition).

    Raises
    ------
    ValueError
        A bag without partitions, a bad element (named by partition and
        element), or partitions with other feature or label counts.
    """
    from dask import delayed

    delayed_parts = bag.to_delayed()
    if not delayed_parts:
        raise ValueError("the dask bag has no partitions: there are no samples to fit")
    parts = client.compute([delayed(_local_samples)(p, i, bias)
                            for i, p in enumerate(delayed_parts)])
    total = None
    for i, f in enumerate([client.submit(_local_summary, p, pure=False) for p in parts]):
        s = f.result()
        if total is None:
            total = dict(s, part_sizes=[s["n_samples"]])
            continue
        total["part_sizes"].append(s["n_samples"])
        for key, what in (("n_features", "features"), ("n_labels", "labels")):
            if s[key] != total[key]:
                raise ValueError(f"dask bag partition {i} has samples of {s[key]} {what}, "
                                 f"partition 0 of {total[key]}")
        for key in ("n_samples", "sq_norm_sum", "counts", "co"):
            total[key] = total[key] + s[key]
    return parts, total


def _two_blocks(local, pair_capacity):
    """A partition's samples as two blocks of about equal non-zeros (one
    when it holds one sample), their duals at zero: a list."""
    from ..learners._gdmm_multilabel_blocks import SampleBlock
    from ..learners._gdmm_multilabel_storage import new_pair_pool
    from ..learners._partitions import split_by_weight

    indptr = local["indptr"]
    Y = local["Y"]
    n_samples = Y.shape[0]
    bounds = split_by_weight(np.diff(indptr) + 1, 2)
    if bounds.shape[0] < 3 and n_samples > 1:  # one sample outweighs the rest
        bounds = np.array([0, n_samples // 2, n_samples])
    blocks = []
    for s0, s1 in zip(bounds[:-1], bounds[1:]):
        n = int(s1 - s0)
        pool = new_pair_pool(np.full(n, pair_capacity, dtype=np.int64),
                             max(n * pair_capacity // 2, 64))
        blocks.append(SampleBlock.of_rows(
            local["data"], local["indices"], indptr, Y, s0, s1,
            (np.zeros((n, Y.shape[1])), np.zeros((n, Y.shape[1]), dtype=np.uint8), pool)))
    return blocks


def multilabel_blocks_on_workers(client, parts, part_sizes, pair_capacity):
    """Every partition of :func:`multilabel_parts_on_workers` split into two
    sample blocks where it is (one where it holds one sample: ``part_sizes``
    are the partitions' samples); returns the block futures, the
    partitions' first halves (the home blocks) before their second halves
    (the visitors).  ``pair_capacity``: the pair slots each sample starts
    with."""
    import operator

    from distributed import wait

    halves = [client.submit(_two_blocks, p, int(pair_capacity), pure=False) for p in parts]
    firsts = [client.submit(operator.getitem, h, 0, pure=False) for h in halves]
    seconds = [client.submit(operator.getitem, h, 1, pure=False)
               for h, n in zip(halves, part_sizes) if n > 1]
    blocks = firsts + seconds
    wait(blocks)
    return blocks
