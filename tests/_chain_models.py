"""A fitted many-label chain model whose ``transition_`` is replaced by mostly-zero
tables: the set-up of the tests of the sparse-table decoders."""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from structlearn.datasets import make_chain_data
from structlearn.estimators import SequenceSSVM
from structlearn.inference.chains.viterbi import sparse_transition_table


def mostly_zero_models(n_jobs, max_length, decoder, fills=(0.03, 0.3)):
    """Yield ``(X, model)``: one SSVM fitted (3 passes) on 40 sequences of 1 to
    ``max_length - 1`` tokens over 64 labels,
    its ``transition_`` set in turn to random tables of the given fills (values
    rounded to 0.1: ties), each one the sparse kernel of ``decoder`` is chosen
    for (a caller that tests the Viterbi at these few labels makes the rule
    choose it)."""
    K = 64
    X, y = make_chain_data(40, length=(1, max_length), n_labels=K, n_features=60, density=0.1,
                           random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # three passes
        model = SequenceSSVM(max_iter=3, random_state=0, n_jobs=n_jobs).fit(X, y)
    rng = np.random.default_rng(0)
    Kc = model.classes_.shape[0]
    for fill in fills:
        T = np.round(rng.normal(size=(Kc, Kc)), 1) * (rng.random((Kc, Kc)) < fill)
        assert sparse_transition_table(T, decoder) is not None
        model.transition_ = T
        yield X, model
