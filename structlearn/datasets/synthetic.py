"""Synthetic structured data: Markov chains with sparse emissions, Potts grids
and multilabel data from a pairwise (Ising-type) label model.

All generators are vectorized over sequences, samples and labels (the only
Python loops run over time steps, sequences when splitting the output, or
labels in the Gibbs sweeps), so they scale to thousands of labels.
"""

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

from ._sparse import split_csr_rows

__all__ = ["make_chain_data", "make_grid_mrf", "make_multilabel_pairwise", "make_sparse_multilabel"]

# Probability that a hidden chain stays in its current label; the rest of a
# transition row is a Dirichlet(_TRANSITION_ALPHA) draw, i.e. a few preferred
# successors per label.
_STAY_PROB = 0.5
_TRANSITION_ALPHA = 0.1

# make_multilabel_pairwise: standard deviation of the linear field x . W[:, l],
# bias calibration rounds (3 Gibbs sweeps each) and final sweeps.
_FIELD_STD = 1.5
_CALIBRATION_ROUNDS = 6
_FINAL_SWEEPS = 10


def _check_int(value, name, low=1):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return int(value)


def _check_fraction(value, name, *, low_open=False, high=1.0):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    ok = (value > 0.0 if low_open else value >= 0.0) and value <= high
    if not ok:
        interval = ("(0" if low_open else "[0") + f", {high:g}]"
        raise ValueError(f"{name} must be in {interval}, got {value}")
    return value


def _check_real(value, name):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return value


def _check_lengths(length, n_sequences, rng):
    if isinstance(length, tuple | list):
        if len(length) != 2:
            raise ValueError(f"length must be an int or a (min, max) pair, got {length!r}")
        lo = _check_int(length[0], "length[0]")
        hi = _check_int(length[1], "length[1]")
        if lo > hi:
            raise ValueError(f"length must satisfy min <= max, got {length!r}")
        return rng.randint(lo, hi + 1, size=n_sequences)
    return np.full(n_sequences, _check_int(length, "length"), dtype=np.int64)


def _sticky_transition_matrix(n_labels, rng):
    """Random row-stochastic (K, K) matrix: stay with prob 0.5, else a sparse Dirichlet row."""
    if n_labels == 1:
        return np.ones((1, 1))
    T = rng.gamma(_TRANSITION_ALPHA, size=(n_labels, n_labels))
    np.fill_diagonal(T, 0.0)
    rows = T.sum(axis=1)
    empty = rows <= 0.0  # all gammas underflowed: uniform over the other labels
    if np.any(empty):
        T[empty] = 1.0 - np.eye(n_labels)[empty]
        rows = T.sum(axis=1)
    T *= (1.0 - _STAY_PROB) / rows[:, None]
    np.fill_diagonal(T, _STAY_PROB)
    return T


def make_chain_data(
    n_sequences=100,
    *,
    length=10,
    n_labels=5,
    n_features=50,
    density=0.1,
    noise=0.2,
    random_state=None,
):
    """Sequences from a hidden Markov process with sparse binary emissions.

    Labels follow a first-order Markov chain with a uniform start
    distribution and a "sticky" random transition matrix: a label repeats
    with probability 0.5, otherwise it moves to a successor drawn from a
    sparse Dirichlet(0.1) row (a few likely successors per label). Each
    label owns a random signature of ``max(1, round(density * n_features))``
    features (drawn with replacement, so a few may coincide); a token emits
    its label's signature with each feature independently replaced, with
    probability ``noise``, by a uniformly random feature. Feature values are
    1.0.

    Parameters
    ----------
    n_sequences : int, default=100
        Number of sequences.
    length : int or (int, int), default=10
        Length of every sequence, or inclusive (min, max) bounds of
        uniformly drawn lengths.
    n_labels : int, default=5
        Number of labels K. K in the thousands is cheap (one K x K
        transition matrix, everything else vectorized).
    n_features : int, default=50
        Number of features.
    density : float in (0, 1], default=0.1
        Fraction of the features in each label's signature (number of active
        features per token, before noise).
    noise : float in [0, 1], default=0.2
        Probability that an emitted feature is replaced by a random one.
        ``noise=1`` makes the features carry no information.
    random_state : int, RandomState or None, default=None
        Seed for reproducible output.

    Returns
    -------
    X : list of scipy.sparse.csr_matrix, each of shape (n_tokens_i, n_features)
        Binary float64 features per sequence.
    y : list of ndarray of shape (n_tokens_i,), dtype int64
        Labels in ``[0, n_labels)``.
    """
    n_sequences = _check_int(n_sequences, "n_sequences")
    n_labels = _check_int(n_labels, "n_labels")
    n_features = _check_int(n_features, "n_features")
    density = _check_fraction(density, "density", low_open=True)
    noise = _check_fraction(noise, "noise")
    rng = check_random_state(random_state)
    lengths = _check_lengths(length, n_sequences, rng).astype(np.int64)

    T = _sticky_transition_matrix(n_labels, rng)
    # inverse-CDF sampling of all rows at once: row r occupies [r, r+1) of cdf_flat
    cdf = np.cumsum(T, axis=1)
    cdf[:, -1] = 1.0
    cdf_flat = (cdf + np.arange(n_labels)[:, None]).ravel()

    max_len = int(lengths.max())
    labels = np.empty((n_sequences, max_len), dtype=np.int64)
    labels[:, 0] = rng.randint(0, n_labels, size=n_sequences)
    for t in range(1, max_len):
        prev = labels[:, t - 1]
        u = prev + rng.random_sample(n_sequences)
        nxt = np.searchsorted(cdf_flat, u, side="right") - prev * n_labels
        labels[:, t] = np.minimum(nxt, n_labels - 1)
    mask = np.arange(max_len)[None, :] < lengths[:, None]
    flat_labels = labels[mask]  # row-major: sequence by sequence
    n_tokens = flat_labels.size

    n_active = max(1, int(round(density * n_features)))
    signatures = rng.randint(0, n_features, size=(n_labels, n_active))
    cols = signatures[flat_labels]
    replace = rng.random_sample(cols.shape) < noise
    cols[replace] = rng.randint(0, n_features, size=int(replace.sum()))
    rows = np.repeat(np.arange(n_tokens), n_active)
    Xall = sp.csr_matrix(
        (np.ones(rows.size), (rows, cols.ravel())), shape=(n_tokens, n_features)
    )
    Xall.sum_duplicates()
    Xall.data[:] = 1.0
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    X = split_csr_rows(Xall, offsets)
    y = np.split(flat_labels, offsets[1:-1])
    return X, y


def make_grid_mrf(height, width, n_states, *, coupling=1.0, unary_scale=1.0, random_state=None):
    """Potts-like grid MRF with random unary scores.

    Parameters
    ----------
    height, width : int
        Grid size (``height * width`` variables, row-major, 4-neighbourhood).
    n_states : int
        Number of states K of every variable.
    coupling : float, default=1.0
        Score ``coupling`` for equal neighbouring states (one shared table
        ``coupling * eye(K)``); negative values favour different states.
    unary_scale : float, default=1.0
        Standard deviation of the i.i.d. Gaussian unary scores.
    random_state : int, RandomState or None, default=None
        Seed for reproducible output.

    Returns
    -------
    graph : structlearn.graphs.FactorGraph
        Built by :func:`structlearn.graphs.grid_graph`.
    """
    from ..graphs import grid_graph

    height = _check_int(height, "height")
    width = _check_int(width, "width")
    n_states = _check_int(n_states, "n_states")
    coupling = _check_real(coupling, "coupling")
    unary_scale = _check_real(unary_scale, "unary_scale")
    if unary_scale < 0:
        raise ValueError(f"unary_scale must be >= 0, got {unary_scale}")
    rng = check_random_state(random_state)
    unary = unary_scale * rng.standard_normal((height, width, n_states))
    pairwise = coupling * np.eye(n_states)
    return grid_graph(unary, pairwise)


def _logit(p):
    return np.log(p) - np.log1p(-p)


def _gibbs_sweeps(Y, field_x, bias, J, n_sweeps, rng):
    """In-place systematic-scan Gibbs sweeps of P(y | x) ~ exp(y.(f(x)+b) + sum_{l<m} J_lm y_l y_m).

    The coupling field ``Y @ J`` is kept up to date incrementally: a sweep
    costs O(n_samples * n_labels) plus O(n_labels) per flipped bit.
    """
    n, L = Y.shape
    F = Y @ J  # J symmetric with zero diagonal
    for _ in range(n_sweeps):
        u = rng.random_sample((n, L))
        for l in range(L):
            a = field_x[:, l] + bias[l] + F[:, l]
            new = (u[:, l] * (1.0 + np.exp(-a)) < 1.0).astype(Y.dtype)  # u < sigmoid(a)
            flip = np.flatnonzero(new != Y[:, l])
            if flip.size:
                delta = new[flip] - Y[flip, l]
                Y[flip, l] = new[flip]
                F[flip] += delta[:, None] * J[l]
    return Y


def make_multilabel_pairwise(
    n_samples=100,
    *,
    n_features=20,
    n_labels=5,
    n_active=2,
    density=0.3,
    random_state=None,
    return_params=False,
):
    """Multilabel data with correlated labels from a pairwise label model.

    Features are i.i.d. standard normal. Labels are drawn by Gibbs sampling
    from the conditional Ising-type model

    ``P(y | x) ~ exp(sum_l y_l (x . W[:, l] + b_l) + sum_{l<m} J_lm y_l y_m)``

    with dense Gaussian weights ``W`` (the linear field has standard
    deviation 1.5), and a random interaction graph on the labels: each pair
    interacts with probability ``density``; an interaction is attractive
    (co-occurrence) or repulsive (exclusion) with equal probability, with a
    magnitude uniform in [1, 2] divided by the square root of the expected
    number of active neighbours when that exceeds 1 (so the coupling field
    stays O(1) and the model stays away from an all-on phase as
    ``n_labels`` grows). Target label frequencies are random (a
    Dirichlet(2) split of ``n_active`` over the labels, capped at 0.9) and
    the biases ``b`` are calibrated to them during burn-in, so the mean
    number of active labels per sample is close to ``n_active``.

    Parameters
    ----------
    n_samples : int, default=100
        Number of samples.
    n_features : int, default=20
        Number of features.
    n_labels : int, default=5
        Number of labels L (L = 200 takes well under a second).
    n_active : float, default=2
        Mean number of active labels per sample, in (0, n_labels).
    density : float in [0, 1], default=0.3
        Probability that a label pair interacts. 0 gives labels that are
        independent given x.
    random_state : int, RandomState or None, default=None
        Seed for reproducible output.
    return_params : bool, default=False
        Also return the model parameters.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64
    Y : ndarray of shape (n_samples, n_labels), int64 0/1
    params : dict, only if ``return_params``
        ``W`` (n_features, n_labels), ``bias`` (n_labels,), ``J``
        (n_labels, n_labels) symmetric with zero diagonal, ``edges``
        (n_edges, 2) label pairs with nonzero interaction.
    """
    n_samples = _check_int(n_samples, "n_samples")
    n_features = _check_int(n_features, "n_features")
    n_labels = _check_int(n_labels, "n_labels")
    density = _check_fraction(density, "density")
    n_active = _check_real(n_active, "n_active")
    if not 0 < n_active < n_labels:
        raise ValueError(f"n_active must be in (0, n_labels={n_labels}), got {n_active}")
    rng = check_random_state(random_state)

    X = rng.standard_normal((n_samples, n_features))
    W = rng.standard_normal((n_features, n_labels)) * (_FIELD_STD / np.sqrt(n_features))

    share = rng.dirichlet(np.full(n_labels, 2.0))
    target = np.clip(n_active * share, 1e-3, 0.9)
    target *= n_active / target.sum()
    target = np.clip(target, 1e-3, 0.9)

    iu, ju = np.triu_indices(n_labels, k=1)
    on = rng.random_sample(iu.size) < density
    sign = np.where(rng.random_sample(iu.size) < 0.5, 1.0, -1.0)
    expected_active_nbrs = density * (n_labels - 1) * n_active / n_labels
    magnitude = rng.uniform(1.0, 2.0, size=iu.size) / np.sqrt(max(1.0, expected_active_nbrs))
    J = np.zeros((n_labels, n_labels))
    J[iu[on], ju[on]] = (sign * magnitude)[on]
    J += J.T
    edges = np.stack([iu[on], ju[on]], axis=1)

    field_x = X @ W
    # start: probit approximation of E[sigmoid(b + N(0, 1.5^2))] = target,
    # minus the mean coupling field; then calibrate on the Gibbs samples
    bias = _logit(target) * np.sqrt(1.0 + np.pi * _FIELD_STD**2 / 8.0) - J @ target
    Y = (rng.random_sample((n_samples, n_labels)) < target).astype(np.float64)
    for _ in range(_CALIBRATION_ROUNDS):
        _gibbs_sweeps(Y, field_x, bias, J, 3, rng)
        freq = (Y.sum(axis=0) + target) / (n_samples + 1.0)
        bias += np.clip(_logit(target) - _logit(freq), -1.0, 1.0)
    _gibbs_sweeps(Y, field_x, bias, J, _FINAL_SWEEPS, rng)
    Y = Y.astype(np.int64)
    if return_params:
        return X, Y, {"W": W, "bias": bias, "J": J, "edges": edges}
    return X, Y


def make_sparse_multilabel(n_samples=1000, *, n_labels=100, n_features=500, labels_per_sample=5.0,
                           words_per_label=15, word_rate=0.25, background=8.0, group_size=20,
                           random_state=None):
    """Sparse binary bag-of-words data with many correlated labels.

    Shaped like multilabel text benchmarks (bibtex, delicious): label
    frequencies fall off like ``rank ** -0.8``; labels come in groups of
    ``group_size`` and each sample draws three groups whose labels are six
    times as likely as the others (so labels co-occur); the mean number of
    labels per sample is ``labels_per_sample`` (up to the cap of 0.95 per
    label).  Every label has ``words_per_label`` indicative features, each
    switched on with probability ``word_rate`` in a sample carrying the
    label, plus Poisson(``background``) random words per sample.

    Parameters
    ----------
    n_samples, n_labels, n_features : int
    labels_per_sample : float
    words_per_label : int
    word_rate : float in (0, 1]
    background : float >= 0
    group_size : int
    random_state : int, RandomState instance or None

    Returns
    -------
    X : csr_matrix of float64, shape (n_samples, n_features)
        0/1 entries.
    Y : ndarray of int64, shape (n_samples, n_labels)
    """
    n_samples = _check_int(n_samples, "n_samples")
    n_labels = _check_int(n_labels, "n_labels")
    n_features = _check_int(n_features, "n_features")
    words_per_label = _check_int(words_per_label, "words_per_label")
    group_size = _check_int(group_size, "group_size")
    word_rate = _check_fraction(word_rate, "word_rate", low_open=True)
    labels_per_sample = _check_real(labels_per_sample, "labels_per_sample")
    background = _check_real(background, "background")
    if labels_per_sample <= 0 or background < 0:
        raise ValueError("labels_per_sample must be positive and background non-negative")
    rng = check_random_state(random_state)
    n_groups = max(1, n_labels // group_size)
    freq = 1.0 / np.arange(1, n_labels + 1) ** 0.8
    group = rng.randint(0, n_groups, size=n_labels)
    group_rate = rng.rand(n_groups) + 1e-3
    picks = np.stack([rng.choice(n_groups, size=min(3, n_groups), replace=False,
                                 p=group_rate / group_rate.sum()) for _ in range(n_samples)])
    boost = np.where((group[None, :, None] == picks[:, None, :]).any(axis=2), 6.0, 0.6)
    p = freq[None, :] * boost
    p *= labels_per_sample / p.sum(axis=1, keepdims=True)
    Y = (rng.rand(n_samples, n_labels) < np.minimum(p, 0.95)).astype(np.int64)
    words = rng.randint(0, n_features, size=(n_labels, words_per_label))
    rows, cols = np.nonzero(Y)
    w_rows = np.repeat(rows, words_per_label)
    w_cols = words[cols].ravel()
    keep = rng.rand(w_rows.size) < word_rate
    n_bg = rng.poisson(background, size=n_samples)
    b_rows = np.repeat(np.arange(n_samples), n_bg)
    b_cols = rng.randint(0, n_features, size=b_rows.size)
    r = np.concatenate([w_rows[keep], b_rows])
    c = np.concatenate([w_cols[keep], b_cols])
    X = sp.csr_matrix((np.ones(r.size), (r, c)), shape=(n_samples, n_features))
    X.data[:] = 1.0  # repeated words stay binary
    return X, Y
