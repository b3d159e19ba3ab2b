"""Time limits: one ``time_limit`` for every MAP back-end, through the Python
API, the command line and the estimators' predict back-ends; iteration caps
that do not cut a budget short; compilation time reported apart."""

import json
import math
import os
import subprocess
import sys
import time

import numpy as np
import pytest
from numba import njit

from structlearn.__main__ import main
from structlearn.estimators import GraphCRF, MultiLabelSSVM, SequenceSSVM
from structlearn.graphs import FactorGraph, chain_graph, grid_graph, write_uai
from structlearn.inference import MapResult, available_methods, method_parameters, solve_map
from structlearn.inference._budget import DEFAULT_MAX_ITER

METHODS = [m for m in available_methods() if m != "auto"]
EXACT = ["viterbi", "tree", "brute_force", "ilp", "milp", "exact"]
LOOPY = [m for m in METHODS if m not in EXACT]
# seconds a limited run may end after its limit: one iteration, the
# decoding of the last one and the writing of the result
ALLOWANCE = 0.75


def within_budget(seconds, limit, extra=0.0):
    """A budget respected within a generous margin: these tests run on busy
    shared machines (``-n 2`` beside other jobs), so they check 3x the limit
    plus its allowance; the precise overruns are measured in
    ``benchmarks/bench_time_limit.py``."""
    return seconds <= 3.0 * (limit + ALLOWANCE + extra)


def potts_grid(n, k, seed=0):
    """n x n grid with random unaries and frustrated Potts couplings."""
    rng = np.random.default_rng(seed)
    couplings = rng.uniform(-1.0, 1.0, size=2 * n * (n - 1))
    return grid_graph(rng.normal(size=(n, n, k)), couplings[:, None, None] * np.eye(k))


def frustrated_cycle():
    """3-cycle of binary variables with repulsive couplings: the LP relaxation
    is not tight, so no LP back-end certifies the optimum."""
    rep = np.array([0.0, 1.0, 1.0, 0.0])
    return FactorGraph([2, 2, 2], unary=np.zeros((3, 2)) + [0.0, 1e-3],
                       scopes=[(0, 1), (1, 2), (0, 2)], tables=[rep, rep, rep])


def small_graph_for(method):
    if method == "viterbi":
        return chain_graph(np.zeros((3, 2)), np.eye(2))
    if method == "tree":
        return FactorGraph([2, 2, 2], unary=np.zeros((3, 2)), scopes=[(0, 1, 2)],
                           tables=[np.arange(8.0)])
    return frustrated_cycle()


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("bad, error", [(-1, ValueError), (0, ValueError), (math.nan, ValueError),
                                        (math.inf, ValueError), ("5", TypeError),
                                        (True, TypeError)])
def test_bad_time_limits_are_refused_by_every_method(method, bad, error):
    with pytest.raises(error, match="time_limit must be a positive"):
        solve_map(small_graph_for(method), method, time_limit=bad)


@pytest.mark.parametrize("method", METHODS)
def test_every_method_takes_a_time_limit_and_reports_it(method):
    graph = small_graph_for(method)  # loopy back-ends cannot certify it: they use the budget
    # load the kernels first: a first iteration that compiles them (or reads
    # them from the cache on a slow disk) cannot be interrupted and may end
    # late.  With the same budget, until a run ends in time: a run cut short
    # by compilation leaves the later stages (incumbent polish, cycle
    # tightening) to compile in the next one
    for _ in range(5):
        if not solve_map(graph, method, time_limit=0.3).over_time_limit:
            break
    res = solve_map(graph, method, time_limit=0.3)
    assert isinstance(res, MapResult)
    assert res.time_limit == 0.3 and within_budget(res.time, 0.3), res.time
    assert res.over_time_limit == (res.time > 0.3)
    if method in LOOPY:
        assert res.status in ("time_limit", "stall") and res.n_iter >= 1
    assert 0.0 <= res.compile_time <= res.time + 1e-9 or res.compile_time <= 1e-3
    assert "time_limit" in method_parameters(method)
    assert res.score == graph.score(res.labels)


@pytest.mark.parametrize("method", METHODS)
def test_unknown_parameters_get_one_message_for_every_method(method):
    with pytest.raises(TypeError) as info:
        solve_map(small_graph_for(method), method, bogus=1)
    expected = (f"method {method!r} got unexpected parameter(s): bogus; method {method!r} "
                f"takes: {', '.join(method_parameters(method))}")
    assert str(info.value) == expected


def test_exact_search_keeps_a_short_limit_on_a_dense_graph():
    """A 40-variable complete graph over 6 states has about 10^9 entries of
    short-cycle tables: the search's cycle scan shares the time limit
    (it took 10 s under a 0.3 s limit)."""
    from structlearn.graphs import complete_graph

    rng = np.random.default_rng(5)
    graph = complete_graph(rng.normal(size=(40, 6)), list(rng.normal(size=(780, 6, 6))))
    solve_map(graph, "exact", time_limit=0.3)  # kernels loaded first (see above)
    res = solve_map(graph, "exact", time_limit=0.3)
    assert res.status == "time_limit" and within_budget(res.time, 0.3)  # a node late at most
    assert res.score == graph.score(res.labels) <= res.upper_bound


def test_exact_methods_cannot_be_interrupted_and_say_so():
    graph = FactorGraph([3] * 8, unary=np.random.default_rng(0).normal(size=(8, 3)))
    res = solve_map(graph, "brute_force", time_limit=1e-9)
    assert res.status == "exact" and res.over_time_limit
    assert res.score == pytest.approx(graph.unary.reshape(8, 3).max(axis=1).sum())


@pytest.mark.parametrize("method", LOOPY)
def test_a_time_limit_lifts_the_default_iteration_cap(method):
    graph = frustrated_cycle()
    free = solve_map(graph, method, polish=0.0, stall_iter=0)
    limited = solve_map(graph, method, time_limit=0.5, polish=0.0)
    assert within_budget(limited.time, 0.5)
    if free.status == "stall":
        # converged by its own rule (fista, scm: the annealing ended at the
        # LP optimum) before the cap: the limit changes nothing
        assert free.n_iter < DEFAULT_MAX_ITER
        assert limited.status == "stall" and limited.n_iter == free.n_iter
    else:
        assert free.status == "max_iter" and free.n_iter == DEFAULT_MAX_ITER
        assert limited.status == "time_limit"
        assert limited.n_iter > DEFAULT_MAX_ITER or limited.time >= 0.4
    # an explicit max_iter still applies under a time limit
    capped = solve_map(graph, method, time_limit=30.0, max_iter=3, polish=0.0)
    assert capped.status == "max_iter" and capped.n_iter == 3


def test_psdd_runs_past_the_default_cap_under_a_time_limit():
    res = solve_map(frustrated_cycle(), "psdd", time_limit=0.5, polish=0.0)
    assert res.status == "time_limit"
    assert res.n_iter > DEFAULT_MAX_ITER
    assert 0.3 <= res.time and within_budget(res.time, 0.5)


def test_compile_time_is_measured_apart():
    @njit
    def fresh_kernel(x):  # not cached: compiled on its first call
        total = 0.0
        for i in range(x.shape[0]):
            total += x[i] * x[i]
        return total

    def solver(graph, **params):
        fresh_kernel(np.ones(3))
        labels = np.zeros(graph.n_vars, dtype=np.int64)
        return MapResult(labels, graph.score(labels), np.inf)

    graph = frustrated_cycle()
    first = solve_map(graph, solver)
    assert first.compile_time > 0.01
    assert first.compile_time <= first.time
    again = solve_map(graph, solver)
    assert again.compile_time == 0.0


def test_compile_seconds_are_counted_per_thread():
    """What another thread compiles does not count for this one (a solve in
    a worker thread keeps its own polish share)."""
    import threading

    from structlearn._compile_timer import thread_compile_seconds

    @njit
    def theirs(x):  # not cached: compiled on its first call
        return x + 1.0

    @njit
    def mine(x):
        return x * 2.0

    before = thread_compile_seconds()
    worker = threading.Thread(target=theirs, args=(1.0,))
    worker.start()
    worker.join()
    assert thread_compile_seconds() == before
    mine(1.0)
    assert thread_compile_seconds() > before


@pytest.fixture(scope="module")
def grid_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("grids") / "potts30.uai"
    write_uai(potts_grid(30, 2), path)
    # load every back-end's kernels once, so the timed runs measure solving
    for method in LOOPY:
        solve_map(potts_grid(4, 2, seed=1), method, max_iter=3)
    solve_map(potts_grid(4, 2, seed=1), "exact", enumeration_limit=0, max_nodes=3)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("method", LOOPY + ["exact"])
def test_cli_time_limit_holds_for_every_loopy_method(capsys, grid_file, method):
    limit = 1.5
    t0 = time.perf_counter()
    status = main(["map", str(grid_file), "--method", method, "--time-limit", str(limit),
                   "--no-write"])
    wall = time.perf_counter() - t0
    out, err = capsys.readouterr()
    assert status == 0, err
    record = json.loads(out)
    assert within_budget(wall, limit), record
    # "stall": the smoothed-dual solvers' own convergence (annealing done);
    # "exact": branch and bound proved the optimum
    assert record["status"] in ("time_limit", "gap", "stall", "exact"), record
    assert record["time_limit"] == limit
    assert record["wall_time"] <= wall
    assert record["n_iter"] >= 1 and record["compile_time"] >= 0.0


@pytest.mark.parametrize("method", ["psdd", "ad3"])
def test_cli_default_time_limit_is_a_cap(capsys, tmp_path, method):
    """Without --time-limit the command runs under the default limit, and
    iterative methods keep their iteration cap."""
    from structlearn.__main__ import DEFAULT_TIME_LIMIT

    path = tmp_path / "cycle.uai"
    write_uai(frustrated_cycle(), path)
    assert main(["map", str(path), "--method", method, "--no-write"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["time_limit"] == DEFAULT_TIME_LIMIT == 60
    assert record["status"] == "max_iter" and record["n_iter"] == DEFAULT_MAX_ITER
    assert main(["map", str(path), "--method", method, "--no-write", "-p", "max_iter=7"]) == 0
    assert json.loads(capsys.readouterr().out)["n_iter"] == 7
    with pytest.raises(SystemExit):
        main(["map", "--help"])
    assert "default: 60 s as a cap" in " ".join(capsys.readouterr().out.split())


def test_cli_auto_says_why(capsys, tmp_path):
    path = tmp_path / "cycle.uai"
    write_uai(frustrated_cycle(), path)
    assert main(["map", str(path), "--no-write"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["method"] == "brute_force" and "8 labelings" in record["reason"]
    assert main(["map", str(path), "--no-write", "--method", "ad3"]) == 0
    assert json.loads(capsys.readouterr().out)["reason"] == ""


@pytest.mark.slow
def test_cli_subprocess_time_limit_holds(grid_file):
    limit = 3.0
    # a first run compiles (or loads) the kernels: the budget measured below
    # is the solver's, not a cold cache's (compile_time is reported apart)
    subprocess.run([sys.executable, "-m", "structlearn", "map", str(grid_file), "--method",
                    "gdmm", "--time-limit", "0.5", "--no-write"], capture_output=True,
                   timeout=300)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "structlearn", "map", str(grid_file),
                           "--method", "gdmm", "--time-limit", str(limit), "--no-write"],
                          capture_output=True, text=True, timeout=120)
    wall = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    # the budget counts from the process's start; the exit after the JSON
    # line skips the interpreter's teardown
    assert within_budget(record["wall_time"], limit)
    assert within_budget(wall, limit, extra=1.0)
    # measured inside the same run, from a start read off /proc: its start
    # time counts clock ticks and /proc/uptime hundredths of a second
    tick = 1.0 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 0.0
    assert record["wall_time"] <= wall + tick + 0.01
    assert record["status"] in ("time_limit", "gap")


def test_cli_clock_starts_with_the_process():
    """A command-line run's clock starts before the interpreter ran the
    script's first line (the imports count against the budget)."""
    code = ("import time; first = time.perf_counter()\n"
            "from structlearn.__main__ import process_start\n"
            "start = process_start(); print(first - start, time.perf_counter() - start)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    before_first_line, age = map(float, proc.stdout.split())
    assert before_first_line >= 0.0 and 0.0 < age < 60.0


def test_cli_process_flushes_its_output_and_status(tmp_path):
    bad = tmp_path / "bad.uai"
    bad.write_text("MARKOV\n2\n2 2\n1\n2 0 1\n\n4\n1 2 3\n")  # 3 of 4 table values
    proc = subprocess.run([sys.executable, "-m", "structlearn", "map", str(bad), "--no-write"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.startswith("structlearn map: error:") and proc.stderr.endswith("\n")


def test_solve_map_hands_its_back_end_what_is_left_of_the_budget():
    seen = {}

    def slow_method(graph, *, time_limit=None):
        seen["time_limit"] = time_limit
        time.sleep(0.2)
        return solve_map(graph, "brute_force")

    graph = grid_graph(np.zeros((2, 2, 2)), np.zeros((4, 2, 2)))
    res = solve_map(graph, slow_method, time_limit=30.0)
    assert 0 < seen["time_limit"] <= 30.0
    assert res.time >= 0.2  # the whole call, not only the back-end's own clock


def _chains(n=12, length=5, seed=0):
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(length, 4)) for _ in range(n)]
    y = [rng.integers(0, 3, size=length) for _ in range(n)]
    return X, y


# short fits: the gap is not what these tests check
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_sequence_ssvm_passes_inference_params_to_its_back_end(monkeypatch):
    X, y = _chains()
    model = SequenceSSVM(max_iter=5, inference="gdmm", random_state=0,
                         inference_params={"time_limit": 5.0, "tol": 1e-4}).fit(X, y)
    seen = []
    import structlearn.inference as inference

    real = inference.solve_map

    def spy(graph, method="auto", **params):
        seen.append((method, params))
        return real(graph, method, **params)

    monkeypatch.setattr(inference, "solve_map", spy)
    pred = model.predict(X)
    assert len(pred) == len(X)
    assert seen and all(p == {"time_limit": 5.0, "tol": 1e-4} for _, p in seen)
    monkeypatch.undo()
    exact = SequenceSSVM(max_iter=5, random_state=0).fit(X, y).predict(X)
    assert all(np.array_equal(a, b) for a, b in zip(exact, SequenceSSVM(
        max_iter=5, random_state=0, inference_params={"time_limit": 1.0}).fit(X, y).predict(X)))


@pytest.mark.parametrize("params, error, pattern", [
    ({"bogus": 1}, TypeError, "method 'gdmm' got unexpected parameter"),
    ({"time_limit": -1}, ValueError, r"inference_params\['time_limit'\] must be a positive"),
    ([("time_limit", 1)], TypeError, "'inference_params' parameter of SequenceSSVM must be an instance of 'dict'"),
])
def test_bad_inference_params_are_refused_in_fit(params, error, pattern):
    X, y = _chains()
    with pytest.raises(error, match=pattern):
        SequenceSSVM(max_iter=2, inference="gdmm", inference_params=params).fit(X, y)


# short fits: the gap is not what these tests check
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_builtin_predictors_take_no_inference_params():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 5))
    Y = (rng.random((20, 3)) < 0.5).astype(int)
    with pytest.raises(ValueError, match="built-in predictor"):
        MultiLabelSSVM(max_iter=2, inference_params={"time_limit": 1.0}).fit(X, Y)
    model = MultiLabelSSVM(max_iter=5, inference="ad3",
                           inference_params={"time_limit": 2.0}).fit(X, Y)
    assert model.predict(X).shape == Y.shape


def test_graph_crf_auto_takes_only_a_time_limit():
    rng = np.random.default_rng(0)
    edges = np.array([[0, 1], [1, 2], [0, 2]])
    X = [(rng.normal(size=(3, 2)), edges) for _ in range(4)]
    y = [rng.integers(0, 2, size=3) for _ in range(4)]
    with pytest.raises(ValueError, match="only 'time_limit' applies"):
        GraphCRF(max_iter=2, inference_params={"tol": 1e-3}).fit(X, y)
    model = GraphCRF(max_iter=2, inference_params={"time_limit": 2.0}).fit(X, y)
    assert [p.shape for p in model.predict(X)] == [(3,)] * 4
