"""A first fit compiles only the kernels it uses: with few classes SequenceSSVM
runs dense pair scans, so the sorted oracle, partition sampling, sparse weight
rows, the float32 passes and the sparse-table Viterbi stay uncompiled (their
branches are pruned on None arguments before typing).  Checked in a fresh process with an empty
compilation cache, where a kernel has a compiled signature only once something
called or typed it (kernels loaded from the cache do not compile their callees)."""

import json
import os
import subprocess
import sys

import pytest

SCRIPT = r"""
import json, warnings
warnings.simplefilter("ignore")
from structlearn.datasets import make_chain_data
from structlearn.estimators import SequenceSSVM
from structlearn.inference.chains import _chain_kernels as ck
from structlearn.learners import _gdmm_chain_kernels as gk
from structlearn.oracles import _inner_kernels as ik, _multimap_kernels as mk
from structlearn.oracles import _sparse_rows_kernels as sk
X, y = make_chain_data(20, length=5, n_labels=5, n_features=12, random_state=0)
SequenceSSVM(max_iter=3, random_state=0, **KW).fit(X, y).predict(X)
kernels = {"heap_set_key": mk.heap_set_key, "sparse_rows_fmo": sk.sparse_rows_fmo,
           "sparse_rows_update": sk.sparse_rows_update,
           "inner_product_fmo_sampled": ik.inner_product_fmo_sampled,
           "viterbi_batch_sparse_rows": ck.viterbi_batch_sparse_rows,
           "inner_product_fmo32": ik.inner_product_fmo32,
           "_bigram_step": gk._bigram_step}
print(json.dumps({name: len(k.signatures) > 0 for name, k in kernels.items()}))
"""


def _compiled(kw, cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))
    out = subprocess.run([sys.executable, "-c", SCRIPT.replace("KW", kw)], capture_output=True,
                         text=True, timeout=900, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_small_fit_compiles_only_the_dense_paths(tmp_path):
    compiled = _compiled("{}", tmp_path)
    assert compiled.pop("_bigram_step")  # the detection sees the callees a fit compiles
    assert not any(compiled.values()), compiled
