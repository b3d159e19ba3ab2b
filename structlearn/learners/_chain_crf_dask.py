"""The chain CRF's likelihood summed over parts that live on dask workers.

Inside ``joblib.parallel_config(backend="dask")`` an L-BFGS (or OWL-QN) fit
cuts the training sequences into one run per worker, of about equal tokens,
and sends each run once, as a copy of the training problem restricted to it
(the parameter layout and the run's split token features, labels and
offsets).  Every evaluation then sends the parameter vector to the workers
and sums, in run order, the negative log-likelihoods and gradients they
return; the penalty and the optimizer stay on the client.  An evaluation
that loses a worker sends the runs anew and is repeated (the runs hold no
state, so the fit is unchanged).
"""

import copy

import numpy as np

from .._parallel import chunk_bounds
from ._chain_crf_kernels import SplitTokens

__all__ = ["RemoteLikelihood"]


def _token_run(tokens, t0, t1):
    """The split token features of tokens ``t0:t1`` (:class:`SplitTokens`)."""
    r0, r1 = tokens.row_ptr[t0], tokens.row_ptr[t1]
    p0, p1 = tokens.pair_ptr[t0], tokens.pair_ptr[t1]
    return SplitTokens(tokens.row_ptr[t0:t1 + 1] - r0, tokens.row_slot[r0:r1].copy(),
                       np.ascontiguousarray(tokens.row_value[r0:r1]),
                       tokens.pair_ptr[t0:t1 + 1] - p0, tokens.pair_feature[p0:p1].copy(),
                       np.ascontiguousarray(tokens.pair_value[p0:p1]))


def sub_problem(prob, s0, s1):
    """``prob`` restricted to sequences ``s0:s1``: the same parameter layout,
    the run's tokens, one part, no features kept beyond the split tokens."""
    t0, t1 = int(prob.offsets[s0]), int(prob.offsets[s1])
    tokens = _token_run(prob.tokens, t0, t1)
    sub = copy.copy(prob)
    sub.data = sub.indices = sub.indptr = None
    sub.row_of = sub.fixed = sub.remote = sub._T = None
    sub._tokens = tokens
    sub.offsets = prob.offsets[s0:s1 + 1] - t0
    sub.codes = prob.codes[t0:t1].copy()
    sub.n_seq = s1 - s0
    sub.n_jobs = None
    sub.parts = np.array([0, s1 - s0], dtype=np.int64)
    sub._part_grads = []
    sub._scratch = []
    return sub


def run_nbytes(sub):
    """Bytes of a run's arrays (its tokens, labels and offsets)."""
    return sum(a.nbytes for a in sub._tokens) + sub.codes.nbytes + sub.offsets.nbytes


def _remote_nll_grad(sub, w):
    g = np.empty(sub.n_params)
    return sub._nll_grad(w, g), g


class RemoteLikelihood:
    """The likelihood's runs on the workers of ``client``.

    Parameters
    ----------
    prob : _ChainProblem
        The training problem (its layout and tokens are read once).
    client : distributed.Client
    """

    def __init__(self, prob, client):
        workers = sorted(client.scheduler_info()["workers"])
        if not workers:
            raise RuntimeError("the dask cluster has no workers to hold the likelihood's parts")
        self.client = client
        self.prob = prob
        self.bounds = chunk_bounds(np.diff(prob.offsets), len(workers))
        self.bytes_sent = self.bytes_received = 0
        self._send_parts(timeout=None)

    def _send_parts(self, timeout=True):
        """Send each run to a worker (again after a worker was lost: the runs
        are data, so a lost one is sent anew and the evaluation repeated;
        then within :func:`scatter_timeout`)."""
        from ._dask_partitions import scatter_timeout

        b = self.bounds
        runs = [sub_problem(self.prob, int(b[i]), int(b[i + 1])) for i in range(len(b) - 1)]
        if timeout:
            timeout = scatter_timeout(sum(run_nbytes(run) for run in runs))
        # a list is spread over the workers alive now
        self.parts = self.client.scatter(runs, hash=False, timeout=timeout)

    def nll_grad(self, w, g):
        """Summed negative log-likelihood; its gradient into ``g``."""
        from ._dask_partitions import MAX_FAILED_ROUNDS, lost_errors, scatter_timeout

        client = self.client
        if client.status in ("closing", "closed"):
            raise RuntimeError("the dask client was closed during the fit: the likelihood's "
                               "runs lived on its workers; fit again with an open client")
        for attempt in range(MAX_FAILED_ROUNDS + 1):
            try:
                # to the workers holding the runs only, within a time limit: a
                # broadcast to every worker waited forever on one that had died
                holders = client.who_has(self.parts)
                workers = sorted({a for where in holders.values() for a in where})
                w_remote = client.scatter(w, workers=workers or None, broadcast=True,
                                          hash=False, timeout=scatter_timeout(w.nbytes))
                outs = client.gather([client.submit(_remote_nll_grad, part, w_remote,
                                                    pure=False)
                                      for part in self.parts])
                break
            except lost_errors():
                if attempt == MAX_FAILED_ROUNDS:
                    raise
                self._send_parts()
        self.bytes_sent += w.nbytes * len(self.parts)
        self.bytes_received += sum(out[1].nbytes for out in outs)
        g[:] = outs[0][1]
        nll = outs[0][0]
        for part_nll, part_g in outs[1:]:
            g += part_g
            nll += part_nll
        return float(nll)
