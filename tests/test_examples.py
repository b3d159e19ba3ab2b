"""The scripts in examples/ run end to end on small settings and print their results."""

import importlib.util
import re
import tempfile
import warnings
from pathlib import Path

import pytest
from sklearn.exceptions import ConvergenceWarning

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

CASES = {
    "ocr_sequence_labeling.py": (["--max-words", "40"], r"SequenceCRF .* letter accuracy 0\.\d+"),
    "map_inference_uai.py": (["--size", "5", "--states", "3", "--time-limit", "0.5"], r"gdmm\s+-?\d"),
    "multilabel_pipeline.py": (["--max-iter", "2"], r"pairwise=full\s+Hamming accuracy 0\.\d+"),
    "multilabel_many_labels.py": (["--n-samples", "300", "--max-iter", "5"],
                                  r"label tree\)\s+Hamming 0\.\d+ .* certified gap"),
    "grid_crf_denoising.py": (["--size", "8", "--images", "2"], r"GraphCRF \(BBPL\): pixel accuracy"),
    "conllu_pos_tagging.py": ([], r"token accuracy on 1 held-out sentences"),
}


def _load(name):
    spec = importlib.util.spec_from_file_location(name[:-3], EXAMPLES / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_example_is_exercised():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_example_runs(name, capsys, tmp_path, monkeypatch):
    cwd, tmp = tmp_path / "cwd", tmp_path / "tmp"
    cwd.mkdir()
    tmp.mkdir()
    monkeypatch.chdir(cwd)  # solution files asked for land there
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))  # figures by default
    argv, expected = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        _load(name).main(argv)
    out = capsys.readouterr().out
    assert re.search(expected, out), out
    assert not list(cwd.glob("*.png"))  # no figure dropped into the caller's folder
