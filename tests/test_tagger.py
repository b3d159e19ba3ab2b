"""python -m structlearn tag: train, eval and predict on CoNLL-U files."""

import gzip

import joblib
import pytest

from structlearn.__main__ import main

EXTRA = """# sent_id = extra-1
# text = Do mar ao céu.
1-2\tDo\t_\t_\t_\t_\t_\t_\t_\t_
1\tDe\tde\tADP\t_\t_\t3\tcase\t_\t_
2\to\to\tDET\t_\tGender=Masc|Number=Sing\t3\tdet\t_\t_
3\tmar\tmar\tNOUN\t_\tGender=Masc|Number=Sing\t0\troot\t_\t_
3.1\tvai\tir\tVERB\t_\t_\t_\t_\t0:root\t_
4\tao\ta\tADP\t_\t_\t5\tcase\t_\tSpaceAfter=No
5\tcéu\tcéu\tNOUN\t_\tGender=Masc|Number=Sing\t3\tnmod\t_\t_
6\t.\t.\tPUNCT\t_\t_\t3\tpunct\t_\t_

"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, test_data):
    """The first 80 Porttinari sentences plus one with a multiword token, an
    empty node and comments."""
    with gzip.open(test_data / "porttinari_pos.conllu.gz", "rt", encoding="utf-8") as fh:
        text = fh.read()
    blocks = text.split("\n\n")[:80]
    path = tmp_path_factory.mktemp("conllu") / "small.conllu"
    path.write_text("\n\n".join(blocks) + "\n\n" + EXTRA, encoding="utf-8")
    return path


# the CLI's short SSVM fit warns that it stopped before its gap tolerance
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("column, estimator", [("upos", "crf"), ("upos+feats", "crf"),
                                               ("upos", "perceptron"), ("feats", "ssvm")])
def test_train_eval_predict(corpus, tmp_path, capsys, column, estimator):
    model = tmp_path / "m.joblib"
    args = ["tag", "train", str(corpus), "--model", str(model), "--column", column,
            "--estimator", estimator, "--max-iter", "15", "--quiet"]
    assert main(args) == 0
    assert "trained" in capsys.readouterr().err
    assert main(["tag", "eval", str(model), str(corpus)]) == 0
    out = capsys.readouterr().out
    assert f"token accuracy ({column})" in out and "precision" in out
    out_file = tmp_path / "pred.conllu"
    assert main(["tag", "predict", str(model), str(corpus), "--out", str(out_file)]) == 0
    before = corpus.read_text(encoding="utf-8").split("\n")
    after = out_file.read_text(encoding="utf-8").split("\n")
    assert len(before) == len(after)
    changed_fields = {"upos": {3}, "xpos": {4}, "feats": {5}, "upos+feats": {3, 5}}[column]
    n_tokens = 0
    for b, a in zip(before, after):
        fb, fa = b.split("\t"), a.split("\t")
        if len(fb) == 10 and fb[0].isdigit():
            n_tokens += 1
            assert [x for i, x in enumerate(fb) if i not in changed_fields] == \
                [x for i, x in enumerate(fa) if i not in changed_fields]
        else:  # comments, ranges, empty nodes, blank lines: untouched
            assert a == b
    assert n_tokens > 1000
    # predictions on stdout equal the file
    assert main(["tag", "predict", str(model), str(corpus)]) == 0
    assert capsys.readouterr().out == out_file.read_text(encoding="utf-8")




def test_a_file_that_is_not_a_model(tmp_path, corpus, capsys):
    bad = tmp_path / "bad.joblib"
    joblib.dump({"something": 1}, bad)
    assert main(["tag", "eval", str(bad), str(corpus)]) == 1
    assert "is not a structlearn tagger model" in capsys.readouterr().err
    text = tmp_path / "text.joblib"
    text.write_text("hello")
    assert main(["tag", "predict", str(text), str(corpus)]) == 1
    assert "is not a structlearn tagger model" in capsys.readouterr().err


def test_malformed_corpus_names_the_line(tmp_path, capsys):
    bad = tmp_path / "bad.conllu"
    bad.write_text("1\tDe\tde\tADP\t_\t_\t3\tcase\t_\t_\n2\to\to\tDET\n\n", encoding="utf-8")
    assert main(["tag", "train", str(bad), "--model", str(tmp_path / "m.joblib")]) == 1
    assert "line 2" in capsys.readouterr().err
    assert main(["tag", "train", str(tmp_path / "missing.conllu"), "--model",
                 str(tmp_path / "m.joblib")]) == 1
    assert "missing.conllu" in capsys.readouterr().err


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_bad_bytes_and_model_paths_give_one_clean_error(tmp_path, corpus, capsys):
    model = tmp_path / "m.joblib"
    assert main(["tag", "train", str(corpus), "--model", str(model), "--estimator",
                 "perceptron", "--max-iter", "1", "--quiet"]) == 0
    capsys.readouterr()
    latin1 = tmp_path / "l.conllu"
    latin1.write_bytes(b"1\tcaf\xe9\tx\tNOUN\t_\t_\t0\troot\t_\t_\n\n")
    for action in ("predict", "eval"):
        assert main(["tag", action, str(model), str(latin1)]) == 1
        err = capsys.readouterr().err
        assert "not UTF-8" in err and "line 1" in err and "Traceback" not in err
    # a model path in a missing folder fails before any training
    assert main(["tag", "train", str(corpus), "--model",
                 str(tmp_path / "no" / "such" / "m.joblib")]) == 1
    err = capsys.readouterr().err
    assert "does not exist" in err and "trained" not in err
    # a byte-order mark is accepted
    bom = tmp_path / "bom.conllu"
    bom.write_bytes(b"\xef\xbb\xbf" + corpus.read_bytes())
    assert main(["tag", "eval", str(model), str(bom)]) == 0


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_eval_on_a_corpus_without_tags_says_so(tmp_path, corpus, capsys):
    model = tmp_path / "m.joblib"
    assert main(["tag", "train", str(corpus), "--model", str(model), "--estimator",
                 "perceptron", "--max-iter", "1", "--quiet"]) == 0
    untagged = tmp_path / "untagged.conllu"
    untagged.write_text("1\tDe\tde\t_\t_\t_\t3\tcase\t_\t_\n2\tmar\tmar\t_\t_\t_\t0\troot\t_\t_\n\n",
                        encoding="utf-8")
    capsys.readouterr()
    assert main(["tag", "eval", str(model), str(untagged)]) == 1
    assert "holds no tags" in capsys.readouterr().err
