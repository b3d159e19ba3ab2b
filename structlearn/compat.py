"""sklearn-crfsuite's ``CRF``, on structlearn's chain models.

:class:`CRF` takes sklearn-crfsuite's constructor, methods and attributes, so
code written for ``sklearn_crfsuite.CRF`` runs with one import changed::

    from structlearn.compat import CRF, metrics

Every training algorithm of CRFsuite is a structlearn trainer over the same
features (CRFsuite's: the ``(attribute, label)`` pairs and label bigrams seen
in training, unless ``all_possible_states`` / ``all_possible_transitions``):

=============  ==============================================================
``lbfgs``      :class:`~structlearn.estimators.SequenceCRF` (L-BFGS, OWL-QN
               with ``c1``)
``l2sgd``      SGD with L2 and CRFsuite's learning-rate calibration
               (:mod:`structlearn.learners.sgd_chain`)
``ap``         averaged perceptron
``pa``         passive-aggressive (``pa_type`` 0, 1, 2: PA, PA-I, PA-II)
``arow``       AROW
=============  ==============================================================

(the last three: :mod:`structlearn.learners.online_chain`).  Whatever the
algorithm, the model is a linear chain: ``predict`` is Viterbi and
``predict_marginals`` the forward-backward marginals of its scores, as in
CRFsuite.  A parameter that does not apply to the chosen algorithm, or a
value structlearn does not implement (a line search other than CRFsuite's
default, say), raises a ``ValueError`` naming it.
"""

import os

import joblib
import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from . import metrics
from .estimators import SequenceCRF

__all__ = ["CRF", "metrics"]

ALGORITHMS = ("lbfgs", "l2sgd", "ap", "pa", "arow")

# CRFsuite's defaults, per algorithm (its ``crfsuite -H`` help)
_DEFAULTS = {
    "lbfgs": {"c1": 0.0, "c2": 1.0, "max_iterations": None, "num_memories": 6,
              "epsilon": 1e-5, "period": 10, "delta": 1e-5, "linesearch": "MoreThuente",
              "max_linesearch": 20},
    "l2sgd": {"c2": 1.0, "max_iterations": 1000, "period": 10, "delta": 1e-6,
              "calibration_eta": 0.1, "calibration_rate": 2.0, "calibration_samples": 1000,
              "calibration_candidates": 10, "calibration_max_trials": 20},
    "ap": {"max_iterations": 100, "epsilon": 0.0},
    "pa": {"max_iterations": 100, "epsilon": 0.0, "pa_type": 1, "c": 1.0,
           "error_sensitive": True, "averaging": True},
    "arow": {"max_iterations": 100, "epsilon": 0.0, "variance": 1.0, "gamma": 1.0},
}
_ALL_TRAINING = sorted({k for d in _DEFAULTS.values() for k in d})


class _Tagger:
    """The part of python-crfsuite's ``Tagger`` that sklearn-crfsuite code reads."""

    def __init__(self, classes):
        self._labels = [str(c) for c in classes]

    def labels(self):
        return list(self._labels)


class CRF(BaseEstimator):
    """sklearn-crfsuite's ``CRF`` (same parameters, methods and attributes).

    Parameters
    ----------
    algorithm : {"lbfgs", "l2sgd", "ap", "pa", "arow"}, default=None
        ``None``: ``"lbfgs"``.
    min_freq : float, default=None
        Keep the attributes seen in at least this many tokens (0 or 1: all).
    all_possible_states, all_possible_transitions : bool, default=None
        Give every (attribute, label) pair, respectively every label bigram,
        a weight (default False: the ones seen in training).
    c1, c2 : float, default=None
        L1 (lbfgs only) and L2 (lbfgs, l2sgd) penalties of the summed
        log-likelihood (defaults 0 and 1).
    max_iterations : int, default=None
        Iterations (lbfgs: unbounded, it stops by ``delta``/``epsilon``) or
        epochs (l2sgd 1000, the others 100).
    num_memories, epsilon, period, delta, linesearch, max_linesearch :
        L-BFGS: correction pairs (6), gradient-norm tolerance (1e-5), the
        ``delta`` test's window (10) and tolerance (1e-5); structlearn's line
        search is a backtracking Armijo search (``linesearch`` other than
        CRFsuite's default ``"MoreThuente"`` or ``"Backtracking"`` raises).
        ``epsilon`` is also the stopping loss of ap, pa and arow (0), and
        ``period``/``delta`` the stopping test of l2sgd (10, 1e-6).
    calibration_eta, calibration_rate, calibration_samples, \
calibration_candidates, calibration_max_trials :
        l2sgd's learning-rate calibration (0.1, 2, 1000, 10, 20).
    pa_type : {0, 1, 2}, default=None
        pa: PA, PA-I (default) or PA-II.
    c : float, default=None
        pa: aggressiveness (1).
    error_sensitive : bool, default=None
        pa: the cost of a labeling is the square root of its wrong tokens
        (default True), else 1.
    averaging : bool, default=None
        pa: average the weights (default True).  ap always averages.
    variance, gamma : float, default=None
        arow: initial variance and regularization (1, 1).
    verbose : bool, default=False
        Log every iteration (``logging``, INFO) with the held-out scores
        when ``X_dev`` is given.
    model_filename : str, default=None
        Where ``fit`` saves the model (joblib); a ``CRF`` created with the
        name of an existing file and not fitted loads it on first use.
    keep_tempfiles : bool, default=False
        Accepted for compatibility (no temporary files are written).
    trainer_cls : None
        python-crfsuite's trainer class: not applicable (must stay None).

    Attributes
    ----------
    classes_ : list of str
        Labels, as ``tagger.labels()`` lists them.
    tagger_ : object with ``labels()``
    estimator_ : SequenceCRF
        The chain model (its ``coef_``, ``transition_``, ``vectorizer_``).
    attributes_ : list of str
        Attribute names (CRFsuite spells ``{"k": "v"}`` as ``"k:v"``).
    state_features_ : dict ``{(attribute, label): weight}`` (non-zero weights)
    transition_features_ : dict ``{(label_from, label_to): weight}``
    size_ : int
        Bytes of the model's weights.
    training_log_ : list of dict
        The trainer's per-iteration records (``history_`` of structlearn's
        estimators), held-out scores included.
    """

    def __init__(self, algorithm=None, min_freq=None, all_possible_states=None,
                 all_possible_transitions=None, c1=None, c2=None, max_iterations=None,
                 num_memories=None, epsilon=None, period=None, delta=None, linesearch=None,
                 max_linesearch=None, calibration_eta=None, calibration_rate=None,
                 calibration_samples=None, calibration_candidates=None,
                 calibration_max_trials=None, pa_type=None, c=None, error_sensitive=None,
                 averaging=None, variance=None, gamma=None, verbose=False,
                 model_filename=None, keep_tempfiles=False, trainer_cls=None):
        self.algorithm = algorithm
        self.min_freq = min_freq
        self.all_possible_states = all_possible_states
        self.all_possible_transitions = all_possible_transitions
        self.c1 = c1
        self.c2 = c2
        self.max_iterations = max_iterations
        self.num_memories = num_memories
        self.epsilon = epsilon
        self.period = period
        self.delta = delta
        self.linesearch = linesearch
        self.max_linesearch = max_linesearch
        self.calibration_eta = calibration_eta
        self.calibration_rate = calibration_rate
        self.calibration_samples = calibration_samples
        self.calibration_candidates = calibration_candidates
        self.calibration_max_trials = calibration_max_trials
        self.pa_type = pa_type
        self.c = c
        self.error_sensitive = error_sensitive
        self.averaging = averaging
        self.variance = variance
        self.gamma = gamma
        self.verbose = verbose
        self.model_filename = model_filename
        self.keep_tempfiles = keep_tempfiles
        self.trainer_cls = trainer_cls

    # ------------------------------------------------------------- training
    def _settings(self):
        """The algorithm and its parameters (CRFsuite's defaults filled in);
        ValueError naming a parameter that does not apply or is not supported."""
        algorithm = "lbfgs" if self.algorithm is None else self.algorithm
        if algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {', '.join(ALGORITHMS)}; "
                             f"got {algorithm!r}")
        if self.trainer_cls is not None:
            raise ValueError("trainer_cls (a python-crfsuite trainer) does not apply: "
                             "structlearn trains the model itself")
        defaults = _DEFAULTS[algorithm]
        given = {k: getattr(self, k) for k in _ALL_TRAINING if getattr(self, k) is not None}
        wrong = sorted(set(given) - set(defaults))
        if wrong:
            raise ValueError(f"parameter(s) {', '.join(wrong)} do not apply to algorithm "
                             f"{algorithm!r} (it takes {', '.join(sorted(defaults))})")
        settings = dict(defaults, **given)
        if algorithm == "lbfgs" and settings["linesearch"] not in ("MoreThuente",
                                                                   "Backtracking"):
            raise ValueError(f"linesearch={settings['linesearch']!r} is not implemented: "
                             "structlearn's L-BFGS uses a backtracking (Armijo) line search "
                             "(give 'MoreThuente' or 'Backtracking')")
        if algorithm == "pa" and settings["pa_type"] not in (0, 1, 2):
            raise ValueError(f"pa_type must be 0, 1 or 2; got {settings['pa_type']!r}")
        return algorithm, settings

    def fit(self, X, y, X_dev=None, y_dev=None):
        """Train on sentences of per-token feature dicts.

        Parameters
        ----------
        X : list of lists of dicts
        y : list of lists of str
        X_dev, y_dev : optional
            Held-out sentences scored after every iteration (into
            ``training_log_`` and the verbose log); give both or neither.

        Returns
        -------
        self : CRF
        """
        if (X_dev is None) != (y_dev is None):
            raise ValueError("X_dev and y_dev go together: give both or neither")
        algorithm, p = self._settings()
        min_freq = 1 if self.min_freq is None else max(int(np.ceil(self.min_freq)), 1)
        est = SequenceCRF(all_possible_states=bool(self.all_possible_states),
                          all_possible_transitions=bool(self.all_possible_transitions),
                          verbose=int(bool(self.verbose)))
        if algorithm == "lbfgs":
            est.set_params(c1=float(p["c1"]), c2=float(p["c2"]), tol=float(p["delta"]),
                           max_iter=(10**9 if p["max_iterations"] is None
                                     else int(p["max_iterations"])))
            est._validate_params()
            est._fit(X, y, X_dev, y_dev, min_freq=min_freq, lbfgs_options={
                "memory": int(p["num_memories"]), "period": int(p["period"]),
                "grad_tol": float(p["epsilon"]), "max_linesearch": int(p["max_linesearch"])})
        else:
            est._validate_params()
            est._fit(X, y, X_dev, y_dev, trainer=_trainer(algorithm, p), min_freq=min_freq)
        self.estimator_ = est
        self.algorithm_ = algorithm
        if self.model_filename is not None:
            joblib.dump(est, self.model_filename)
        return self

    # ----------------------------------------------------------- prediction
    def _model(self):
        """The fitted chain model, loaded from ``model_filename`` on first use
        when the CRF was not fitted."""
        est = getattr(self, "estimator_", None)
        if est is None and self.model_filename is not None and os.path.exists(
                self.model_filename):
            est = joblib.load(self.model_filename)
            if not isinstance(est, SequenceCRF):
                raise ValueError(f"{self.model_filename} does not hold a structlearn CRF "
                                 "model")
            self.estimator_ = est
        check_is_fitted(self, "estimator_")
        return est

    def predict(self, X):
        """Label sequences (lists of str), Viterbi."""
        return [list(map(str, s)) for s in self._model().predict(X)]

    def predict_single(self, xseq):
        """Labels (list of str) of one sentence."""
        return self.predict([xseq])[0]

    def predict_marginals(self, X):
        """Per sentence, per token, ``{label: probability}``."""
        return self._model().predict_marginals(X, as_dicts=True)

    def predict_marginals_single(self, xseq):
        """``predict_marginals`` of one sentence."""
        return self.predict_marginals([xseq])[0]

    def score(self, X, y):
        """Token accuracy (sklearn-crfsuite's ``flat_accuracy_score``)."""
        return metrics.flat_accuracy_score(y, self.predict(X))

    # ----------------------------------------------------------- inspection
    @property
    def tagger_(self):
        return _Tagger(self._model().classes_)

    @property
    def tagger(self):
        """python-crfsuite's tagger, as far as ``labels()`` goes."""
        return self.tagger_

    @property
    def classes_(self):
        return [str(c) for c in self._model().classes_]

    @property
    def attributes_(self):
        return [_crfsuite_name(n) for n in self._model().vectorizer_.feature_names_]

    @property
    def state_features_(self):
        est = self._model()
        W = est.coef_.tocoo() if hasattr(est.coef_, "tocoo") else None
        names = self.attributes_
        labels = self.classes_
        if W is None:
            k, j = np.nonzero(est.coef_)
            values = est.coef_[k, j]
        else:
            nz = W.data != 0
            k, j, values = W.row[nz], W.col[nz], W.data[nz]
        return {(names[jj], labels[kk]): float(v) for kk, jj, v in zip(k, j, values)}

    @property
    def transition_features_(self):
        est = self._model()
        labels = self.classes_
        a, b = np.nonzero(est.transition_)
        return {(labels[i], labels[j]): float(est.transition_[i, j]) for i, j in zip(a, b)}

    @property
    def size_(self):
        est = self._model()
        coef = est.coef_
        n = coef.data.nbytes + coef.indices.nbytes if hasattr(coef, "data") and hasattr(
            coef, "indices") else coef.nbytes
        return int(n + est.transition_.nbytes)

    @property
    def training_log_(self):
        return list(self._model().history_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.dict = True
        tags.target_tags.required = True
        return tags


def _crfsuite_name(name):
    """structlearn's ``"k=v"`` indicator name in CRFsuite's ``"k:v"`` spelling."""
    return name.replace("=", ":", 1)


def _trainer(algorithm, p):
    """``trainer(data, indices, indptr, offsets, codes, d, K, W_mask, T_mask,
    monitor, verbose, rng) -> (coef, trans, history)`` for the online and SGD
    algorithms."""
    from .learners.online_chain import fit_online_chain
    from .learners.sgd_chain import fit_chain_crf_sgd

    def train(data, indices, indptr, offsets, codes, d, K, W_mask, T_mask, monitor, verbose):
        rng = check_random_state(0)
        common = dict(W_mask=W_mask, T_mask=T_mask, monitor=monitor, verbose=verbose,
                      rng=rng)
        if algorithm == "l2sgd":
            return fit_chain_crf_sgd(
                data, indices, indptr, offsets, codes, d, K, c2=float(p["c2"]),
                max_iter=int(p["max_iterations"]), period=int(p["period"]),
                delta=float(p["delta"]), calibration_eta=float(p["calibration_eta"]),
                calibration_rate=float(p["calibration_rate"]),
                calibration_samples=int(p["calibration_samples"]),
                calibration_candidates=int(p["calibration_candidates"]),
                calibration_max_trials=int(p["calibration_max_trials"]), **common)
        rule = {"ap": "perceptron", "arow": "arow"}.get(algorithm) or (
            "pa", "pa1", "pa2")[int(p["pa_type"])]
        return fit_online_chain(
            data, indices, indptr, offsets, codes, d, K, rule=rule, C=float(p.get("c", 1.0)),
            error_sensitive=bool(p.get("error_sensitive", True)),
            gamma=float(p.get("gamma", 1.0)), variance=float(p.get("variance", 1.0)),
            average=bool(p.get("averaging", True)), max_iter=int(p["max_iterations"]),
            epsilon=float(p["epsilon"]), owner=f"CRF(algorithm={algorithm!r}) weights",
            **common)

    return train
