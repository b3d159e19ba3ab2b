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

__all__ = ["bag_client", "chain_part_summaries", "chain_partitions_on_workers", "is_dask_bag",
           "sequence_parts_on_workers"]


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


# ------------------------------------------------------- the partitions' sequences
def _local_sequences(items, part):
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


def _local_summary(local):
    return {"labels": local["labels"], "dicts": local["vocabulary"] is not None,
            "n_features": local["X"].shape[1], "n_seq": local["offsets"].shape[0] - 1,
            "vocabulary": local["vocabulary"]}


def _encoded_part(local, column, n_features, classes, compact):
    """``(Xcat, offsets, codes)`` of a partition in the merged vocabulary
    (``column``: its features' columns there, None for feature matrices)
    and the classes of all partitions."""
    from ..datasets.sequence_vectorizer import remap_columns
    from ..learners.chain_crf import compact_features

    Xcat = local["X"]
    if column is not None:
        Xcat = remap_columns(Xcat, column, n_features)
    codes = encode_sequence_labels(local["y"], classes)[1]
    return (compact_features(Xcat) if compact else Xcat), local["offsets"], codes


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


def sequence_parts_on_workers(client, bag, *, min_freq=1, vectorizer=None, compact=False):
    """The partitions of ``bag`` as encoded training parts on the workers.

    Every partition is validated and encoded where it is computed; the
    client reads the partitions' summaries one at a time and merges their
    labels and, for per-token feature dicts, their vocabularies (as one
    :class:`~structlearn.datasets.SequenceVectorizer` ``fit`` with
    ``min_freq`` would; ``vectorizer``: a fitted one to keep instead).
    ``compact``: the parts' features in the CRF's compact form
    (:func:`~structlearn.learners.chain_crf.compact_features`).

    Returns
    -------
    parts : list of Future
        ``(Xcat, offsets, codes)`` per partition: CSR features in the
        merged vocabulary, sequence offsets, label codes into ``classes``.
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

    delayed_parts = bag.to_delayed()
    if not delayed_parts:
        raise ValueError("the dask bag has no partitions: no sequence to train on")
    local = client.compute([delayed(_local_sequences)(p, i)
                            for i, p in enumerate(delayed_parts)])
    pending = [client.submit(_local_summary, f, pure=False) for f in local]
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
    parts = [client.submit(_encoded_part, f, column, d, classes, compact, pure=False)
             for f, column in zip(local, columns)]
    wait(parts)
    del local  # the parts replace them on the workers
    return parts, classes, vectorizer, d, sum(s["n_seq"] for s in summaries)


def _chained(first, rest):
    yield first
    yield from rest


# ------------------------------------------------------------ the SSVM's partitions
def _chain_part_summary(part):
    """What the client needs of a part to set a GDMM fit up: the features it
    uses, its tokens and bigrams, its features' summed squares and largest
    magnitude."""
    Xcat, offsets, _ = part
    lengths = np.diff(offsets)
    return {"features": np.unique(Xcat.indices).astype(np.int64),
            "n_tokens": int(offsets[-1]), "n_edges": int(np.maximum(lengths - 1, 0).sum()),
            "sq_norm_sum": float(Xcat.multiply(Xcat).sum()),
            "max_abs": float(np.abs(Xcat.data).max(initial=0.0))}


def _chain_partition(part, n_classes, sigma, settings, float32, sublinear):
    from ..learners._ssvm_common import ChainProblem
    from ..learners.gdmm_chain_cluster import remote_chain_partition

    Xcat, offsets, codes = part
    data, indices, indptr = csr_arrays(Xcat)
    problem = ChainProblem(data, indices, indptr, offsets, codes.astype(np.int64),
                           Xcat.shape[1], int(n_classes))
    return remote_chain_partition(problem, sigma, settings, float32, sublinear)


def chain_part_summaries(client, parts):
    """:func:`_chain_part_summary` of every part (from
    :func:`sequence_parts_on_workers`), computed where the parts are."""
    return client.gather([client.submit(_chain_part_summary, part, pure=False)
                          for part in parts])


def chain_partitions_on_workers(client, parts, n_classes, sigma, settings, float32, sublinear):
    """One GDMM training partition per part, built where the part is
    (futures of :class:`structlearn.learners._gdmm_chain_dask.RemotePartition`);
    the list ``parts`` is emptied once they are, so that the workers keep
    the partitions only."""
    from distributed import wait

    futures = [client.submit(_chain_partition, part, n_classes, sigma, settings, float32,
                             sublinear, pure=False) for part in parts]
    wait(futures)
    parts.clear()
    return futures
