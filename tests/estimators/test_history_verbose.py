"""One history_ schema for every estimator; verbose output without any
logging set-up."""

import logging
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from structlearn.datasets import make_chain_data, make_multilabel_pairwise
from structlearn.estimators import (HISTORY_KEYS, GraphCRF, MultiLabelSSVM, SequenceCRF,
                                    SequencePerceptron, SequenceSSVM)
from structlearn.estimators.crf import image_grid_sample


def _chain():
    return make_chain_data(20, length=5, n_labels=4, n_features=10, random_state=0)


def _graphs():
    rng = np.random.default_rng(0)
    feats = [rng.normal(size=(3, 3, 2)) for _ in range(3)]
    return ([image_grid_sample(f) for f in feats],
            [(f[:, :, 0] > 0).astype(int).ravel() for f in feats])


FITS = {
    "SequenceSSVM-gdmm": lambda v: SequenceSSVM(max_iter=3, verbose=v).fit(*_chain()),
    "SequenceSSVM-bcfw": lambda v: SequenceSSVM(max_iter=3, solver="bcfw", verbose=v).fit(
        *_chain()),
    "SequenceSSVM-ssg": lambda v: SequenceSSVM(max_iter=3, solver="ssg", verbose=v).fit(
        *_chain()),
    "SequenceCRF": lambda v: SequenceCRF(max_iter=3, verbose=v).fit(*_chain()),
    "SequencePerceptron": lambda v: SequencePerceptron(max_iter=3, verbose=v).fit(*_chain()),
    "MultiLabelSSVM": lambda v: MultiLabelSSVM(max_iter=3, verbose=v).fit(
        *make_multilabel_pairwise(20, n_labels=4, n_features=5, random_state=0)[:2]),
    "GraphCRF": lambda v: GraphCRF(max_iter=3, blocks=2, verbose=v).fit(*_graphs()),
}


def _fit(name, verbose=0):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return FITS[name](verbose)


@pytest.mark.parametrize("name", FITS)
def test_every_history_record_starts_with_the_shared_keys(name):
    model = _fit(name)
    assert model.history_
    for i, rec in enumerate(model.history_, start=1):
        assert tuple(rec)[:len(HISTORY_KEYS)] == HISTORY_KEYS, rec
        assert rec["iter"] == i and rec["time"] >= 0.0
        assert isinstance(rec["objective"], float) and isinstance(rec["gap"], float)
    times = [r["time"] for r in model.history_]
    assert times == sorted(times)


@pytest.mark.parametrize("name", FITS)
def test_verbose_prints_without_logging_set_up(name, capsys, monkeypatch):
    # no handler anywhere (as in a plain script)
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    _fit(name, verbose=1)
    out = capsys.readouterr().out
    assert len(out.strip().splitlines()) >= 1, out
    _fit(name, verbose=0)
    assert capsys.readouterr().out == ""
    # the temporary handler is gone after fit
    assert not logging.getLogger("structlearn").handlers


def test_verbose_shows_the_gap_only_on_checked_passes(capsys, monkeypatch):
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    X, Y = make_multilabel_pairwise(60, n_labels=5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        MultiLabelSSVM(max_iter=4, check_every=2, tol=0.0, verbose=1,
                       random_state=0).fit(X, Y)
    lines = [ln for ln in capsys.readouterr().out.splitlines() if "iter " in ln]
    assert len(lines) == 4
    assert all("nan" not in ln for ln in lines)
    assert ["gap not checked" in ln for ln in lines] == [True, False, True, False]
    assert "rel. gap" in lines[1] and "rel. gap" in lines[3]
