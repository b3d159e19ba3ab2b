import hashlib
import pathlib

import numpy as np
import pytest

DATA = pathlib.Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session")
def test_data():
    """The test data folder (``tests/data``, sources in its README)."""
    return DATA


def uai_instance(name):
    """Path of a UAI 2014 instance under ``tests/data/uai`` (gzipped)."""
    return DATA / "uai" / f"{name}.uai.gz"


def uai_reference(name):
    """Path of the instance's reference ``.MAP`` solution."""
    return DATA / "uai" / f"{name}.uai.MAP"


def array_digest(*arrays):
    """SHA-256 of arrays' dtypes, shapes and bytes (to compare bundled data
    with fingerprints of the reference files)."""
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str(a.dtype).encode())
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


@pytest.fixture(autouse=True)
def _parallel_chunks_at_any_size(monkeypatch):
    """Tests run small inputs: let ``n_jobs`` cut them into chunks and
    multilabel labels into groups as it would large ones (``MIN_CHUNK_WORK``
    and ``LABEL_GROUP_MIN_ENTRIES`` keep small work in one thread), so that
    the parallel paths are the ones tested.  ``tests/test_parallel_chunks.py``
    and ``tests/learners/test_partitions.py`` test the thresholds themselves."""
    monkeypatch.setattr("structlearn._parallel.MIN_CHUNK_WORK", 1)
    monkeypatch.setattr("structlearn.learners.gdmm_multilabel.LABEL_GROUP_MIN_ENTRIES", 0)
