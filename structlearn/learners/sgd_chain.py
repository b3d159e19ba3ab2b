"""Linear-chain CRF by stochastic gradient descent with L2 regularization
(CRFsuite's ``l2sgd``): the epochs and the learning-rate calibration around
:func:`~structlearn.learners._sgd_chain_kernels.sgd_chain_epoch`.

Calibration (as CRFsuite's): on the first ``calibration_samples`` sequences,
one epoch from zero weights is run for each candidate initial rate ``eta``,
starting at ``calibration_eta`` and multiplied by ``calibration_rate`` while
the sample objective improves on that of the zero weights (divided by it
when the first one does not), at most ``calibration_candidates`` improving
candidates and ``calibration_max_trials`` trials; the best ``eta`` sets
``t0 = 1 / (lam eta)``.
"""

import logging
import time

import numpy as np

from .._memory import check_memory
from .._progress_bar import progress_tick
from ._online_chain_kernels import TrainingChains
from ._sgd_chain_kernels import SGDWeights, sgd_chain_epoch
from .online_chain import _mask

__all__ = ["fit_chain_crf_sgd"]

logger = logging.getLogger(__name__)


class _Epochs:
    """Scratch and state of SGD epochs over one data set."""

    def __init__(self, data, indices, indptr, offsets, codes, n_features, n_labels, lam,
                 W_mask, T_mask):
        self.chains = TrainingChains(data, indices, indptr, offsets, codes)
        self.masks = (_mask(W_mask), _mask(T_mask))
        self.lam = lam
        max_len = int(np.diff(offsets).max())
        self.unary = np.empty((max_len, n_labels))
        self.node = np.empty((max_len, n_labels))
        self.edges = np.empty((n_labels, n_labels))
        self.shape = (n_features, n_labels)
        self.reset()

    def reset(self):
        self.state = SGDWeights(np.zeros(self.shape), np.zeros((self.shape[1],) * 2),
                                  np.array([1.0, 0.0]), *self.masks)

    def run(self, order, t0):
        """One epoch; returns the objective CRFsuite reports: the summed
        losses plus ``(lam / 2) n ||w||^2`` at the epoch's end."""
        loss = sgd_chain_epoch(self.chains, order, self.state, self.lam, t0, self.unary,
                               self.node, self.edges)
        V, T, scale_t = self.state[:3]
        norm2 = scale_t[0] ** 2 * (np.vdot(V, V) + np.vdot(T, T))
        return float(loss + 0.5 * self.lam * order.shape[0] * norm2)

    def steps(self):
        """Steps taken so far."""
        return self.state.scale_t[1]

    def weights(self):
        """``(coef (n_labels, n_features), trans)``."""
        V, T, scale_t = self.state[:3]
        return np.ascontiguousarray((scale_t[0] * V).T), scale_t[0] * T


def _calibrate(epochs, n_seq, eta0, rate, samples, candidates, max_trials):
    """Initial learning rate by trial epochs on the first ``samples`` sequences:
    up from ``eta0`` while the trials improve on the zero weights, then down
    from ``eta0 / rate`` until ``candidates`` improving trials (or
    ``max_trials`` in all); the best improving ``eta`` (``eta0`` if none)."""
    order = np.arange(min(int(samples), n_seq), dtype=np.int64)
    # objective of the zero weights: every labeling equally likely
    init = float(np.sum(np.diff(epochs.chains.offsets)[order]) * np.log(epochs.shape[1]))
    best_eta, best = eta0, np.inf
    eta, left, decreasing, trials = eta0, candidates, False, 0
    while left > 0 or not decreasing:
        epochs.reset()
        value = epochs.run(order, 1.0 / (epochs.lam * eta))
        trials += 1
        ok = bool(np.isfinite(value) and value < init)
        if ok:
            left -= 1
            if value < best:
                best, best_eta = value, eta
        if not decreasing:
            if ok and left > 0:
                eta *= rate
            else:
                decreasing, left, eta = True, candidates, eta0 / rate
        else:
            eta /= rate
        if trials >= max_trials:
            break
    epochs.reset()
    return best_eta, trials


def fit_chain_crf_sgd(data, indices, indptr, offsets, codes, n_features, n_labels, *, c2=1.0,
                      max_iter=1000, period=10, delta=1e-6, calibration_eta=0.1,
                      calibration_rate=2.0, calibration_samples=1000,
                      calibration_candidates=10, calibration_max_trials=20, shuffle=True,
                      rng=None, W_mask=None, T_mask=None, monitor=None, verbose=0):
    """Fit a linear-chain CRF by L2-regularized SGD (see the module notes).

    Parameters
    ----------
    data, indices, indptr, offsets, codes, n_features, n_labels :
        As :func:`~structlearn.learners.online_chain.fit_online_chain`.
    c2 : float, default=1.0
        L2 penalty of the summed log-likelihood (``lam = 2 c2 / n_seq``); > 0.
    max_iter : int, default=1000
        Epochs at most.
    period, delta : int, float
        Stop when the objective improved by less than ``delta`` (relative)
        over the last ``period`` epochs.
    calibration_* :
        See the module notes.
    shuffle : bool, default=True
        Visit the sequences in a new random order every epoch (CRFsuite
        shuffles too).
    rng : numpy RandomState, optional
    W_mask, T_mask : bool arrays, optional
        The weights that exist
        (:func:`~structlearn.learners.online_chain.observed_weights`).
    monitor : callable or None
        ``monitor(W, T) -> dict`` after every epoch, merged into its record.
    verbose : int, default=0

    Returns
    -------
    coef : ndarray (n_labels, n_features)
    trans : ndarray (n_labels, n_labels)
    history : list of dict
        Per epoch ``iter``, ``time``, ``objective``, ``gap`` (NaN), ``eta``.
    converged : bool
    """
    n_seq = offsets.shape[0] - 1
    if not c2 > 0:
        raise ValueError(f"l2sgd needs c2 > 0 (its learning rate is 1 / (lam (t0 + t)), "
                         f"lam = 2 c2 / n_sequences); got c2={c2}")
    check_memory(8 * n_features * n_labels, f"SGD weights over {n_features} features and "
                 f"{n_labels} classes", "reduce the feature space")
    epochs = _Epochs(data, indices, indptr, offsets, codes, n_features, n_labels,
                     2.0 * float(c2) / n_seq, W_mask, T_mask)
    start = time.perf_counter()
    eta, trials = _calibrate(epochs, n_seq, float(calibration_eta), float(calibration_rate),
                             calibration_samples, int(calibration_candidates),
                             int(calibration_max_trials))
    t0 = 1.0 / (epochs.lam * eta)
    if verbose:
        logger.info("l2sgd calibration: eta %.6g after %d trials (t0 %.6g)", eta, trials, t0)
    history, converged = [], False
    for epoch in range(int(max_iter)):
        order = (rng.permutation(n_seq) if shuffle else np.arange(n_seq)).astype(np.int64)
        value = epochs.run(order, t0)
        if not np.isfinite(value):
            raise FloatingPointError(
                f"l2sgd diverged at epoch {epoch + 1} (objective {value}); lower "
                f"calibration_eta (now {calibration_eta}) or raise c2")
        rec = {"iter": epoch + 1, "time": time.perf_counter() - start, "objective": value,
               "gap": np.nan, "eta": 1.0 / (epochs.lam * (t0 + epochs.steps()))}
        if monitor is not None:
            rec.update(monitor(*epochs.weights()))
        history.append(rec)
        progress_tick(rec)
        if verbose:
            extra = "".join(f" {k} {v:.4f}" for k, v in rec.items() if k.startswith("dev_"))
            logger.info("l2sgd epoch %d: objective %.6f time %.2fs%s", rec["iter"], value,
                        rec["time"], extra)
        if len(history) > period:
            old = history[-1 - period]["objective"]
            if (old - value) / max(abs(value), 1e-300) < delta:
                converged = True
                break
    coef, trans = epochs.weights()
    return coef, trans, history, converged
