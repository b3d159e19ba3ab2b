"""structlearn.plot draws what the histories hold, and says which extra to
install when matplotlib is missing."""

import sys
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from structlearn.datasets import make_chain_data  # noqa: E402
from structlearn.estimators import SequenceCRF, SequenceSSVM  # noqa: E402
from structlearn.graphs import grid_graph  # noqa: E402
from structlearn.inference import solve_map  # noqa: E402
from structlearn.plot import plot_convergence, plot_map_trace  # noqa: E402


def _ssvm():
    X, y = make_chain_data(20, length=5, n_labels=4, n_features=10, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return SequenceSSVM(max_iter=8, check_every=1).fit(X, y), X, y


def test_convergence_plot_of_an_ssvm_has_primal_dual_and_gap(tmp_path):
    model, _, _ = _ssvm()
    ax = plot_convergence(model, x="iter")
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels == ["objective (primal)", "dual"]
    primal = ax.get_lines()[0].get_ydata()
    assert np.allclose(primal, [r["primal"] for r in model.history_])
    gap_axis = [a for a in ax.figure.axes if a is not ax][0]
    assert gap_axis.get_yscale() == "log"
    ax.figure.savefig(tmp_path / "ssvm.png")
    assert (tmp_path / "ssvm.png").stat().st_size > 0


def test_convergence_plot_of_a_crf_and_of_a_history_list():
    X, y = make_chain_data(20, length=5, n_labels=4, n_features=10, random_state=0)
    crf = SequenceCRF(max_iter=5).fit(X, y)
    ax = plot_convergence(crf.history_, x="time")
    assert len(ax.get_lines()) == 1 and len(ax.figure.axes) == 1  # no gap for a CRF


def test_map_trace(tmp_path):
    rng = np.random.default_rng(0)
    graph = grid_graph(rng.normal(size=(6, 6, 3)), rng.uniform(-1, 1, size=(60, 1, 1)) * np.eye(3))
    res = solve_map(graph, "ad3", max_iter=30)
    ax = plot_map_trace(res, x="iter")
    score, bound = (line.get_ydata() for line in ax.get_lines())
    assert np.all(bound >= score - 1e-9)
    # an exact one-pass method records no iterations: one point each
    exact = solve_map(grid_graph(rng.normal(size=(2, 2, 2)), np.eye(2)), "brute_force")
    assert len(plot_map_trace(exact).get_lines()) == 2
    ax.figure.savefig(tmp_path / "map.png")


def test_bad_input():
    with pytest.raises(ValueError, match="x must be one of"):
        plot_convergence(_ssvm()[0], x="epoch")
    with pytest.raises(ValueError, match="no history_"):
        plot_convergence(SequenceCRF())


def test_missing_matplotlib_names_the_extra(monkeypatch):
    import structlearn.plot as plot

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"structlearn\[plot\]"):
        plot._pyplot()
