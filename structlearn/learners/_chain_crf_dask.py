"""The chain CRF's likelihood summed over parts that live on dask workers.

Inside ``joblib.parallel_config(backend="dask")`` an L-BFGS (or OWL-QN) fit
cuts the training sequences into one run per worker, of about equal tokens,
and sends each run once, as a copy of the training problem restricted to it
(the parameter layout and the run's split token features, labels and
offsets).  Every evaluation then sends the parameter vector to the workers
and sums, in run order, the negative log-likelihoods and gradients they
return; the penalty and the optimizer stay on the client.  An evaluation
that loses a worker sends the runs anew and is repeated (the runs hold no
state, so the fit is unchanged).  :class:`RemoteLikelihood` also sums runs
that dask built on the workers from data already there
(:mod:`.chain_crf_cluster`): a lost one is computed again by dask.
"""

import copy
import time

import numpy as np

from .._parallel import chunk_bounds
from ._chain_crf_kernels import SplitTokens
from ._dask_partitions import worker_addresses

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
    return _run_of(prob, _token_run(prob.tokens, t0, t1), prob.offsets[s0:s1 + 1] - t0,
                   prob.codes[t0:t1].copy(), s1 - s0)


def whole_run(prob):
    """``prob`` as one run (:func:`sub_problem` of all its sequences) that
    shares its arrays: for a problem built where its data are."""
    return _run_of(prob, prob.tokens, prob.offsets, prob.codes, prob.n_seq)


def _run_of(prob, tokens, offsets, codes, n_seq):
    sub = copy.copy(prob)
    sub.data = sub.indices = sub.indptr = None
    sub.row_of = sub.fixed = sub.remote = sub._T = None
    sub._tokens = tokens
    sub.offsets = offsets
    sub.codes = codes
    sub.n_seq = n_seq
    sub.n_jobs = None
    sub.parts = np.array([0, n_seq], dtype=np.int64)
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
    client : distributed.Client
    parts : list of Future
        The runs (problems of :func:`sub_problem`'s kind), one per future.
    resend : callable or None
        ``resend() -> parts`` after an evaluation lost a worker: runs that
        were scattered are sent anew; None for runs that dask computed on
        the workers (it computes a lost one again).
    broadcast : bool, default=True
        Send the parameters to each run's holder at once (from the client,
        within the time limit of :func:`._dask_partitions.scatter_to_each`);
        False: leave them where this process is (a task on a worker: a
        scatter from there has no time limit and waited forever on a
        worker that had died), and the evaluations fetch them.
    """

    def __init__(self, client, parts, resend=None, broadcast=True):
        self.client = client
        self.parts = parts
        self._resend = resend
        self._broadcast = broadcast
        self.bytes_sent = self.bytes_received = 0
        # seconds so far waiting on the runs, and adding their gradients
        self.local_time = self.merge_time = 0.0

    @classmethod
    def from_problem(cls, prob, client):
        """The likelihood of ``prob`` (its layout and tokens read once) cut
        into one run per worker, of about equal tokens, scattered."""
        workers = worker_addresses(client)
        if not workers:
            raise RuntimeError("the dask cluster has no workers to hold the likelihood's parts")
        bounds = chunk_bounds(np.diff(prob.offsets), len(workers))

        def send(timeout=True):
            """Send each run to a worker (again after a worker was lost: the
            runs are data, so a lost one is sent anew and the evaluation
            repeated; then within the time limit of :func:`bounded_scatter`)."""
            from ._dask_partitions import bounded_scatter

            runs = [sub_problem(prob, int(bounds[i]), int(bounds[i + 1]))
                    for i in range(len(bounds) - 1)]
            # a list is spread over the workers alive now
            if timeout:
                return bounded_scatter(client, runs, sum(run_nbytes(run) for run in runs))
            return client.scatter(runs, hash=False)

        return cls(client, send(timeout=None), send)

    def _send_to_holders(self, w):
        """``w`` scattered to the worker holding each run: one future per
        run (a ``KeyError``, one of the lost errors, for a run held nowhere)."""
        from ._dask_partitions import scatter_to_each

        holders = self.client.who_has(self.parts)
        where = []
        for part in self.parts:
            held_by = sorted(holders.get(part.key, ()))
            if not held_by:
                raise KeyError(f"the run {part.key!r} is held by no worker")
            where.append(held_by[0])
        sent = scatter_to_each(self.client, w, w.nbytes, sorted(set(where)))
        return [sent[address] for address in where]

    def nll_grad(self, w, g):
        """Summed negative log-likelihood; its gradient into ``g``.  The runs'
        gradients are fetched and added in run order, one at a time: the
        client holds one besides ``g``, however many runs there are."""
        from ._dask_partitions import MAX_FAILED_ROUNDS, lost_errors

        client = self.client
        if client.status in ("closing", "closed"):
            raise RuntimeError("the dask client was closed during the fit: the likelihood's "
                               "runs lived on its workers; fit again with an open client")
        for attempt in range(MAX_FAILED_ROUNDS + 1):
            try:
                if self._broadcast:
                    # a copy straight to each run's holder, within a time limit
                    w_copies = self._send_to_holders(w)
                    futures = [client.submit(_remote_nll_grad, part, w_copy, pure=False)
                               for part, w_copy in zip(self.parts, w_copies)]
                else:
                    w_remote = client.scatter(w, hash=False)
                    futures = [client.submit(_remote_nll_grad, part, w_remote, pure=False)
                               for part in self.parts]
                nll = 0.0
                received = 0
                waited = added = 0.0
                for i, future in enumerate(futures):
                    t0 = time.perf_counter()
                    part_nll, part_g = future.result()
                    future.release()
                    t1 = time.perf_counter()
                    if i == 0:
                        g[:] = part_g
                        nll = part_nll
                    else:
                        g += part_g
                        nll += part_nll
                    received += part_g.nbytes
                    del part_g
                    waited += t1 - t0
                    added += time.perf_counter() - t1
                break
            except lost_errors():
                if attempt == MAX_FAILED_ROUNDS:
                    raise
                if self._resend is not None:
                    self.parts = self._resend()
        self.bytes_sent += w.nbytes * len(self.parts)
        self.bytes_received += received
        self.local_time += waited
        self.merge_time += added
        return float(nll)
