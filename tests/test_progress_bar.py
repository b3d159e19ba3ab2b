"""Progress bars (structlearn.set_config(progress_bar=...)): fits advance one
step per pass, predictions over many samples one per sample, the output
never changes, and a missing tqdm is a clear error."""

import re
import sys
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import structlearn
from structlearn._progress_bar import TextBar
from structlearn.datasets import make_chain_data, make_multilabel_pairwise
from structlearn.estimators import (GraphCRF, MultiLabelSSVM, SequenceCRF, SequencePerceptron,
                                    SequenceSSVM)
from structlearn.estimators.crf import image_grid_sample


def _quiet_fit(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(X, y)


@pytest.fixture(scope="module")
def chain_data():
    return make_chain_data(40, length=6, n_labels=4, n_features=15, random_state=0)


def _last_count(text, desc):
    """The last ``n`` of ``desc: n/total`` in plain-text progress output."""
    found = re.findall(re.escape(desc) + r": (\d+)/(\d+)", text)
    assert found, text
    return int(found[-1][0]), int(found[-1][1])


def test_default_draws_nothing(chain_data, capsys):
    assert structlearn.get_config()["progress_bar"] is False
    SequenceCRF(max_iter=5).fit(*chain_data)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


@pytest.mark.parametrize("make", [
    lambda: SequenceCRF(max_iter=40),
    lambda: SequenceSSVM(max_iter=6, random_state=0),
    lambda: SequencePerceptron(max_iter=4, random_state=0),
])
def test_text_bar_counts_the_passes_of_a_fit(chain_data, capsys, make):
    with structlearn.config_context(progress_bar="text"):
        model = _quiet_fit(make(), *chain_data)
    err = capsys.readouterr().err
    n, total = _last_count(err, f"{type(model).__name__}.fit")
    assert total == model.max_iter
    assert n == model.n_iter_ == len(model.history_)


def test_tqdm_bar_draws_on_stderr(chain_data, capsys):
    pytest.importorskip("tqdm")
    with structlearn.config_context(progress_bar="tqdm"):
        model = SequenceCRF(max_iter=30).fit(*chain_data)
    err = capsys.readouterr().err
    assert "SequenceCRF.fit" in err
    assert f"{model.n_iter_}/30" in err


def test_bars_do_not_change_fits_or_predictions(capsys):
    X, Y = make_multilabel_pairwise(60, n_features=8, n_labels=5, random_state=1)
    plain = _quiet_fit(MultiLabelSSVM(max_iter=5, random_state=0, inference="ad3"), X, Y)
    with structlearn.config_context(progress_bar="text"):
        barred = _quiet_fit(MultiLabelSSVM(max_iter=5, random_state=0, inference="ad3"), X, Y)
        np.testing.assert_array_equal(plain.coef_, barred.coef_)
        np.testing.assert_array_equal(plain.predict(X), barred.predict(X))
        for a, b in zip(plain.predict_topk(X, 3), barred.predict_topk(X, 3)):
            np.testing.assert_array_equal(a, b)
    err = capsys.readouterr().err
    assert _last_count(err, "MultiLabelSSVM samples") == (60, 60)


def test_graph_predictions_advance_per_sample(capsys):
    rng = np.random.default_rng(0)
    Xs, ys = [], []
    for _ in range(12):
        f = rng.normal(size=(3, 4, 2))
        Xs.append(image_grid_sample(f, edge_bin_thresholds=[1.0]))
        ys.append((f[:, :, 0] > 0).astype(int).ravel())
    model = GraphCRF(alpha=1e-2, max_iter=20).fit(Xs, ys)
    assert _same_predictions_with_a_text_bar(model, Xs, capsys, "GraphCRF samples") == (12, 12)


def _same_predictions_with_a_text_bar(model, X, capsys, label):
    """Predictions without and with the text bar agree; returns the bar's last count."""
    expected = model.predict(X)
    capsys.readouterr()
    with structlearn.config_context(progress_bar="text"):
        got = model.predict(X)
    for a, b in zip(expected, got):
        np.testing.assert_array_equal(a, b)
    return _last_count(capsys.readouterr().err, label)


def test_failed_fit_leaves_no_bar_line(capsys):
    with structlearn.config_context(progress_bar="text"), pytest.raises(ValueError):
        SequenceCRF(max_iter=5).fit([np.ones((2, 3))], [[0, 1, 2]])
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("bad", ["yes", 1, 0, "TQDM", None.__class__])
def test_unknown_settings_are_refused(bad):
    with pytest.raises(ValueError, match="progress_bar must be one of"):
        structlearn.set_config(progress_bar=bad)
    assert structlearn.get_config()["progress_bar"] is False


def test_missing_tqdm_names_the_extra(monkeypatch, chain_data, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm -> ImportError
    with pytest.raises(ImportError, match=r"structlearn\[progress\]"):
        structlearn.set_config(progress_bar="tqdm")
    # progress_bar=True falls back to plain text
    with structlearn.config_context(progress_bar=True):
        SequenceCRF(max_iter=5).fit(*chain_data)
    assert "SequenceCRF.fit: " in capsys.readouterr().err


def test_config_context_restores_the_setting():
    with structlearn.config_context(progress_bar="text"):
        assert structlearn.get_config()["progress_bar"] == "text"
        with pytest.raises(RuntimeError):
            with structlearn.config_context(progress_bar=False):
                raise RuntimeError
        assert structlearn.get_config()["progress_bar"] == "text"
    assert structlearn.get_config()["progress_bar"] is False


def test_text_bar_throttles_and_closes_with_the_last_state():
    import io

    out = io.StringIO()
    bar = TextBar(1000, "work", stream=out, every=60.0)
    for _ in range(1000):
        bar.update(1, objective=0.5)
    bar.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 2  # the first update, then the final state
    assert lines[-1].startswith("work: 1000/1000 (100%)") and "objective 0.5" in lines[-1]


@pytest.mark.parametrize("make", [lambda: SequenceCRF(max_iter=5),
                                  lambda: SequenceSSVM(max_iter=3, random_state=0)])
def test_sequence_predictions_advance_per_sequence(chain_data, capsys, make):
    X, y = chain_data
    model = _quiet_fit(make(), X, y)
    label = f"{type(model).__name__} sequences"
    assert _same_predictions_with_a_text_bar(model, X, capsys, label) == (len(X), len(X))
