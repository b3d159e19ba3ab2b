"""Averaged structured perceptron for sequence labeling."""

from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils import check_random_state

from .._verbose import verbose_fit
from ._base import SequenceEstimatorMixin
from ._params import COMMON, POSITIVE_INT
from ._validation import check_n_classes, csr_arrays, encode_sequence_labels

__all__ = ["SequencePerceptron"]


class SequencePerceptron(SequenceEstimatorMixin, BaseEstimator):
    """Averaged structured perceptron over a first-order chain (Collins, 2002).

    A labeling ``z`` of a sequence ``x_1..x_n`` is scored as
    ``sum_t coef_[z_t] @ x_t + sum_{t>=1} transition_[z_{t-1}, z_t]`` and
    decoded with Viterbi. Training visits the sequences one at a time,
    decodes each with the current weights and, on a mistake, moves the
    weights toward the features of the true labeling and away from those of
    the decoded one. With ``average=True`` the fitted weights are the average
    of the weights after every visited sequence, which generalizes much
    better than the last weights. There are no start/end weights and no
    intercept: append a constant feature to ``X`` for per-label biases.

    The whole training loop runs in one numba kernel per epoch.

    Parameters
    ----------
    max_iter : int, default=10
        Number of passes (epochs) over the training sequences. Training
        stops early after an epoch without mistakes.
    shuffle : bool, default=True
        Visit the sequences in a new random order in every epoch.
    average : bool, default=True
        Return the averaged weights (otherwise the final weights).
    random_state : int, RandomState instance or None, default=None
        Seeds the visiting order when ``shuffle=True``. The same seed gives
        identical weights.
    verbose : int, default=0
        Log one line per epoch at INFO level when > 0 (logger
        ``structlearn.learners.online_chain``).
    n_jobs : int or None, default=None
        Jobs for prediction (``predict``, ``predict_topk``, ``score``,
        ``predict_marginals`` where it exists): chunks of samples on joblib
        threads (any joblib back-end through ``joblib.parallel_config``, e.g.
        ``"dask"``); ``None`` means 1, ``-1`` all CPUs.  Results do not depend
        on it.

    Attributes
    ----------
    coef_ : ndarray of shape (n_classes, n_features)
        Unigram weights.
    transition_ : ndarray of shape (n_classes, n_classes)
        ``transition_[a, b]`` scores label ``a`` followed by label ``b``.
    classes_ : ndarray of shape (n_classes,)
        Sorted distinct training labels; predictions are taken from it.
    n_features_in_ : int
        Number of features seen in ``fit``.
    n_iter_ : int
        Number of epochs run.
    history_ : list of dict
        One record per pass in the schema shared by every estimator
        (:data:`structlearn.estimators.HISTORY_KEYS`): ``iter`` (1-based),
        ``time`` (seconds since ``fit`` started), ``objective`` (the training
        objective, NaN where it is not computed), ``gap`` (certified duality
        gap; NaN for methods without one); ``objective`` is the epoch's token
        errors.  Then ``token_errors`` and ``sequence_errors`` (mistakes made
        while visiting that epoch's sequences, before each update).

    Examples
    --------
    >>> import numpy as np
    >>> from structlearn.estimators import SequencePerceptron
    >>> X = [np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[0.0, 1.0]])]
    >>> y = [np.array(["a", "b"]), np.array(["b"])]
    >>> model = SequencePerceptron(random_state=0).fit(X, y)
    >>> [p.tolist() for p in model.predict(X)]
    [['a', 'b'], ['b']]
    """

    _parameter_constraints = {
        "max_iter": [POSITIVE_INT],
        "shuffle": ["boolean"],
        "average": ["boolean"],
        **COMMON,
    }

    def __init__(self, *, max_iter=10, shuffle=True, average=True, random_state=None, verbose=0,
                 n_jobs=None):
        self.n_jobs = n_jobs
        self.max_iter = max_iter
        self.shuffle = shuffle
        self.average = average
        self.random_state = random_state
        self.verbose = verbose

    @verbose_fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Train on labeled sequences.

        Parameters
        ----------
        X : list of {ndarray, sparse matrix}, each of shape (n_tokens_i, n_features)
            Token features of each sequence.
        y : list of array-like, each of shape (n_tokens_i,)
            Labels of each token; any hashable, mutually comparable values.

        Returns
        -------
        self : SequencePerceptron
        """
        from ..learners.online_chain import fit_online_chain

        rng = check_random_state(self.random_state)
        Xcat, offsets, ycat = self._check_fit_input(X, y)
        classes, codes = encode_sequence_labels(ycat)
        check_n_classes(classes, minimum=2)
        coef, trans, history, _ = fit_online_chain(
            *csr_arrays(Xcat), offsets, codes, Xcat.shape[1], classes.shape[0],
            rule="perceptron", average=bool(self.average), max_iter=int(self.max_iter),
            shuffle=bool(self.shuffle), rng=rng, verbose=self.verbose,
            owner="SequencePerceptron weights")
        n_features = Xcat.shape[1]
        self.coef_ = coef
        self.transition_ = trans
        self.classes_ = classes
        self.n_features_in_ = n_features
        self.n_iter_ = len(history)
        self.history_ = history
        return self
