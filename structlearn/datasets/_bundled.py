"""Loaders for the small real data sets bundled in ``structlearn/datasets/data``.

The files are produced by ``tools/convert_datasets.py`` (lossless, compact
encodings: bit-packed pixels, integer byte planes); see that script for the
formats.
"""

import pathlib
import string

import numpy as np
from sklearn.utils import Bunch

__all__ = ["load_ocr_letters", "load_yeast", "load_scene"]

DATA_DIR = pathlib.Path(__file__).resolve().parent / "data"

_LETTERS = np.array(list(string.ascii_lowercase))


def _load_npz(name):
    path = DATA_DIR / name
    if not path.is_file():
        raise FileNotFoundError(
            f"bundled data file {path} is missing; reinstall structlearn or run "
            "tools/convert_datasets.py"
        )
    with np.load(path, allow_pickle=False) as f:
        return {k: f[k] for k in f.files}


def _join_planes(planes, shape):
    """Inverse of the byte-plane split: (n_planes, size) uint8 -> int32 array of ``shape``."""
    n_planes, size = planes.shape
    buf = np.zeros((size, 4), dtype=np.uint8)
    buf[:, :n_planes] = planes.T
    return buf.view("<i4").reshape(tuple(int(s) for s in shape))


_OCR_DESCR = """\
OCR letters (handwritten words)
-------------------------------

6,877 handwritten words (52,152 letters) collected by Rob Kassel at the MIT
Spoken Language Systems group, with the first (upper-case) letter of each
word removed, as prepared by Ben Taskar for the max-margin Markov network
experiments of Taskar, Guestrin and Koller (2003). Each letter is a 16x8
binary image (128 pixels, row-major, values 0/1) labelled with one of the 26
lower-case letters. Words are split into 10 folds (the ``fold`` field of the
original ``letter.data`` file, values 0..9, kept unchanged). The usual
protocol trains on one fold (about 10% of the words) and tests on the other
nine.

Source: http://ai.stanford.edu/~btaskar/ocr/ (distributed freely for research
use, no formal licence). References: B. Taskar, C. Guestrin, D. Koller,
"Max-Margin Markov Networks", NIPS 2003; R. Kassel, "A comparison of
approaches to on-line handwritten character recognition", PhD thesis, MIT,
1995.
"""


def load_ocr_letters(*, return_X_y=False, dtype=np.float64):
    """Load the OCR handwritten-letters sequence data set (bundled).

    6,877 words, 52,152 letters, 26 classes ('a'..'z'); each letter is a
    16x8 binary pixel image flattened row-major to 128 values.

    Source: Taskar, Guestrin & Koller, "Max-Margin Markov Networks", NIPS
    2003, on handwriting data collected by Rob Kassel (MIT Spoken Language
    Systems group); http://ai.stanford.edu/~btaskar/ocr/. Freely distributed
    for research; no formal licence is attached.

    Parameters
    ----------
    return_X_y : bool, default=False
        If True, return ``(X, y)`` instead of a Bunch.
    dtype : numpy dtype, default=np.float64
        dtype of the pixel matrices (values are 0 and 1).

    Returns
    -------
    data : sklearn.utils.Bunch
        - ``X``: list of 6,877 ndarrays, each of shape (n_letters_i, 128),
          pixel values 0/1 of the given ``dtype`` (views into one array).
        - ``y``: list of 6,877 ndarrays of shape (n_letters_i,), dtype '<U1',
          lower-case letters.
        - ``folds``: int ndarray of shape (6877,), values 0..9. These are the
          ``fold`` ids of the original ``letter.data`` file unchanged
          (identity mapping); fold 1 has 704 words.
        - ``lengths``: int ndarray of shape (6877,), letters per word.
        - ``target_names``: ndarray of the 26 letters 'a'..'z'.
        - ``DESCR``: description.
    (X, y) : tuple
        If ``return_X_y`` is True.
    """
    d = _load_npz("ocr_letters.npz")
    lengths = d["lengths"].astype(np.intp)
    pixels = np.unpackbits(d["pixels"], axis=1)[:, :128].astype(dtype, copy=False)
    letters = _LETTERS[d["labels"]]
    splits = np.cumsum(lengths)[:-1]
    X = np.split(pixels, splits)
    y = np.split(letters, splits)
    if return_X_y:
        return X, y
    return Bunch(
        X=X,
        y=y,
        folds=d["folds"].astype(np.intp),
        lengths=lengths,
        target_names=_LETTERS.copy(),
        DESCR=_OCR_DESCR,
    )


_YEAST_DESCR = """\
Yeast (multilabel gene functional classes)
------------------------------------------

2,417 genes of Saccharomyces cerevisiae described by 103 numeric features
(micro-array expression and phylogenetic profile data) and annotated with 14
functional classes (FunCat level 1); 4.24 labels per gene on average.

Source: A. Elisseeff and J. Weston, "A kernel method for multi-labelled
classification", NIPS 2001; distributed by the MULAN multi-label learning
repository (http://mulan.sourceforge.net/datasets-mlc.html), freely available
for research. The features are stored exactly (6 decimals, as in the source).
"""


def load_yeast(*, return_X_y=False):
    """Load the yeast multilabel data set (bundled).

    Source: Elisseeff & Weston, "A kernel method for multi-labelled
    classification", NIPS 2001, via the MULAN repository
    (http://mulan.sourceforge.net/datasets-mlc.html), freely available for
    research use.

    Parameters
    ----------
    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    data : sklearn.utils.Bunch
        - ``data``: float64 ndarray of shape (2417, 103).
        - ``target``: int64 ndarray of shape (2417, 14), 0/1 indicators.
        - ``feature_names``: list of 103 str ('Att1'..'Att103').
        - ``target_names``: list of 14 str ('Class1'..'Class14').
        - ``DESCR``: description.
    (data, target) : tuple
        If ``return_X_y`` is True.
    """
    d = _load_npz("yeast.npz")
    X = _join_planes(d["data_planes"], d["shape"]) / 1e6
    Y = d["target"].astype(np.int64)
    if return_X_y:
        return X, Y
    return Bunch(
        data=X,
        target=Y,
        feature_names=[f"Att{i}" for i in range(1, X.shape[1] + 1)],
        target_names=[f"Class{i}" for i in range(1, Y.shape[1] + 1)],
        DESCR=_YEAST_DESCR,
    )


_SCENE_DESCR = """\
Scene (multilabel natural scene classification)
-----------------------------------------------

2,407 images described by 294 colour features (mean and variance of the L, U
and V channels over a 7x7 grid of blocks, values in [0, 1]) and annotated
with 6 scene classes (Beach, Sunset, FallFoliage, Field, Mountain, Urban),
1.07 labels per image on average. The standard split has 1,211 training and
1,196 test images.

Source: M. R. Boutell, J. Luo, X. Shen and C. M. Brown, "Learning
multi-label scene classification", Pattern Recognition 37(9), 2004;
distributed by the MULAN multi-label learning repository
(http://mulan.sourceforge.net/datasets-mlc.html), freely available for
research. The features are stored exactly (6 significant digits, as in the
source).
"""

_SCENE_LABELS = ["Beach", "Sunset", "FallFoliage", "Field", "Mountain", "Urban"]


def load_scene(*, return_X_y=False):
    """Load the scene multilabel data set with its standard train/test split (bundled).

    Source: Boutell, Luo, Shen & Brown, "Learning multi-label scene
    classification", Pattern Recognition 37(9), 2004, via the MULAN
    repository (http://mulan.sourceforge.net/datasets-mlc.html), freely
    available for research use.

    Parameters
    ----------
    return_X_y : bool, default=False
        If True, return ``(X_train, Y_train, X_test, Y_test)``.

    Returns
    -------
    data : sklearn.utils.Bunch
        - ``X_train``: float64 ndarray of shape (1211, 294), values in [0, 1].
        - ``Y_train``: int64 ndarray of shape (1211, 6), 0/1 indicators.
        - ``X_test``: float64 ndarray of shape (1196, 294).
        - ``Y_test``: int64 ndarray of shape (1196, 6).
        - ``feature_names``: list of 294 str ('Att1'..'Att294').
        - ``target_names``: list of 6 str (Beach, Sunset, FallFoliage, Field,
          Mountain, Urban).
        - ``DESCR``: description.
    (X_train, Y_train, X_test, Y_test) : tuple
        If ``return_X_y`` is True.
    """
    d = _load_npz("scene.npz")
    out = {}
    for part in ("train", "test"):
        shape = d[f"X_{part}_shape"]
        mant = _join_planes(d[f"X_{part}_mantissa"], shape)
        expo = d[f"X_{part}_exponent"]
        out["X_" + part] = mant / np.power(10.0, expo)
        out["Y_" + part] = d["Y_" + part].astype(np.int64)
    if return_X_y:
        return out["X_train"], out["Y_train"], out["X_test"], out["Y_test"]
    return Bunch(
        **out,
        feature_names=[f"Att{i}" for i in range(1, out["X_train"].shape[1] + 1)],
        target_names=list(_SCENE_LABELS),
        DESCR=_SCENE_DESCR,
    )
