"""UAI network, evidence and solution files: round trips, real instances, malformed input."""

import gzip
import io
import itertools
import math
import re
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structlearn.graphs import (
    FactorGraph,
    chain_graph,
    read_uai,
    read_uai_evidence,
    read_uai_solution,
    write_uai,
    write_uai_solution,
)
from structlearn.graphs import uai as uai_module
from conftest import uai_instance, uai_reference

UAI_NAMES = [
    "Grids_18",
    "ImageAlignment_12",
    "ObjectDetection_11",
    "ProteinFolding_15",
    "Segmentation_11",
    "Segmentation_12",
    "wcsp_15",
]


# ---------------------------------------------------------------- references
def naive_uai_score(text, labels):
    """Independent evaluation of sum(log phi) of a labeling: a plain token walk."""
    tokens = text.split()
    pos = 1
    n_vars = int(tokens[pos])
    pos += 1
    cards = [int(t) for t in tokens[pos : pos + n_vars]]
    pos += n_vars
    n_factors = int(tokens[pos])
    pos += 1
    scopes = []
    for _ in range(n_factors):
        k = int(tokens[pos])
        scopes.append([int(t) for t in tokens[pos + 1 : pos + 1 + k]])
        pos += 1 + k
    total = 0.0
    for scope in scopes:
        size = int(tokens[pos])
        index = 0
        for v in scope:
            index = index * cards[v] + int(labels[v])
        phi = float(tokens[pos + 1 + index])
        total += math.log(phi) if phi > 0 else -math.inf
        pos += 1 + size
    assert pos == len(tokens)
    return total


def random_graph(rng, *, n_vars=6, max_states=3, n_factors=6, max_order=3, p_inf=0.15,
                 p_share=0.5, p_zero_unary=0.3):
    """Random graph with higher-order factors, shared tables, -inf and some zero unaries."""
    n_states = rng.integers(1, max_states + 1, size=n_vars)
    unary = []
    for k in n_states:
        u = rng.normal(scale=3.0, size=k)
        u[rng.random(k) < p_inf] = -np.inf
        unary.append(np.zeros(k) if rng.random() < p_zero_unary else u)
    scopes, tables, table_ids, by_shape = [], [], [], {}
    for _ in range(n_factors if n_vars >= 2 else 0):
        order = int(rng.integers(2, min(max_order, n_vars) + 1))
        scope = rng.choice(n_vars, size=order, replace=False)
        shape = tuple(n_states[scope])
        if shape in by_shape and rng.random() < p_share:
            table_ids.append(by_shape[shape])
        else:
            t = rng.normal(scale=3.0, size=int(np.prod(shape)))
            t[rng.random(t.size) < p_inf] = -np.inf
            by_shape[shape] = len(tables)
            table_ids.append(len(tables))
            tables.append(t)
        scopes.append(scope.tolist())
    return FactorGraph(n_states, unary=unary, scopes=scopes, tables=tables,
                       table_ids=np.array(table_ids, dtype=np.int64))


def assert_same_graph(g, h, rtol=1e-12):
    """Same variables, unary, scopes and factor tables; the pool may be numbered anew."""
    np.testing.assert_array_equal(g.n_states, h.n_states)
    np.testing.assert_array_equal(np.isneginf(g.unary), np.isneginf(h.unary))
    np.testing.assert_allclose(g.unary, h.unary, rtol=rtol, atol=rtol)
    np.testing.assert_array_equal(g.scope_indptr, h.scope_indptr)
    np.testing.assert_array_equal(g.scope_vars, h.scope_vars)
    for f in range(g.n_factors):
        a, b = g.factor_table(f), h.factor_table(f)
        np.testing.assert_array_equal(np.isneginf(a), np.isneginf(b))
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol)


def content_ids(graph):
    """Per factor: the number of the first factor table with the same contents, in order."""
    seen = {}
    return np.array([seen.setdefault(graph.factor_table(f).tobytes(), len(seen))
                     for f in range(graph.n_factors)], dtype=np.int64)


def write_text(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


# ----------------------------------------------------------------- round trip
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_vars=st.integers(1, 7))
def test_round_trip_random_graphs(seed, n_vars):
    rng = np.random.default_rng(seed)
    g = random_graph(rng, n_vars=n_vars)
    buf = io.StringIO()
    write_uai(g, buf)
    h = read_uai(io.StringIO(buf.getvalue()))
    assert_same_graph(g, h)
    # shared tables stay shared, and exactly the equal tables share a pool entry
    np.testing.assert_array_equal(h.table_ids, content_ids(g))
    assert h.n_tables <= np.unique(g.table_ids).size
    labels = np.stack([rng.integers(0, k, size=8) for k in g.n_states], axis=1)
    np.testing.assert_allclose(h.score_many(labels), g.score_many(labels), rtol=1e-12, atol=1e-12)
    # and the text agrees with an independent evaluation
    for row in labels[:3]:
        expected = pytest.approx(g.score(row), rel=1e-9, abs=1e-9)
        assert naive_uai_score(buf.getvalue(), row) == expected


def test_round_trip_file_and_gzip(tmp_path):
    g = random_graph(np.random.default_rng(3), n_vars=7, n_factors=9)
    for name in ("g.uai", "g.uai.gz"):
        write_uai(g, tmp_path / name)
        assert_same_graph(g, read_uai(tmp_path / name))
        assert_same_graph(g, read_uai(str(tmp_path / name)))
    with gzip.open(tmp_path / "g.uai.gz", "rt") as fh:
        assert fh.read().startswith("MARKOV\n7\n")
    with open(tmp_path / "g.uai", "rb") as fh:  # binary file objects too
        assert_same_graph(g, read_uai(fh))


def test_round_trip_shared_chain_table_is_written_per_factor_and_shared_on_read():
    rng = np.random.default_rng(0)
    g = chain_graph(rng.normal(size=(30, 4)), rng.normal(size=(4, 4)))
    assert g.n_tables == 1
    buf = io.StringIO()
    write_uai(g, buf)
    text = buf.getvalue()
    tokens = text.split()
    assert int(tokens[1 + 1 + 30]) == 30 + 29  # unary factors + edges in the file
    h = read_uai(io.StringIO(text))
    assert_same_graph(g, h)
    assert h.n_tables == 1 and np.all(h.table_ids == 0)


def test_identical_tables_in_a_file_are_shared_and_others_are_not():
    # four pairwise factors: tables A, A, B (A with one entry changed), A
    text = """MARKOV
3
2 2 2
4
2 0 1
2 1 2
2 0 2
2 0 1
4 1 2 3 4
4 1 2 3 4
4 1 2 3 5
4 1 2 3 4
"""
    g = read_uai(io.StringIO(text))
    np.testing.assert_array_equal(g.table_ids, [0, 0, 1, 0])
    assert g.n_tables == 2
    np.testing.assert_allclose(g.table(1), np.log([1, 2, 3, 5]))


def test_hash_collisions_only_lose_sharing(monkeypatch):
    # a hash that ignores entry positions makes permuted tables collide
    monkeypatch.setattr(uai_module, "_mix64", lambda x: np.zeros_like(x))
    text = "MARKOV 2 2 2 4 2 0 1 2 0 1 2 0 1 2 0 1 4 1 2 3 4 4 4 3 2 1 4 1 2 3 4 4 2 1 4 3"
    g = read_uai(io.StringIO(text))
    np.testing.assert_array_equal(g.table_ids, [0, 1, 0, 2])
    np.testing.assert_allclose(g.factor_table(1).ravel(), np.log([4, 3, 2, 1]))
    np.testing.assert_allclose(g.factor_table(3).ravel(), np.log([2, 1, 4, 3]))


def test_unary_factors_are_summed_and_zero_potentials_forbidden():
    text = """MARKOV
2
3 2
4
1 0
2 0 1
1 0
1 1
3 1 2 0
6 1 1 1 1 1 0
3 2 2 2
2 5 0
"""
    g = read_uai(io.StringIO(text))
    assert g.n_factors == 1
    np.testing.assert_allclose(g.unary_of(0), [np.log(2), np.log(4), -np.inf])
    np.testing.assert_allclose(g.unary_of(1), [np.log(5), -np.inf])
    assert np.isneginf(g.factor_table(0)[2, 1])
    for labels in itertools.product(range(3), range(2)):
        assert g.score(labels) == pytest.approx(naive_uai_score(text, labels))


@pytest.mark.parametrize(
    "text",
    [
        "MARKOV 2 2 2 2 0 2 0 1 1 3 4 1 2 3 4",  # constant factor first
        "MARKOV 2 2 2 2 2 0 1 0 4 1 2 3 4 1 3",  # and last
        "MARKOV 3 2 2 3 3 2 0 1 0 3 0 1 2 4 1 2 3 4 1 5 12 " + " ".join(map(str, range(1, 13))),
    ],
)
def test_constant_factor_keeps_scores_exact(text):
    g = read_uai(io.StringIO(text))
    for labels in itertools.product(*(range(k) for k in g.n_states)):
        assert g.score(labels) == pytest.approx(naive_uai_score(text, labels))


def test_scope_order_is_kept():
    # scope (1, 0): the table's last (fastest) variable is 0
    g = read_uai(io.StringIO("MARKOV 2 2 3 1 2 1 0 6 1 2 3 4 5 6"))
    np.testing.assert_array_equal(g.scope(0), [1, 0])
    assert g.score([1, 2]) == pytest.approx(np.log(6))
    assert g.score([0, 1]) == pytest.approx(np.log(3))


def test_write_normalize_and_range_errors(tmp_path):
    g = FactorGraph([2, 2], unary=[[100.0, 800.0], [1.0, -np.inf]], scopes=[(0, 1)],
                    tables=[[-900.0, -1000.0, -950.0, -np.inf]])
    with pytest.raises(ValueError, match="unary of variable 0 .*normalize=True"):
        write_uai(g, io.StringIO())
    buf = io.StringIO()
    write_uai(g, buf, normalize=True)
    h = read_uai(io.StringIO(buf.getvalue()))
    # scores differ by a constant on every finite labeling
    labels = np.array(list(itertools.product(range(2), range(2))))
    finite = np.isfinite(g.score_many(labels))
    np.testing.assert_array_equal(finite, np.isfinite(h.score_many(labels)))
    assert finite.sum() >= 2
    diff = g.score_many(labels)[finite] - h.score_many(labels)[finite]
    np.testing.assert_allclose(diff, diff[0])
    wide = FactorGraph([2], unary=[[0.0, -800.0]])
    message = r"unary of variable 0 holds score -800 \(-800 after shifting.*too wide a range"
    with pytest.raises(ValueError, match=message):
        write_uai(wide, io.StringIO(), normalize=True)
    with pytest.raises(TypeError, match="FactorGraph"):
        write_uai("not a graph", io.StringIO())


def test_write_skips_zero_unaries_and_empty_graph():
    buf = io.StringIO()
    write_uai(FactorGraph([2, 3], scopes=[(0, 1)], tables=[np.zeros(6)]), buf)
    assert buf.getvalue().split()[:8] == ["MARKOV", "2", "2", "3", "1", "2", "0", "1"]
    buf = io.StringIO()
    write_uai(FactorGraph(np.zeros(0, dtype=int)), buf)
    g = read_uai(io.StringIO(buf.getvalue()))
    assert g.n_vars == 0 and g.n_factors == 0


# --------------------------------------------------------------------- BAYES
BAYES_TEXT = """BAYES
3
2 2 3
3
1 0
2 0 1
3 0 1 2
2
 0.6 0.4
4
 0.9 0.1
 0.2 0.8
12
 0.5 0.25 0.25
 0.0 0.5 0.5
 1.0 0.0 0.0
 0.1 0.1 0.8
"""


def test_bayes_network_scores_are_log_likelihoods():
    g = read_uai(io.StringIO(BAYES_TEXT))
    p_a = [0.6, 0.4]
    p_b = [[0.9, 0.1], [0.2, 0.8]]
    p_c = np.array([0.5, 0.25, 0.25, 0.0, 0.5, 0.5, 1.0, 0.0, 0.0, 0.1, 0.1, 0.8]).reshape(2, 2, 3)
    total = 0.0
    for a, b, c in itertools.product(range(2), range(2), range(3)):
        p = p_a[a] * p_b[a][b] * p_c[a, b, c]
        total += p
        s = g.score([a, b, c])
        if p == 0:
            assert np.isneginf(s)
        else:
            assert s == pytest.approx(np.log(p))
    assert total == pytest.approx(1.0)
    assert g.n_factors == 2 and list(g.scope(1)) == [0, 1, 2]


# ------------------------------------------------------------------ evidence
@pytest.mark.parametrize(
    "text, expected",
    [
        ("1 2 1", {2: 1}),
        ("2\n 0 1\n 2 2\n", {0: 1, 2: 2}),
        ("1\n2 2 0 0 1\n", {0: 1, 2: 0}),  # older layout: one sample first
        ("", {}),
        ("0", {}),
        ("2 0 1 0 1", {0: 1}),  # repeated but consistent
    ],
)
def test_read_evidence(tmp_path, text, expected):
    assert read_uai_evidence(write_text(tmp_path, "e.evid", text)) == expected


@pytest.mark.parametrize(
    "text, message",
    [
        ("2 0 1", "expected 'n v1 s1 ... vn sn' with n=2 .*truncated"),
        ("1 0 x", "non-numeric token 'x'"),
        ("1 0 -1", "not a non-negative integer"),
        ("1 0 1.5", "not a non-negative integer"),
        # beyond int64: an error, not a RuntimeWarning and a wrapped-around value
        ("1 0 99999999999999999999", r"value 1e\+20 is not a non-negative integer of at most"),
        ("99999999999999999999 0 1", r"value 1e\+20 is not a non-negative integer of at most"),
        ("2 0 1 0 0", "variable 0 is observed with two different states"),
        ("2 1 0 1 1 1 0", "evidence samples"),
    ],
)
def test_bad_evidence(tmp_path, text, message):
    with pytest.raises(ValueError, match=r"^e\.evid: .*" + message):
        read_uai_evidence(write_text(tmp_path, "e.evid", text))


@pytest.mark.parametrize(
    "text, message",
    [
        ("MBEST 1\n1 -1.5 -1.5 3 0 1 99999999999999999999\n",
         "label 99999999999999999999 on line 2 is not a non-negative integer"),
        ("MBEST 1\n1 -1.5 -1.5 3 0 -1 1\n", "label -1 on line 2"),
        ("MBEST 2\n1 -1.5 -1.5 3 0 1 1\n2 -2.0 -1.0 2 1 1\n",
         "the rank on line 3 has 2 labels, the first rank 3"),
        ("MBEST 1\n1 -1.5 -1.5 3 0 1\n", "malformed rank on line 2"),
        ("MBEST 2\n1 -1.5 -1.5 3 0 1 1\n", "header announces 2 ranks, found 1"),
    ],
)
def test_bad_mbest_solutions(tmp_path, text, message):
    """(Labels beyond int64 raised OverflowError, ragged ranks numpy's own error.)"""
    from structlearn.graphs import read_uai_solutions

    with pytest.raises(ValueError, match=r"^s\.MBEST: " + message):
        read_uai_solutions(write_text(tmp_path, "s.MBEST", text))


def test_evidence_is_clamped_and_keeps_indices(tmp_path):
    from structlearn.inference import solve_map

    net = write_text(tmp_path, "bn.uai", BAYES_TEXT)
    evid = write_text(tmp_path, "bn.uai.evid", "1 1 0\n")
    g = read_uai(net, evidence=evid)
    free = read_uai(net)
    assert g.n_vars == 3
    np.testing.assert_array_equal(np.isneginf(g.unary_of(1)), [False, True])
    np.testing.assert_array_equal(g.table_data, free.table_data)
    res = solve_map(g, method="brute_force")
    assert res.labels[1] == 0
    # the best completion with x1 = 0 by enumeration on the free graph
    labelings = np.array([x for x in itertools.product(range(2), range(2), range(3)) if x[1] == 0])
    assert res.score == pytest.approx(free.score_many(labelings).max())
    assert read_uai(net, evidence={1: 0}) == g
    with pytest.raises(ValueError, match=r"bad\.evid: evidence state 5 of variable 2"):
        read_uai(net, evidence=write_text(tmp_path, "bad.evid", "1 2 5"))
    with pytest.raises(ValueError, match=r"evidence variable 7"):
        read_uai(net, evidence={7: 0})


# ----------------------------------------------------------------- solutions
@pytest.mark.parametrize(
    "text, expected",
    [
        ("MAP\n3 0 1 2\n", [0, 1, 2]),
        ("MAP\n3 0 1 2", [0, 1, 2]),
        ("MAP\n3 0 1 2\n3 1 1 1\n", [1, 1, 1]),  # the last complete one
        ("MAP\n3 0 1 2\nMAP\n3 2 2\n", [0, 1, 2]),  # the last one is cut short
        ("MAP\n1\n3 2 0 1\n", [2, 0, 1]),  # older layout: sample count first
        ("-BEGIN-\nMAP\n3 0 0 1\n-BEGIN-\nMAP\n3 1 0 1\n", [1, 0, 1]),
        ("MAP\n3\n0 1 1\n", [0, 1, 1]),  # spread over lines
        ("MAP\n0\n", []),
    ],
)
def test_read_solution(tmp_path, text, expected):
    labels = read_uai_solution(write_text(tmp_path, "s.MAP", text))
    assert labels.dtype == np.int64
    np.testing.assert_array_equal(labels, expected)


def test_read_solution_n_vars_and_errors(tmp_path):
    path = write_text(tmp_path, "s.MAP", "MAP\n3 0 1 2\n2 1 1\n")
    np.testing.assert_array_equal(read_uai_solution(path), [1, 1])
    np.testing.assert_array_equal(read_uai_solution(path, n_vars=3), [0, 1, 2])
    with pytest.raises(ValueError, match="no complete solution of 4 variables"):
        read_uai_solution(path, n_vars=4)
    for text, message in [
        ("MAP\n", "no complete solution"),
        ("MAP\n3 0 1\n", "no complete solution"),
        ("MAP\n2 0 x\n", "line 2 is neither a solution"),
        ("MAP\n2 0 -1\n", "negative label -1"),
    ]:
        with pytest.raises(ValueError, match=r"s\.MAP: " + message):
            read_uai_solution(write_text(tmp_path, "s.MAP", text))


def test_write_solution_round_trip(tmp_path):
    labels = np.array([3, 0, 2, 1])
    write_uai_solution(labels, tmp_path / "a.MAP")
    assert (tmp_path / "a.MAP").read_text() == "MAP\n4 3 0 2 1\n"
    np.testing.assert_array_equal(read_uai_solution(tmp_path / "a.MAP"), labels)
    with pytest.raises(ValueError, match="non-negative integers"):
        write_uai_solution([0, -1], tmp_path / "b.MAP")
    with pytest.raises(ValueError, match="1-D"):
        write_uai_solution([[0]], tmp_path / "b.MAP")


# ---------------------------------------------------------------- malformed
GOOD = "MARKOV\n2\n2 3\n2\n1 0\n2 0 1\n\n2\n 1 2\n6\n 1 2 3\n 4 5 6\n"


def test_good_reference_file_parses():
    g = read_uai(io.StringIO(GOOD))
    assert g.n_vars == 2 and g.n_factors == 1
    assert g.score([1, 2]) == pytest.approx(np.log(2 * 6))


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty file"),
        ("MARKOV2\n2\n", "unknown network type 'MARKOV2'"),
        ("CSP 1 2 0", "unknown network type 'CSP'"),
        ("MARKOV\n", "file ends before the number of variables"),
        ("MARKOV\n2\n2", "file ends inside the header"),
        ("MARKOV\n2.5\n2 2 0", r"number of variables 2\.5"),
        ("MARKOV\n2\n2 0\n0\n", "cardinality of variable 1 is 0"),
        ("MARKOV\n2\n2 1e20\n0\n", r"cardinality of variable 1 is 1e\+20; .* at most 2\*\*53"),
        ("MARKOV\n1e20\n2 2 0", r"number of variables 1e\+20 is not a non-negative integer"),
        ("MARKOV\n2\n2 3\n-1\n", "number of factors -1"),
        (GOOD[: GOOD.index("6\n")], "file ends before the table of factor 1"),
        (GOOD[: GOOD.index(" 4 5")], r"the table of factor 1 \(6 entries\) runs past the end"),
        ("MARKOV 2 2 3 2 1 0 2 0", r"the scope of factor 1 \(2 variables\) runs past the end"),
        (GOOD.replace("\n2\n1 0", "\n3\n1 0"), "file ends before the table of factor 2|"
                                                "scope of factor 2"),
        ("MARKOV 2 2 2 1000000000000 2 0 1 4 1 1 1 1", "1000000000000 factors need at least"),
        (GOOD.replace("\n2\n1 0", "\n1\n1 0"), r"10 unexpected number\(s\) after the table of the "
                                                "last factor"),
        (GOOD.replace("2 0 1", "2 0 5"), r"scope of factor 1 references variable 5; .*\[0, 2\)"),
        (GOOD.replace("2 0 1", "2 0 -1"), "scope of factor 1 references variable -1"),
        (GOOD.replace("2 0 1", "2 1 1"), "scope of factor 1 repeats variable 1"),
        (GOOD.replace("2 0 1", "1.5 0 1"), r"size of the scope of factor 1 is 1\.5"),
        (GOOD.replace("6\n 1 2 3", "5\n 1 2 3"),
         r"table of factor 1 has 5 entries, but its scope \[0, 1\] with cardinalities "
         r"\[2, 3\] needs 6"),
        (GOOD.replace("6\n 1 2 3\n 4 5 6", "7\n 1 2 3\n 4 5 6 7"), "table of factor 1 has 7"),
        (GOOD.replace(" 4 5 6", " 4 -5 6"), r"negative potential -5 in the table of factor 1 "
                                             r"\(entry 4\).*\(line 12, column 4\)"),
        (GOOD.replace(" 4 5 6", " 4 nan 6"), "non-finite potential nan in the table of factor 1"),
        (GOOD.replace(" 4 5 6", " 4 inf 6"), "non-finite potential inf"),
        (GOOD.replace(" 4 5 6", " 4 five 6"), r"non-numeric token 'five' at line 12"),
        (GOOD.replace(" 1 2\n", " 1 2,\n"), r"non-numeric token '2,' at line 9"),
        (GOOD.replace("6\n 1 2", "6.0001\n 1 2"), r"size of the table of factor 1 is 6\.0001"),
    ],
)
def test_malformed_files_raise_value_error(tmp_path, text, message):
    path = write_text(tmp_path, "bad.uai", text)
    with pytest.raises(ValueError, match=r"^bad\.uai: (" + message + ")"):
        read_uai(path)


def test_huge_table_count_is_a_size_error():
    text = "MARKOV 40 " + "10 " * 40 + "1 40 " + " ".join(map(str, range(40))) + " 3 1 2 3"
    with pytest.raises(ValueError, match=r"table of factor 0 has 3 entries.*needs about 1e\+40"):
        read_uai(io.StringIO(text))


def test_missing_file_raises_oserror(tmp_path):
    with pytest.raises(OSError):
        read_uai(tmp_path / "missing.uai")


# ------------------------------------------------------------ shared instances
@pytest.mark.parametrize("name", UAI_NAMES)
def test_reference_solutions_of_shared_instances(name):
    path = uai_instance(name)
    with gzip.open(path, "rt") as fh:
        text = fh.read()
    t0 = time.perf_counter()
    g = read_uai(path)
    elapsed = time.perf_counter() - t0
    labels = read_uai_solution(uai_reference(name))
    assert labels.shape == (g.n_vars,)
    score = g.score(labels)
    assert np.isfinite(score)
    assert score == pytest.approx(naive_uai_score(text, labels), rel=1e-9, abs=1e-9)
    # sizes agree with the file header
    tokens = text.split(maxsplit=g.n_vars + 3)
    assert int(tokens[1]) == g.n_vars
    assert g.n_tables <= g.n_factors
    assert elapsed < 10.0  # vectorized parsing: about a second at most for 3 MB
    # the graph survives a write/read round trip
    buf = io.StringIO()
    write_uai(g, buf)
    h = read_uai(io.StringIO(buf.getvalue()))
    assert h.n_tables == g.n_tables
    assert h.score(labels) == pytest.approx(score, rel=1e-12, abs=1e-9)


def test_message_locations_are_lines():
    # a negative potential deep in a larger file is located by line
    rng = np.random.default_rng(1)
    g = random_graph(rng, n_vars=6, n_factors=8, p_inf=0.0, p_zero_unary=0.0)
    buf = io.StringIO()
    write_uai(g, buf)
    lines = buf.getvalue().split("\n")
    last = max(i for i, line in enumerate(lines) if line.strip())
    lines[last] = "-" + lines[last].lstrip()
    with pytest.raises(ValueError, match=rf"negative potential .*\(line {last + 1}, column 1\)"):
        read_uai(io.StringIO("\n".join(lines)))
    assert re.search(r"\d", lines[last])
