"""Convergence plots of fitted estimators and MAP solves.

Needs matplotlib, an optional extra (``pip install "structlearn[plot]"``);
importing this module does not import it.
"""

import numpy as np

__all__ = ["plot_convergence", "plot_map_trace"]

_X_KEYS = ("time", "iter")


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("structlearn.plot needs matplotlib, an optional extra: "
                          "pip install 'structlearn[plot]'") from exc
    return plt


def _axes(ax):
    if ax is None:
        _, ax = _pyplot().subplots()
    return ax


def _column(records, key):
    return np.array([np.nan if r.get(key) is None else float(r[key]) for r in records])


def _check_x(x):
    if x not in _X_KEYS:
        raise ValueError(f"x must be one of {', '.join(map(repr, _X_KEYS))}, got {x!r}")


def plot_convergence(estimator, *, x="time", ax=None):
    """Training curves of a fitted estimator: objective, dual value and
    certified duality gap per pass (whichever its ``history_`` holds).

    Parameters
    ----------
    estimator : fitted estimator or list of dict
        Anything with a ``history_`` in the shared schema (``iter``,
        ``time``, ``objective``, ``gap``), or such a list itself.
    x : {"time", "iter"}, default="time"
        Seconds since ``fit`` started, or the pass.
    ax : matplotlib Axes or None
        Drawn into a new figure when None.

    Returns
    -------
    ax : matplotlib Axes
        The objective (and ``dual`` where recorded) on the left axis, the
        gap (log scale, where finite) on a twin right axis.
    """
    _check_x(x)
    history = getattr(estimator, "history_", estimator)
    if not isinstance(history, (list, tuple)) or not history:
        raise ValueError("nothing to plot: the estimator has no history_ records "
                         "(is it fitted?)")
    ax = _axes(ax)
    xs = _column(history, x)
    objective = _column(history, "objective")
    shown = np.isfinite(objective)
    ax.plot(xs[shown], objective[shown], marker=".", label="objective (primal)")
    if "dual" in history[0]:
        dual = _column(history, "dual")
        ok = np.isfinite(dual)
        ax.plot(xs[ok], dual[ok], marker=".", label="dual")
    ax.set_xlabel("seconds" if x == "time" else "pass")
    ax.set_ylabel("objective")
    gap = _column(history, "gap")
    ok = np.isfinite(gap) & (gap > 0)
    if ok.any():
        twin = ax.twinx()
        twin.semilogy(xs[ok], gap[ok], color="black", linestyle="--", label="duality gap")
        twin.set_ylabel("certified duality gap")
        twin.legend(loc="upper center")
    ax.legend(loc="upper right")
    return ax


def plot_map_trace(result, *, x="time", ax=None):
    """Score of the best labeling and certified upper bound during a MAP
    solve (:class:`structlearn.inference.MapResult`).

    Parameters
    ----------
    result : MapResult
    x : {"time", "iter"}, default="time"
    ax : matplotlib Axes or None

    Returns
    -------
    ax : matplotlib Axes
    """
    _check_x(x)
    ax = _axes(ax)
    history = list(getattr(result, "history", []) or [])
    if history:
        xs = _column(history, x)
        score = _column(history, "score")
        bound = _column(history, "upper_bound")
    else:  # exact one-pass methods record no iterations
        xs = np.array([result.time if x == "time" else result.n_iter])
        score = np.array([result.score])
        bound = np.array([result.upper_bound])
    ok = np.isfinite(score)
    ax.step(xs[ok], score[ok], where="post", label="best labeling's score")
    ok = np.isfinite(bound)
    ax.step(xs[ok], bound[ok], where="post", label="certified upper bound")
    ax.set_xlabel("seconds" if x == "time" else "iteration")
    ax.set_ylabel("score")
    ax.set_title(f"{result.method}: {result.status}")
    ax.legend()
    return ax
