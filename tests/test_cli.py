"""The command line: ``python -m structlearn map`` and ``demo``."""

import json
import re
import subprocess
import sys
import types

import numpy as np
import pytest
from _graphgen import all_labelings, random_weighted_csp

import structlearn
from structlearn.__main__ import main
from structlearn.graphs import (
    FactorGraph,
    chain_graph,
    read_uai,
    read_uai_solution,
    write_uai,
)
from structlearn.inference import MapResult, registry, solve_map
from structlearn.inference._registry_base import Method
from conftest import uai_instance

JSON_KEYS = {"method", "score", "upper_bound", "gap", "time", "n_vars", "n_factors", "status"}


def brute_force_best(graph):
    return graph.score_many(all_labelings(graph)).max()


@pytest.fixture
def chain_file(tmp_path):
    rng = np.random.default_rng(0)
    graph = chain_graph(rng.normal(size=(6, 3)), [rng.normal(size=(3, 3)) for _ in range(5)])
    path = tmp_path / "chain.uai"
    write_uai(graph, path)
    return path, read_uai(path)


def run_main(capsys, argv):
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def assert_one_line_error(status, out, err, expected_status, pattern):
    assert status == expected_status
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert lines[0].startswith("structlearn map: error: ")
    assert re.search(pattern, lines[0]), lines[0]


def test_map_on_a_chain_writes_solution_and_json(capsys, chain_file, tmp_path):
    path, graph = chain_file
    out_path = tmp_path / "sol.MAP"
    status, out, err = run_main(capsys, ["map", path, "--out", out_path])
    assert status == 0, err
    lines = out.strip().splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert JSON_KEYS <= set(record)
    assert record["method"] == "viterbi"  # auto picks the chain method
    assert record["n_vars"] == 6 and record["n_factors"] == 5
    assert record["status"] == "exact" and record["gap"] == 0.0
    assert record["score"] == pytest.approx(brute_force_best(graph))
    assert record["upper_bound"] == pytest.approx(record["score"])
    labels = read_uai_solution(out_path)
    assert graph.score(labels) == pytest.approx(record["score"])
    assert record["solution"] == str(out_path)


def test_map_default_output_is_in_the_current_folder(capsys, chain_file, tmp_path, monkeypatch):
    path, graph = chain_file
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    status, out, err = run_main(capsys, ["map", path, "--method", "brute_force"])
    assert status == 0, err
    labels = read_uai_solution(work / "chain.uai.MAP")
    assert graph.score(labels) == pytest.approx(json.loads(out)["score"])
    status, out, err = run_main(capsys, ["map", path, "--no-write"])
    assert status == 0 and json.loads(out)["solution"] is None


def test_map_with_evidence(capsys, chain_file, tmp_path):
    path, graph = chain_file
    evid = tmp_path / "chain.uai.evid"
    evid.write_text("2 0 2 5 1\n")
    out_path = tmp_path / "e.MAP"
    status, out, err = run_main(capsys, ["map", path, "--evid", evid, "--out", out_path])
    assert status == 0, err
    labels = read_uai_solution(out_path)
    assert labels[0] == 2 and labels[5] == 1
    best = brute_force_best(graph.clamp({0: 2, 5: 1}))
    assert json.loads(out)["score"] == pytest.approx(best)


def test_time_limit_reaches_the_method_through_the_registry(capsys, chain_file, monkeypatch):
    path, graph = chain_file
    seen = {}

    def timed_solver(graph, max_iter=10, **params):  # no time_limit in the signature
        seen.update(params, max_iter=max_iter)
        labels = np.zeros(graph.n_vars, dtype=np.int64)
        return MapResult(labels, graph.score(labels), np.inf, n_iter=max_iter, converged=False,
                         status="time_limit")

    monkeypatch.setitem(registry._METHODS, "cli_timed",
                        Method(timed_solver, False, ("max_iter", "time_limit")))
    argv = ["map", path, "--no-write", "--method", "cli_timed", "--time-limit", "2.5",
            "-p", "max_iter=7"]
    status, out, err = run_main(capsys, argv)
    assert status == 0, err
    # the budget counts from the start of the command: what is left of it
    assert seen["max_iter"] == 7 and 1.5 < seen["time_limit"] <= 2.5
    record = json.loads(out)
    assert record["upper_bound"] is None and record["gap"] is None  # +inf -> null
    assert record["status"] == "time_limit" and record["n_iter"] == 7
    assert record["time_limit"] == 2.5 and record["over_time_limit"] is False
    # exact methods take the limit too
    status, out, err = run_main(capsys, ["map", path, "--no-write", "--time-limit", "1"])
    assert status == 0 and err == ""
    record = json.loads(out)
    assert record["status"] == "exact" and record["over_time_limit"] is False


def test_time_limit_as_a_parameter_is_refused(capsys, chain_file):
    path, _ = chain_file
    status, out, err = run_main(capsys, ["map", path, "--no-write", "-p", "time_limit=3"])
    assert_one_line_error(status, out, err, 2, "--time-limit")


@pytest.mark.parametrize("method", ["viterbi", "brute_force", "gdmm", "trn"])
def test_parameters_a_method_does_not_take_are_named(capsys, chain_file, method):
    path, _ = chain_file
    status, out, err = run_main(capsys, ["map", path, "--no-write", "--method", method,
                                         "-p", "bogus=1"])
    assert_one_line_error(status, out, err, 2,
                          rf"method '{method}' got unexpected parameter\(s\): bogus; "
                          rf"method '{method}' takes: .*time_limit")


def test_loopy_graph_follows_solve_map(capsys, tmp_path):
    # a 3-cycle: whatever solve_map(method="auto") does, the command line does too
    rng = np.random.default_rng(1)
    graph = FactorGraph([2, 2, 2], unary=rng.normal(size=(3, 2)),
                        scopes=[(0, 1), (1, 2), (0, 2)], tables=list(rng.normal(size=(3, 4))))
    path = tmp_path / "cycle.uai"
    write_uai(graph, path)
    try:
        expected = solve_map(read_uai(path))
    except ValueError as exc:
        status, out, err = run_main(capsys, ["map", path, "--no-write"])
        assert_one_line_error(status, out, err, 2, "loopy")
        assert " ".join(str(exc).split()) in err
    else:
        status, out, err = run_main(capsys, ["map", path, "--no-write"])
        assert status == 0
        assert json.loads(out)["score"] <= expected.upper_bound + 1e-9


@pytest.mark.parametrize(
    "text, pattern",
    [
        ("MARKOV 2 2 2 1 2 0 1 4 1 2 -3 4",
         r"bad\.uai: negative potential -3 .*\(line 1, column 28\)"),
        ("MARKOV 2 2 2 1 2 0 1 4 1 2 3", r"bad\.uai: file ends before the table|runs past"),
        ("MARKOV 2 2 2 1 2 0 1 3 1 2 3", r"bad\.uai: table of factor 0 has 3 entries"),
        ("BAYESIAN 1 2 0", r"bad\.uai: unknown network type 'BAYESIAN'"),
        ("MARKOV 2 2 2 1 2 0 x 4 1 1 1 1", r"bad\.uai: non-numeric token 'x'"),
    ],
)
def test_bad_files_exit_1_with_one_line(capsys, tmp_path, text, pattern):
    path = tmp_path / "bad.uai"
    path.write_text(text)
    status, out, err = run_main(capsys, ["map", path, "--no-write"])
    assert_one_line_error(status, out, err, 1, pattern)


def test_missing_files_exit_1(capsys, chain_file, tmp_path):
    status, out, err = run_main(capsys, ["map", tmp_path / "nope.uai"])
    assert_one_line_error(status, out, err, 1, r"nope\.uai: No such file")
    path, _ = chain_file
    status, out, err = run_main(capsys, ["map", path, "--evid", tmp_path / "nope.evid"])
    assert_one_line_error(status, out, err, 1, r"nope\.evid")
    status, out, err = run_main(capsys, ["map", path, "--out", tmp_path / "no" / "dir" / "x.MAP"])
    assert_one_line_error(status, out, err, 1, "cannot write the solution")


def test_usage_errors_exit_2(capsys, chain_file, tmp_path):
    path, _ = chain_file
    status, out, err = run_main(capsys, ["map", path, "--method", "nope"])
    assert_one_line_error(
        status, out, err, 2, r"unknown MAP method 'nope'; available methods: .*viterbi"
    )
    for bad in ["-1", "0", "nan", "inf"]:
        status, out, err = run_main(capsys, ["map", path, "--time-limit", bad])
        assert_one_line_error(status, out, err, 2, "--time-limit must be a positive, finite")
    status, out, err = run_main(capsys, ["map", path, "-p", "oops"])
    assert_one_line_error(status, out, err, 2, "--param expects NAME=VALUE")
    status, out, err = run_main(capsys, ["map", path, "--method", "viterbi", "-p", "bogus=1"])
    assert_one_line_error(status, out, err, 2, "bogus")
    # a method that does not fit the graph
    big = tmp_path / "big.uai"
    write_uai(chain_graph(np.zeros((30, 2)), np.eye(2)), big)
    status, out, err = run_main(
        capsys, ["map", big, "--method", "brute_force", "-p", "max_states=1000"]
    )
    assert_one_line_error(status, out, err, 2, "max_states")
    with pytest.raises(SystemExit) as exc:
        main([])
    assert exc.value.code == 2


def test_demo_dispatches_lazily(monkeypatch):
    calls = []
    fake = types.ModuleType("structlearn._demo")
    fake.main = lambda argv=None: calls.append(argv) or 0
    monkeypatch.setitem(sys.modules, "structlearn._demo", fake)
    monkeypatch.setattr(structlearn, "_demo", fake, raising=False)
    assert main(["demo", "--fold", "2"]) == 0
    assert calls == [["--fold", "2"]]


def test_demo_missing_module(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "structlearn._demo", None)
    monkeypatch.delattr(structlearn, "_demo", raising=False)
    assert main(["demo"]) == 1
    assert "demo is not available" in capsys.readouterr().err


def test_python_dash_m_entry_point(chain_file, tmp_path):
    path, graph = chain_file
    out_path = tmp_path / "sub.MAP"
    proc = subprocess.run(
        [sys.executable, "-m", "structlearn", "map", str(path), "--out", str(out_path)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    assert graph.score(read_uai_solution(out_path)) == pytest.approx(record["score"])
    bad = tmp_path / "bad.uai"
    bad.write_text("MARKOV 1 2 1 1 0 2 1")
    proc = subprocess.run(
        [sys.executable, "-m", "structlearn", "map", str(bad)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 1
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "bad.uai" in proc.stderr


def test_shared_instance_through_the_command_line(capsys, tmp_path):
    path = uai_instance("ProteinFolding_15")
    status, out, err = run_main(capsys, ["map", path, "--method", "brute_force", "--no-write"])
    assert_one_line_error(status, out, err, 2, "brute_force would enumerate")


def test_exact_map_takes_n_jobs(capsys, tmp_path):
    graph = random_weighted_csp(7, p_inf=0.3)
    path = tmp_path / "wcsp.uai"
    write_uai(graph, path)
    one = json.loads(run_main(capsys, ["map", path, "--no-write", "--method", "exact"])[1])
    for method in ("exact", "auto"):
        status, out, err = run_main(capsys, ["map", path, "--no-write", "--method", method,
                                             "-p", "n_jobs=2"])
        assert status == 0, err
        assert json.loads(out)["score"] == pytest.approx(one["score"])
    for bad in ("n_jobs=0", "n_jobs=\"two\""):
        status, out, err = run_main(capsys, ["map", path, "--method", "exact", "-p", bad])
        assert_one_line_error(status, out, err, 2, "n_jobs")
