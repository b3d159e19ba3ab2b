import gzip
import io
import time

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction import DictVectorizer

from structlearn.datasets import (
    load_ocr_letters,
    load_scene,
    load_yeast,
    make_chain_data,
    make_grid_mrf,
    make_multilabel_pairwise,
    read_conllu,
    token_features,
    vectorize_sequences,
)
from structlearn.datasets._bundled import DATA_DIR
from structlearn.datasets.synthetic import _sticky_transition_matrix
from structlearn.graphs import FactorGraph, grid_edges
from conftest import array_digest


# ----------------------------------------------------------------- bundled data


def test_bundled_files_small():
    total = sum(f.stat().st_size for f in DATA_DIR.iterdir() if f.is_file())
    assert total < 3.2e6


def test_ocr_letters_shapes():
    data = load_ocr_letters()
    assert len(data.X) == len(data.y) == 6877
    lengths = np.array([x.shape[0] for x in data.X])
    assert lengths.sum() == 52152
    np.testing.assert_array_equal(lengths, [len(y) for y in data.y])
    np.testing.assert_array_equal(lengths, data.lengths)
    assert all(x.shape[1] == 128 and x.dtype == np.float64 for x in data.X)
    allx = np.concatenate(data.X)
    assert set(np.unique(allx).tolist()) == {0.0, 1.0}
    ally = np.concatenate(data.y)
    assert ally.dtype.kind == "U"
    assert set(ally.tolist()) == set("abcdefghijklmnopqrstuvwxyz")
    assert list(data.target_names) == list("abcdefghijklmnopqrstuvwxyz")
    assert data.folds.shape == (6877,)
    assert np.issubdtype(data.folds.dtype, np.integer)
    assert set(data.folds.tolist()) == set(range(10))
    assert (data.folds == 1).sum() == 704
    # the first word of the data set is "(c)ommanding"
    assert "".join(data.y[0]) == "ommanding"
    assert "Taskar" in data.DESCR and "Taskar" in load_ocr_letters.__doc__


def test_ocr_letters_return_X_y_and_dtype():
    X, y = load_ocr_letters(return_X_y=True, dtype=np.uint8)
    assert len(X) == len(y) == 6877
    assert X[0].dtype == np.uint8 and X[0].shape == (len(y[0]), 128)


def test_ocr_letters_fast():
    load_ocr_letters()
    t = time.perf_counter()
    load_ocr_letters()
    assert time.perf_counter() - t < 3.0  # 3x margin: busy shared machines


def test_ocr_letters_match_the_reference_file():
    """Pixels, letters, word lengths and folds equal those of the reference
    file ``ocr_letters.npz`` (its SHA-256 fingerprint, computed from the file
    as ``array_digest(unpacked pixels, letters, lengths, folds)``)."""
    X, y = load_ocr_letters(return_X_y=True)
    digest = array_digest(np.concatenate(X).astype(np.uint8), np.concatenate(y).astype("U1"),
                          np.array([len(w) for w in y], dtype=np.int64),
                          np.asarray(load_ocr_letters().folds).astype(np.int64))
    assert digest == "0dec27424b50cd2a354f10054239cf533097fa9237a81c7f87e45b44427292b4"


def test_yeast_shapes():
    data = load_yeast()
    assert data.data.shape == (2417, 103) and data.data.dtype == np.float64
    assert data.target.shape == (2417, 14) and np.issubdtype(data.target.dtype, np.integer)
    assert set(np.unique(data.target).tolist()) == {0, 1}
    assert len(data.feature_names) == 103 and len(data.target_names) == 14
    assert 4.2 < data.target.sum(1).mean() < 4.3  # 4.24 labels per gene
    assert "Elisseeff" in data.DESCR
    X, Y = load_yeast(return_X_y=True)
    np.testing.assert_array_equal(X, data.data)
    np.testing.assert_array_equal(Y, data.target)


def test_yeast_matches_the_reference_file():
    """Equal to ``yeast.csv.gz`` (fingerprint of its feature and label columns)."""
    X, Y = load_yeast(return_X_y=True)
    digest = array_digest(X.astype(np.float64), Y.astype(np.int64))
    assert digest == "05af313e3278908eb3faef283d371ac44db0dcb973aa45c026edcf00f265d271"


def test_scene_shapes():
    data = load_scene()
    assert data.X_train.shape == (1211, 294) and data.X_test.shape == (1196, 294)
    assert data.Y_train.shape == (1211, 6) and data.Y_test.shape == (1196, 6)
    assert data.X_train.dtype == np.float64
    assert 0.0 <= data.X_train.min() and data.X_train.max() <= 1.0
    assert data.target_names == ["Beach", "Sunset", "FallFoliage", "Field", "Mountain", "Urban"]
    # label counts over both parts, as published for the data set
    counts = data.Y_train.sum(0) + data.Y_test.sum(0)
    np.testing.assert_array_equal(counts, [427, 364, 397, 433, 533, 431])
    out = load_scene(return_X_y=True)
    assert len(out) == 4
    np.testing.assert_array_equal(out[2], data.X_test)


def test_scene_matches_the_reference_file():
    """Equal to ``scene.npz`` (fingerprint of its float32 features and labels)."""
    d = load_scene()
    digest = array_digest(*(d[k].astype(np.float32) for k in ("X_train", "X_test")),
                          *(d[k].astype(np.int64) for k in ("Y_train", "Y_test")))
    assert digest == "e9285552d588f7ff129b20403caf1b1d308446746a0dc19606f7f8666bc5c158"


# ----------------------------------------------------------------- CoNLL-U

CONLLU = (
    "# sent_id = 1\n"
    "# text = Eu vi-o no parque.\n"
    "1\tEu\teu\tPRON\t_\tCase=Nom|Number=Sing\t2\tnsubj\t_\t_\n"
    "2\tvi-o\tver\tVERB\t_\tMood=Ind\t0\troot\t_\t_\n"
    "3-4\tno\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "3\tem\tem\tADP\t_\t_\t5\tcase\t_\t_\n"
    "4\to\to\tDET\t_\tGender=Masc\t5\tdet\t_\t_\n"
    "4.1\tvisto\tver\tVERB\t_\t_\t_\t_\t_\t_\n"
    "5\tparque\tparque\tNOUN\t_\tGender=Masc\t2\tobl\t_\tSpaceAfter=No\n"
    "6\t.\t.\tPUNCT\t_\t_\t2\tpunct\t_\t_\n"
    "\n"
    "# sent_id = 2\n"
    "1\tSim\tsim\tINTJ\t_\t_\t0\troot\t_\t_\n"
)


def test_read_conllu_basic():
    sents = read_conllu(io.StringIO(CONLLU))
    assert len(sents) == 2  # the last sentence has no trailing blank line
    assert sents[0]["form"] == ["Eu", "vi-o", "em", "o", "parque", "."]
    assert sents[0]["upos"] == ["PRON", "VERB", "ADP", "DET", "NOUN", "PUNCT"]
    assert set(sents[0]) == {"form", "upos"}
    assert sents[1] == {"form": ["Sim"], "upos": ["INTJ"]}


def test_read_conllu_columns():
    sents = read_conllu(io.StringIO(CONLLU), columns=("id", "lemma", "head", "misc", "upos+feats"))
    assert sents[0]["id"] == ["1", "2", "3", "4", "5", "6"]
    assert sents[0]["lemma"][1] == "ver"
    assert sents[0]["head"] == ["2", "0", "5", "5", "2", "2"]
    assert sents[0]["misc"][4] == "SpaceAfter=No"
    assert sents[0]["upos+feats"][:3] == ["PRON|Case=Nom|Number=Sing", "VERB|Mood=Ind", "ADP|_"]
    assert read_conllu(io.StringIO(CONLLU), columns="xpos")[1] == {"xpos": ["_"]}


def test_read_conllu_sources(tmp_path):
    expected = read_conllu(io.StringIO(CONLLU))
    plain = tmp_path / "a.conllu"
    plain.write_text(CONLLU, encoding="utf-8")
    gz = tmp_path / "b.conllu.gz"
    gz.write_bytes(gzip.compress(CONLLU.encode("utf-8")))
    gz_no_suffix = tmp_path / "c.conllu"
    gz_no_suffix.write_bytes(gzip.compress(CONLLU.encode("utf-8")))
    crlf = tmp_path / "d.conllu"
    crlf.write_bytes(CONLLU.replace("\n", "\r\n").encode("utf-8"))
    for src in (plain, str(gz), gz_no_suffix, crlf):
        assert read_conllu(src) == expected
    assert read_conllu(io.BytesIO(CONLLU.encode("utf-8"))) == expected
    assert read_conllu(io.BytesIO(gzip.compress(CONLLU.encode("utf-8")))) == expected
    with open(gz, "rb") as f:
        assert read_conllu(f) == expected
    with gzip.open(gz, "rt", encoding="utf-8") as f:
        assert read_conllu(f) == expected


def test_read_conllu_blank_lines_and_empty():
    text = "\n\n# c\n1\ta\ta\tX\t_\t_\t_\t_\t_\t_\n\n\n\n1\tb\tb\tY\t_\t_\t_\t_\t_\t_\n\n"
    assert read_conllu(io.StringIO(text)) == [
        {"form": ["a"], "upos": ["X"]},
        {"form": ["b"], "upos": ["Y"]},
    ]
    assert read_conllu(io.StringIO("")) == []
    assert read_conllu(io.StringIO("# only a comment\n")) == []


def test_read_conllu_malformed_line():
    bad = CONLLU.replace("3\tem\tem\tADP\t_\t_\t5\tcase\t_\t_", "3\tem\tem\tADP\t_\t_\t5\tcase")
    with pytest.raises(ValueError, match="line 6"):
        read_conllu(io.StringIO(bad))
    with pytest.raises(ValueError, match="line 1.*ID"):
        read_conllu(io.StringIO("x\ta\ta\tX\t_\t_\t_\t_\t_\t_\n"))


def test_read_conllu_bad_arguments():
    with pytest.raises(ValueError, match="unknown column 'pos'.*upos"):
        read_conllu(io.StringIO(CONLLU), columns=("form", "pos"))
    with pytest.raises(ValueError, match="at least one"):
        read_conllu(io.StringIO(CONLLU), columns=())
    with pytest.raises(TypeError, match="path_or_file"):
        read_conllu(12)


def test_read_conllu_porttinari(test_data):
    t = time.perf_counter()
    sents = read_conllu(test_data / "porttinari_pos.conllu.gz", columns=("form", "upos", "upos+feats"))
    elapsed = time.perf_counter() - t
    assert len(sents) == 8420
    assert sum(len(s["form"]) for s in sents) == 168400
    assert len({u for s in sents for u in s["upos"]}) == 16
    assert len({u for s in sents for u in s["upos+feats"]}) == 278
    assert elapsed < 15.0  # 3x margin: busy shared machines


# ----------------------------------------------------------------- token features


def test_token_features():
    feats = token_features(["The", "ABC", "co-op", "42", "x"])
    assert len(feats) == 5
    f0, f1, f2, f3, f4 = feats
    assert f0["word"] == "the" and f0["prefix2"] == "th" and f0["suffix3"] == "the"
    assert f0["BOS"] == 1.0 and "prev_word" not in f0 and f0["next_word"] == "abc"
    assert f0["is_title"] == 1.0 and "is_upper" not in f0
    assert f1["is_upper"] == 1.0 and f1["prev_word"] == "the"
    assert f2["has_hyphen"] == 1.0 and f2["suffix3"] == "-op"
    assert f3["is_digit"] == 1.0
    assert f4["EOS"] == 1.0 and "next_word" not in f4 and f4["prefix3"] == "x"
    for f in feats:
        assert f["bias"] == 1.0
        assert all(isinstance(v, (str, float)) for v in f.values())
    assert token_features([]) == []
    with pytest.raises(TypeError, match="single str"):
        token_features("word")


def test_vectorize_sequences_matches_per_token_transform():
    sents = [["Eu", "vi", "o", "parque"], ["Sim"], [], ["O", "parque", "é", "grande", "."]]
    dicts = [token_features(s) for s in sents]
    X, vec = vectorize_sequences(dicts)
    assert isinstance(vec, DictVectorizer)
    assert [x.shape[0] for x in X] == [4, 1, 0, 5]
    n_features = len(vec.feature_names_)
    for x, d in zip(X, dicts):
        assert sp.isspmatrix_csr(x) and x.dtype == np.float64 and x.shape[1] == n_features
        if d:
            np.testing.assert_array_equal(x.toarray(), vec.transform(d).toarray())
    # reuse on new data: unseen features are dropped, columns are the same
    Xt, vec2 = vectorize_sequences([token_features(["Não", "parque"])], vec)
    assert vec2 is vec and Xt[0].shape == (2, n_features)
    assert Xt[0].toarray().sum() > 0
    # an unfitted vectorizer gets fitted
    Xu, vu = vectorize_sequences(dicts, DictVectorizer())
    assert vu.feature_names_ == vec.feature_names_
    with pytest.raises(TypeError, match="vectorizer"):
        vectorize_sequences(dicts, vectorizer="dict")
    with pytest.raises(TypeError, match="dicts"):
        vectorize_sequences([["a", "b"]])


# ----------------------------------------------------------------- generators


def _same_list(a, b):
    return len(a) == len(b) and all(
        (x != z).nnz == 0 if sp.issparse(x) else np.array_equal(x, z) for x, z in zip(a, b)
    )


def test_make_chain_data_shapes_and_reproducible():
    X, y = make_chain_data(20, length=(3, 12), n_labels=7, n_features=30, density=0.2, random_state=0)
    assert len(X) == len(y) == 20
    lengths = [len(s) for s in y]
    assert min(lengths) >= 3 and max(lengths) <= 12 and len(set(lengths)) > 1
    for x, s in zip(X, y):
        assert sp.isspmatrix_csr(x) and x.shape == (len(s), 30) and x.dtype == np.float64
        assert np.issubdtype(s.dtype, np.integer) and s.min() >= 0 and s.max() < 7
        assert set(np.unique(x.data).tolist()) <= {1.0}
        assert np.all(np.diff(x.indptr) >= 1)  # every token emits at least one feature
    X2, y2 = make_chain_data(20, length=(3, 12), n_labels=7, n_features=30, density=0.2, random_state=0)
    assert _same_list(X, X2) and _same_list(y, y2)
    X3, y3 = make_chain_data(20, length=(3, 12), n_labels=7, n_features=30, density=0.2, random_state=1)
    assert not (_same_list(X, X3) and _same_list(y, y3))
    X4, y4 = make_chain_data(5, length=4, random_state=0)
    assert all(len(s) == 4 for s in y4) and X4[0].shape == (4, 50)


def test_make_chain_data_statistics():
    # sticky Markov labels: about half of the transitions repeat the label
    X, y = make_chain_data(300, length=20, n_labels=10, n_features=40, density=0.1, noise=0.0,
                           random_state=0)
    stay = np.mean(np.concatenate([s[1:] == s[:-1] for s in y]))
    assert 0.45 < stay < 0.6
    # without noise a token's features are exactly its label's signature
    Xall = sp.vstack(X).toarray()
    yall = np.concatenate(y)
    for k in range(10):
        rows = Xall[yall == k]
        if len(rows):
            assert (rows == rows[0]).all()
    # full noise: features independent of the label
    Xn, yn = make_chain_data(300, length=20, n_labels=10, n_features=40, noise=1.0, random_state=0)
    Xn = sp.vstack(Xn).toarray()
    yn = np.concatenate(yn)
    means = np.array([Xn[yn == k].mean(0) for k in range(10)])
    assert np.abs(means - Xn.mean(0)).max() < 0.15


def test_make_chain_data_many_labels_fast():
    t = time.perf_counter()
    X, y = make_chain_data(200, length=(5, 15), n_labels=1000, n_features=2000, density=0.01,
                           random_state=0)
    assert time.perf_counter() - t < 6.0  # 3x margin: busy shared machines
    assert max(s.max() for s in y) < 1000
    assert len(np.unique(np.concatenate(y))) > 300


def test_sticky_transition_matrix_rows():
    rng = np.random.RandomState(0)
    for K in (1, 2, 5, 50):
        T = _sticky_transition_matrix(K, rng)
        assert T.shape == (K, K) and np.all(T >= 0)
        np.testing.assert_allclose(T.sum(1), 1.0)
        if K > 1:
            np.testing.assert_allclose(np.diag(T), 0.5)


def test_make_chain_data_bad_input():
    with pytest.raises(ValueError, match="length"):
        make_chain_data(3, length=(5, 2))
    with pytest.raises(ValueError, match="length"):
        make_chain_data(3, length=0)
    with pytest.raises(ValueError, match="density"):
        make_chain_data(3, density=0.0)
    with pytest.raises(ValueError, match="noise"):
        make_chain_data(3, noise=1.5)
    with pytest.raises(TypeError, match="n_labels"):
        make_chain_data(3, n_labels=2.5)


def test_make_grid_mrf():
    g = make_grid_mrf(3, 4, 5, coupling=2.0, unary_scale=0.5, random_state=0)
    assert isinstance(g, FactorGraph)
    assert np.array_equal(g.n_states, np.full(12, 5))
    n_edges = len(grid_edges(3, 4))
    assert len(g.table_ids) == n_edges == 17
    assert len(np.unique(g.table_ids)) == 1  # one shared Potts table
    np.testing.assert_array_equal(g.factor_table(0), 2.0 * np.eye(5))
    U = g.unary_matrix()
    assert U.shape == (12, 5) and 0.2 < U.std() < 1.0
    g2 = make_grid_mrf(3, 4, 5, coupling=2.0, unary_scale=0.5, random_state=0)
    np.testing.assert_array_equal(g2.unary_matrix(), U)
    assert not np.array_equal(make_grid_mrf(3, 4, 5, random_state=1).unary_matrix(), U)
    # score of the all-zero labeling: unaries plus one coupling per edge
    assert np.isclose(g.score(np.zeros(12, dtype=np.int64)), U[:, 0].sum() + 2.0 * n_edges)
    with pytest.raises(ValueError, match="n_states"):
        make_grid_mrf(2, 2, 0)
    with pytest.raises(ValueError, match="coupling"):
        make_grid_mrf(2, 2, 2, coupling=np.inf)


def test_make_multilabel_pairwise_shapes_and_reproducible():
    X, Y = make_multilabel_pairwise(50, n_features=7, n_labels=6, random_state=0)
    assert X.shape == (50, 7) and X.dtype == np.float64
    assert Y.shape == (50, 6) and np.issubdtype(Y.dtype, np.integer)
    assert set(np.unique(Y).tolist()) <= {0, 1}
    X2, Y2 = make_multilabel_pairwise(50, n_features=7, n_labels=6, random_state=0)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(Y, Y2)
    X3, Y3 = make_multilabel_pairwise(50, n_features=7, n_labels=6, random_state=1)
    assert not np.array_equal(X, X3) and not np.array_equal(Y, Y3)
    X, Y, params = make_multilabel_pairwise(10, n_labels=4, random_state=0, return_params=True)
    J = params["J"]
    assert params["W"].shape == (20, 4) and params["bias"].shape == (4,)
    np.testing.assert_array_equal(J, J.T)
    assert np.all(np.diag(J) == 0)
    assert np.count_nonzero(J) == 2 * len(params["edges"])


def test_make_multilabel_pairwise_mean_active():
    X, Y = make_multilabel_pairwise(2000, n_labels=10, n_active=3, density=0.4, random_state=0)
    assert 2.5 < Y.sum(1).mean() < 3.5


def test_make_multilabel_pairwise_labels_correlated():
    # Same seed, same features and weights (density only switches the
    # interactions on): attractive (repulsive) pairs co-occur more (less)
    # often than the same pairs without interactions, where only the shared
    # features correlate the labels.
    kw = dict(n_features=10, n_labels=8, n_active=3, random_state=0, return_params=True)
    X, Y, p = make_multilabel_pairwise(4000, density=0.5, **kw)
    X0, Y0, p0 = make_multilabel_pairwise(4000, density=0.0, **kw)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(p["W"], p0["W"])
    J = p["J"]
    assert (J > 0).any() and (J < 0).any() and not p0["J"].any()
    C, C0 = np.corrcoef(Y.T), np.corrcoef(Y0.T)
    assert C[J > 0].mean() - C0[J > 0].mean() > 0.08
    assert C[J < 0].mean() - C0[J < 0].mean() < -0.08
    assert np.abs(C0[J != 0]).mean() < 0.1


def test_make_multilabel_pairwise_many_labels():
    t = time.perf_counter()
    X, Y = make_multilabel_pairwise(300, n_features=30, n_labels=200, n_active=5, density=0.2,
                                    random_state=0)
    assert time.perf_counter() - t < 9.0  # 3x margin: busy shared machines
    assert Y.shape == (300, 200)
    assert 3 < Y.sum(1).mean() < 8


def test_make_multilabel_pairwise_bad_input():
    with pytest.raises(ValueError, match="n_active"):
        make_multilabel_pairwise(10, n_labels=3, n_active=3)
    with pytest.raises(ValueError, match="density"):
        make_multilabel_pairwise(10, density=1.5)
    with pytest.raises(ValueError, match="n_samples"):
        make_multilabel_pairwise(0)


def test_read_conllu_bad_bytes_gzip_and_ids_raise_value_errors():
    import gzip as gz

    line = "\tA\ta\tNOUN\t_\t_\t0\troot\t_\t_\n"
    with pytest.raises(ValueError, match="not a valid gzip file"):
        read_conllu(io.BytesIO(gz.compress(b"x" * 999)[:20]))
    with pytest.raises(ValueError, match="line 2: bytes that are not UTF-8"):
        read_conllu(io.BytesIO(("1" + line).encode() + b"2\tcaf\xe9\ta\tNOUN\t_\t_\t0\tr\t_\t_\n"))
    assert read_conllu(io.BytesIO(b"\xef\xbb\xbf" + ("1" + line).encode())) == [
        {"form": ["A"], "upos": ["NOUN"]}]
    for bad_id in ("0", "\u00b2", "\u0663", "1-x", "2-1", "1.", "x.1", "01"):
        with pytest.raises(ValueError, match="invalid token ID"):
            read_conllu(io.StringIO(bad_id + line))
    # ranges and empty nodes are skipped
    text = "1-2" + line + "1" + line + "2" + line + "2.1" + line
    assert read_conllu(io.StringIO(text))[0]["form"] == ["A", "A"]


def test_read_conllu_fuzzed_files_raise_only_value_errors():
    """Seeded mutations of a valid file (byte flips, cuts, insertions, gzip):
    a result or a ValueError, nothing else."""
    import gzip as gz

    rng = np.random.default_rng(0)
    base = CONLLU.encode()
    outcomes = {"ok": 0, "ValueError": 0}
    for case in range(400):
        raw = bytearray(gz.compress(base) if case % 3 == 0 else base)
        for _ in range(rng.integers(1, 4)):
            op = rng.integers(3)
            pos = int(rng.integers(len(raw))) if raw else 0
            if op == 0 and raw:
                raw[pos] = int(rng.integers(256))
            elif op == 1:
                raw = raw[:pos]
            else:
                raw[pos:pos] = bytes(rng.integers(0, 256, size=int(rng.integers(1, 4)),
                                                  dtype=np.uint8))
        try:
            read_conllu(io.BytesIO(bytes(raw)))
            outcomes["ok"] += 1
        except ValueError:
            outcomes["ValueError"] += 1
    assert outcomes["ok"] > 0 and outcomes["ValueError"] > 0


def test_make_sparse_multilabel_shapes_rates_and_errors():
    from structlearn.datasets import make_sparse_multilabel

    X, Y = make_sparse_multilabel(800, n_labels=120, n_features=300, labels_per_sample=6,
                                  random_state=3)
    assert X.shape == (800, 300) and Y.shape == (800, 120) and Y.dtype == np.int64
    assert set(np.unique(X.data)) == {1.0} and set(np.unique(Y)) <= {0, 1}
    assert 4.5 < Y.sum(1).mean() < 6.5
    freq = Y.mean(0)
    assert freq[:10].mean() > freq[-10:].mean()  # frequent labels first
    X2, Y2 = make_sparse_multilabel(800, n_labels=120, n_features=300, labels_per_sample=6,
                                    random_state=3)
    assert (X2 != X).nnz == 0 and np.array_equal(Y, Y2)
    with pytest.raises(ValueError):
        make_sparse_multilabel(10, labels_per_sample=0)
    with pytest.raises(ValueError):
        make_sparse_multilabel(0)
