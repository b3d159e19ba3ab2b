"""Convert the raw data sets in ``../shared/data`` into the compact files
bundled in ``structlearn/datasets/data``.

Usage::

    .venv/bin/python tools/convert_datasets.py [--source ../shared/data]

The bundled files are lossless with respect to their sources:

* ``ocr_letters.npz``: pixels bit-packed (16 bytes per 16x8 letter), letter
  codes 0..25, word lengths and fold ids 0..9 (kept as in the source).
* ``yeast.npz``: the features are printed with 6 decimals in the source, so
  they are stored exactly as integers ``round(x * 1e6)`` (int32), split into
  byte planes so that zlib compresses the slowly varying high bytes well.
  Labels as a 0/1 uint8 matrix.
* ``scene.npz``: the float32 features have 6 significant decimal digits, so
  they are stored as a decimal mantissa (0..999999, three byte planes) and a
  decimal exponent (int8): ``x = mantissa / 10**exponent``; the script checks
  that this reproduces every float32 value of the source bit for bit.
"""

import argparse
import gzip
import pathlib

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
OUT = REPO / "structlearn" / "datasets" / "data"


def byte_planes(values, n_planes=4):
    """Split an int32 array into little-endian byte planes of shape (n_planes, size)."""
    v = np.ascontiguousarray(values, dtype="<i4").ravel()
    planes = v.view(np.uint8).reshape(-1, 4).T
    if n_planes < 4 and np.any(planes[n_planes:]):
        raise ValueError("values do not fit in %d bytes" % n_planes)
    return np.ascontiguousarray(planes[:n_planes])


def convert_ocr(src):
    d = np.load(src / "ocr_letters.npz", allow_pickle=False)
    pixels = d["pixels"]
    labels = d["labels"]
    lengths = d["lengths"]
    folds = d["folds"]
    assert pixels.shape == (52152, 16) and int(d["n_pixels"]) == 128
    assert lengths.sum() == labels.size == pixels.shape[0]
    assert labels.max() < 26 and set(np.unique(folds).tolist()) == set(range(10))
    np.savez_compressed(
        OUT / "ocr_letters.npz",
        pixels=pixels.astype(np.uint8),
        labels=labels.astype(np.uint8),
        lengths=lengths.astype(np.int16),
        folds=folds.astype(np.int8),
    )


def convert_yeast(src):
    with gzip.open(src / "yeast.csv.gz", "rt") as f:
        header = f.readline().strip().split(",")
        raw = np.loadtxt(f, delimiter=",", dtype=np.float64)
    assert raw.shape == (2417, 117) and header[0] == "Att1" and header[103] == "Class1"
    X, Y = raw[:, :103], raw[:, 103:]
    q = np.round(X * 1e6)
    assert np.array_equal(q / 1e6, X), "yeast features have more than 6 decimals"
    assert set(np.unique(Y).tolist()) <= {0.0, 1.0}
    np.savez_compressed(
        OUT / "yeast.npz",
        data_planes=byte_planes(q.astype(np.int32), 4),
        shape=np.array(X.shape, dtype=np.int64),
        target=Y.astype(np.uint8),
    )


def decimal_split(X):
    """Mantissa (0..999999) and exponent with X == mantissa / 10**exponent in float32."""
    X64 = X.astype(np.float64)
    if np.any(X64 < 0):
        raise ValueError("negative values are not handled")
    e = np.zeros(X.shape, dtype=np.int64)
    nz = X64 > 0
    e[nz] = 5 - np.floor(np.log10(X64[nz])).astype(np.int64)
    m = np.round(X64 * 10.0**e)
    over = m >= 1e6
    e[over] -= 1
    m = np.round(X64 * 10.0**e)
    rec = (m / 10.0**e).astype(np.float32)
    if not np.array_equal(rec, X.astype(np.float32)):
        raise ValueError("the decimal split does not reproduce the float32 values")
    return m.astype(np.int32), e.astype(np.int8)


def convert_scene(src):
    d = np.load(src / "scene.npz", allow_pickle=False)
    out = {}
    for part in ("train", "test"):
        X, Y = d["X_" + part], d["Y_" + part]
        m, e = decimal_split(X)
        out["X_%s_mantissa" % part] = byte_planes(m, 3)
        out["X_%s_exponent" % part] = e
        out["X_%s_shape" % part] = np.array(X.shape, dtype=np.int64)
        out["Y_" + part] = Y.astype(np.uint8)
    np.savez_compressed(OUT / "scene.npz", **out)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--source", default=str(REPO.parent / "shared" / "data"))
    src = pathlib.Path(p.parse_args().source)
    OUT.mkdir(parents=True, exist_ok=True)
    convert_ocr(src)
    convert_yeast(src)
    convert_scene(src)
    for f in sorted(OUT.glob("*.npz")):
        print("%-20s %9d bytes" % (f.name, f.stat().st_size))


if __name__ == "__main__":
    main()
