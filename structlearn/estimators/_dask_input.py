"""Training data given as a ``dask.bag.Bag`` of ``(X_i, y_i)`` sequences.

Each partition of the bag is validated, summarized and turned into a
training partition on the worker that holds it; the client sees only the
summaries (labels, feature counts, sizes; for per-token feature dicts, the
partition's vocabulary) and, during the fit, the weights.  The functions
that run on the workers name the bag partition and the element (its index
within the partition) of any bad input.
"""

import numpy as np
import scipy.sparse as sp

from ._validation import (check_sequence_labels, check_sequences, csr_arrays,
                          encode_sequence_labels)

__all__ = ["bag_client", "bag_summaries", "crf_parts_on_workers", "is_dask_bag",
           "partitions_on_workers"]


def is_dask_bag(X):
    """Whether ``X`` is a ``dask.bag.Bag`` (without importing dask)."""
    return type(X).__name__ == "Bag" and type(X).__module__.startswith("dask.bag")


def bag_client():
    """The default ``distributed.Client``, which a fit on a dask bag needs."""
    try:
        from distributed import get_client

        return get_client()
    except (ImportError, ValueError) as exc:
        raise RuntimeError("fitting on a dask bag needs a distributed.Client (create one "
                           "before fit)") from exc


def _split_pairs(items, part):
    """``(X, y)`` lists of one bag partition's ``(X_i, y_i)`` pairs."""
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
    return X, y


def _named(exc, part):
    """``exc`` (a TypeError or ValueError) again, naming the bag partition."""
    return type(exc)(f"dask bag partition {part} (X[j] is its element j): {exc}")


def _checked_items(items, part):
    """``(Xcat CSR, offsets, ycat)`` of one bag partition's ``(X_i, y_i)`` pairs."""
    X, y = _split_pairs(items, part)
    try:
        Xcat, offsets, ycat = check_sequences(X, y)
    except (TypeError, ValueError) as exc:
        raise _named(exc, part) from exc
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


# ------------------------------------------------------------------ the CRF
def _crf_local(items, part):
    """One bag partition validated and encoded on its worker: feature
    matrices stacked (CSR), or per-token feature dicts encoded in the
    partition's own vocabulary (``vocabulary``: its
    :func:`~structlearn.datasets.sequence_vectorizer.vocabulary_part`)."""
    from ..datasets.sequence_vectorizer import is_dict_sequences, vocabulary_part

    X, y = _split_pairs(items, part)
    vocabulary = None
    try:
        if is_dict_sequences(X):
            vocabulary, (Xcat, offsets) = vocabulary_part(X)
            empty = np.flatnonzero(offsets[1:] == offsets[:-1])
            if empty.size:
                raise ValueError(f"X[{empty[0]}] is an empty sequence (0 tokens)")
            ycat = check_sequence_labels(y, offsets)
        else:
            Xcat, offsets, ycat = check_sequences(X, y)
            Xcat = sp.csr_matrix(Xcat)
        labels = encode_sequence_labels(ycat)[0]
    except (TypeError, ValueError) as exc:
        raise _named(exc, part) from exc
    return {"X": Xcat, "offsets": offsets, "y": ycat, "labels": labels,
            "vocabulary": vocabulary}


def _crf_summary(local):
    return {"labels": local["labels"], "dicts": local["vocabulary"] is not None,
            "n_features": local["X"].shape[1], "n_seq": local["offsets"].shape[0] - 1,
            "vocabulary": local["vocabulary"]}


def _crf_part(local, column, n_features, classes):
    """``(Xcat, offsets, codes)`` of a partition in the merged vocabulary
    (``column``: its features' columns there, None for feature matrices)
    and the classes of all partitions."""
    from ..datasets.sequence_vectorizer import remap_columns
    from ..learners.chain_crf import compact_features

    Xcat = local["X"]
    if column is not None:
        Xcat = remap_columns(Xcat, column, n_features)
    codes = encode_sequence_labels(local["y"], classes)[1]
    return compact_features(Xcat), local["offsets"], codes


def _merged_classes(summaries):
    """The sorted classes of every partition's labels; mixed kinds (text in
    one partition, numbers in another) compared as objects, so that they
    fail as they would in one list."""
    labels = [s["labels"] for s in summaries]
    if len({a.dtype.kind for a in labels}) > 1:
        labels = [a.astype(object) for a in labels]
    try:
        return encode_sequence_labels(np.concatenate(labels))[0]
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"the dask bag's labels across its partitions: {exc}") from exc


def crf_parts_on_workers(client, bag, min_freq=1, vectorizer=None):
    """The partitions of ``bag`` as CRF training parts on the workers.

    Every partition is validated and encoded where it is computed; the
    client reads the partitions' summaries one at a time and merges their
    labels and, for per-token feature dicts, their vocabularies (as one
    :class:`~structlearn.datasets.SequenceVectorizer` ``fit`` with
    ``min_freq`` would; ``vectorizer``: a fitted one to keep instead).

    Returns
    -------
    parts : list of Future
        ``(Xcat, offsets, codes)`` per partition (see
        :func:`structlearn.learners.chain_crf_cluster.fit_chain_crf_cluster`).
    classes : ndarray (n_classes,)
    vectorizer : SequenceVectorizer or None
        None for feature matrices.
    n_features, n_sequences : int

    Raises
    ------
    ValueError, TypeError
        A bad element (named by partition and index), partitions of
        matrices with different numbers of features, or a mix of matrices
        and feature dicts.
    """
    from dask import delayed
    from distributed import wait

    from ..datasets.sequence_vectorizer import columns_in, merged_vocabulary

    local = client.compute([delayed(_crf_local)(p, i)
                            for i, p in enumerate(bag.to_delayed())])
    pending = [client.submit(_crf_summary, f, pure=False) for f in local]
    summaries = []

    def vocabularies():
        """The partitions' vocabularies, one summary read at a time."""
        for i, future in enumerate(pending):
            summary = future.result()
            future.release()
            vocabulary = summary.pop("vocabulary")
            if summaries and summary["dicts"] != summaries[0]["dicts"]:
                kinds = {True: "per-token feature dicts", False: "feature matrices"}
                raise ValueError(f"dask bag partition {i} holds {kinds[summary['dicts']]} but "
                                 f"partition 0 holds {kinds[summaries[0]['dicts']]}")
            summaries.append(summary)
            if vocabulary is not None:
                yield vocabulary

    stream = vocabularies()
    first = next(stream, None)
    if first is None:  # feature matrices: all read
        vectorizer = None
        columns = [None] * len(summaries)
        d = summaries[0]["n_features"]
        bad = [i for i, s in enumerate(summaries) if s["n_features"] != d]
        if bad:
            raise ValueError(f"dask bag partition {bad[0]} has sequences of "
                             f"{summaries[bad[0]]['n_features']} features but partition 0 "
                             f"has {d}: all sequences must have the same number of features")
    elif vectorizer is not None:
        columns = [columns_in(vectorizer, first)] + [columns_in(vectorizer, v) for v in stream]
    else:
        vectorizer, columns = merged_vocabulary(_chained(first, stream), min_freq)
    if vectorizer is not None:
        d = vectorizer.n_features_out_
    classes = _merged_classes(summaries)
    parts = [client.submit(_crf_part, f, column, d, classes, pure=False)
             for f, column in zip(local, columns)]
    wait(parts)
    del local  # the parts replace them on the workers
    return parts, classes, vectorizer, d, sum(s["n_seq"] for s in summaries)


def _chained(first, rest):
    yield first
    yield from rest
