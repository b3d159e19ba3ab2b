"""Training partitions held on ``dask.distributed`` workers: the machinery the
learners share (placement, sending arrays next to a partition, rounds that
may lose a worker, replicated copies, recovery).

A partition is a Python object that lives on a worker for the whole fit.  A
round submits one task per partition that updates it and returns ``(the
partition, its result)``; the partition's next state is the task's first
item (a new key, wherever dask keeps it).  After the first round and every
``CHECKPOINT_EVERY`` rounds each partition is deep-copied twice, the
copies asked for on two workers.  A partition lost with its worker (or whose task
was lost) goes back to its copy; the learner then rebuilds its weights from
every partition's duals (:meth:`DaskPartitions.rebuild`), which keeps its
certificate valid.  A partition whose copies are gone too, or rounds that
lose partitions ``MAX_FAILED_ROUNDS + 1`` times in a row, end the fit with
a ``RuntimeError`` naming the partition; any other error in a task is
raised as it is.
"""

import asyncio
import copy
import logging
import operator

__all__ = ["CHECKPOINT_EVERY", "DaskPartitions", "MAX_FAILED_ROUNDS", "bounded_scatter",
           "scatter_to_each", "worker_addresses"]

logger = logging.getLogger(__name__)

# rounds between the partitions' replicated copies (the rounds a lost
# partition's duals fall back by at most)
CHECKPOINT_EVERY = 5
# rounds in a row that may lose a partition before the fit gives up
MAX_FAILED_ROUNDS = 3


def lost_errors():
    """The exceptions that mean a partition's worker or data went away."""
    from concurrent.futures import CancelledError

    from distributed.client import FutureCancelledError, FuturesCancelledError
    from distributed.comm import CommClosedError
    from distributed.scheduler import KilledWorker

    # KeyError: data placed on a worker that went away in between; OSError
    # includes the TimeoutError of a scatter held up by a worker that died
    return (KilledWorker, CancelledError, FutureCancelledError, FuturesCancelledError,
            CommClosedError, OSError, KeyError)


def scatter_timeout(nbytes):
    """Seconds a scatter of ``nbytes`` may take before it counts as lost: a
    worker that died unnoticed would hold it up forever (20 s plus 20 MB/s)."""
    return 20.0 + nbytes / 20e6


def bounded_scatter(client, data, nbytes, **kwargs):
    """``client.scatter(data, hash=False, **kwargs)`` that raises
    ``TimeoutError`` (one of :func:`lost_errors`) after
    :func:`scatter_timeout` ``(nbytes)`` seconds.

    distributed's own ``timeout`` covers only the wait for workers to send
    to: a scatter to a worker that had just died, its address still listed,
    waited forever (seen in a test that kills a worker between two
    evaluations).  The client's ``sync`` bounds the whole call instead.
    """
    seconds = scatter_timeout(nbytes)
    return client.sync(client._scatter, data, hash=False, timeout=seconds,
                       callback_timeout=seconds, **kwargs)


def scatter_to_each(client, data, nbytes, workers):
    """A copy of ``data`` sent from the client to each of ``workers``, all
    within the time limit of :func:`bounded_scatter`: ``{address: future}``.

    Each copy is a scatter of its own, straight to its worker.  A scatter
    with ``broadcast=True`` copies between the workers under the scheduler's
    replication lock instead: one stuck on a worker that had just died held
    the lock past every later evaluation's time limit.

    Parameters
    ----------
    client : distributed.Client
    data : object
    nbytes : int
        Size of ``data`` (sets the time limit, for all the copies together).
    workers : sequence of str
        Worker addresses.

    Returns
    -------
    dict of str to distributed.Future
    """
    workers = list(workers)
    seconds = scatter_timeout(nbytes * len(workers))

    async def send():
        sent = await asyncio.gather(*[
            client._scatter(data, hash=False, timeout=seconds, workers=[address])
            for address in workers])
        return dict(zip(workers, sent))

    return client.sync(send, callback_timeout=seconds)


def _settle(futures):
    """Wait until every future is finished, failed or lost."""
    from distributed import wait

    try:
        wait(futures)
    except lost_errors():
        pass  # the statuses say which



def worker_addresses(client):
    """The cluster's workers, sorted, asked of the scheduler (the client's
    cached ``scheduler_info`` can lag behind the workers, even list none)."""
    return sorted(client.ncores())


class DaskPartitions:
    """Partitions on the workers of ``client``; subclasses define :meth:`rebuild`.

    Parameters
    ----------
    client : distributed.Client
    partitions : list
        The partition objects (sent to the workers in turn).
    """

    remote = True

    def __init__(self, client, partitions):
        workers = worker_addresses(client)
        if not workers:
            raise RuntimeError("the dask cluster has no workers to hold the training partitions")
        self.client = client
        self.futures = [client.scatter(part, workers=[workers[i % len(workers)]], hash=False)
                        for i, part in enumerate(partitions)]
        self.checkpoints = None
        self.rounds = self.failed_rounds = 0
        self.bytes_sent = self.bytes_received = 0
        self.recovered = 0  # partitions that went back to their copies

    @property
    def n_parts(self):
        return len(self.futures)

    @property
    def client_gone(self):
        """Whether the client was closed (the partitions are then out of reach)."""
        return self.client.status in ("closing", "closed")

    def _check_client(self):
        if self.client_gone:
            raise RuntimeError(
                f"the dask client was closed during the fit (after {self.rounds} rounds): the "
                "training partitions lived on its workers, so the fit cannot go on; fit again "
                "with an open client")

    def submit(self, func, futures, arrays, *args):
        """``func(*partitions, *arrays, *args)`` next to the first of
        ``futures`` (a future or a list of them), the arrays sent to its
        worker first (counted in ``bytes_sent``; None passes as it is)."""
        client = self.client
        futures = futures if isinstance(futures, list) else [futures]
        where = client.who_has([futures[0]]).get(futures[0].key) or None
        sent = [None if a is None else
                bounded_scatter(client, a, a.nbytes, workers=list(where) if where else None)
                for a in arrays]
        self.bytes_sent += sum(0 if a is None else a.nbytes for a in arrays)
        return client.submit(func, *futures, *sent, *args, pure=False)

    def run_round(self, func, arrays, args, counts=True, consume=None, groups=None):
        """One task per partition: ``func(partition, *arrays[p], *args[p])``
        returning ``(partition, result)`` (``arrays`` may be a generator: each
        partition's arrays are then made as its task is sent).  ``groups``:
        one task per group of partitions instead, ``func(*partitions of
        groups[g], *arrays[g], *args[g])`` returning ``(*partitions, result)``
        (every partition in exactly one group; the task runs where dask
        chooses, the arrays sent to the group's first partition's worker).
        Returns the results in partition (group) order, or None when the
        round lost a partition
        (the lost ones are then back at their copies and the weights
        rebuilt).  ``counts`` False: a call that updates the partitions
        without being a round (no round counted, no copies made).
        ``consume``: called as ``consume(p, result)`` on each result in
        partition order as it is fetched, so that the client holds one at a
        time (returns True instead of the results; a partition lost midway
        leaves the weights rebuilt from the duals all the same)."""
        client = self.client
        self._check_client()
        self.ensure()
        groups = groups or [(p,) for p in range(self.n_parts)]
        new = []
        try:
            calls = [self.submit(func, [self.futures[p] for p in g], a, *x)
                     for g, a, x in zip(groups, arrays, args)]
            new = [None] * self.n_parts
            for g, c in zip(groups, calls):
                for j, p in enumerate(g):
                    new[p] = client.submit(operator.getitem, c, j, pure=False)
            outs = [client.submit(operator.getitem, c, len(g), pure=False)
                    for g, c in zip(groups, calls)]
            if consume is None:
                results = client.gather(outs)
            else:
                results = True
                for p in range(len(outs)):
                    consume(p, client.gather(outs[p]))
                    outs[p] = None  # its result leaves the cluster's memory too
        except lost_errors() as exc:
            self._check_client()
            self.failed_rounds += 1
            if self.failed_rounds > MAX_FAILED_ROUNDS:
                raise RuntimeError(f"a training partition was lost in {self.failed_rounds} "
                                   f"rounds in a row: {exc!r}") from exc
            if len(new) == self.n_parts and all(n is not None for n in new):
                # the partitions whose round went through go on
                self.futures = [n if n.status == "finished" else f
                                for n, f in zip(new, self.futures)]
            self.ensure(force_rebuild=True)
            return None
        self.futures = new
        self.failed_rounds = 0
        if counts:
            self.rounds += 1
            if self.checkpoints is None or self.rounds % CHECKPOINT_EVERY == 0:
                self._checkpoint()
        return results

    def map(self, func, arrays=None, args=None):
        """``[func(partition, *arrays[p], *args[p])]`` gathered (read-only calls)."""
        self._check_client()
        self.ensure()
        arrays = arrays or [()] * self.n_parts
        args = args or [()] * self.n_parts
        return self.client.gather([self.submit(func, f, a, *x)
                                   for f, a, x in zip(self.futures, arrays, args)])

    def map_in_turn(self, func):
        """``func(partition)`` for every partition, all submitted at once and
        the results fetched one at a time, in partition order (a generator:
        the client holds one result at a time)."""
        self._check_client()
        self.ensure()
        calls = [self.client.submit(func, f, pure=False) for f in self.futures]
        for call in calls:
            yield call.result()

    def _checkpoint(self):
        """Two copies of every partition, each a key of its own, asked for on
        two workers (a replica made by ``client.replicate`` would not last:
        the scheduler's active memory manager drops extra replicas)."""
        from distributed import wait

        client = self.client
        workers = worker_addresses(client)
        holders = client.who_has(self.futures)
        if not workers:  # only the holders answered
            workers = sorted({w for ws in holders.values() for w in ws})
        if not workers:
            raise RuntimeError("the dask cluster has no workers to hold the partitions' copies")
        copies = []
        for p, f in enumerate(self.futures):
            where = list(holders.get(f.key) or ()) or [workers[p % len(workers)]]
            others = [w for w in workers if w not in where] or workers
            copies.append([client.submit(copy.deepcopy, f, pure=False, workers=[w],
                                         allow_other_workers=True)
                           for w in (where[0], others[p % len(others)])])
        wait([c for pair in copies for c in pair])
        self.checkpoints = copies

    def ensure(self, force_rebuild=False):
        """Partitions whose data went away go back to their last copies;
        then (or with ``force_rebuild``) the weights are rebuilt."""
        _settle(self.futures)
        lost = [p for p, f in enumerate(self.futures) if f.status != "finished"]
        if lost:
            if self.checkpoints is None:
                raise RuntimeError(f"training partition {lost[0]} was lost before its first "
                                   "copy was made")
            _settle([c for p in lost for c in self.checkpoints[p]])
            for p in lost:
                kept = [c for c in self.checkpoints[p] if c.status == "finished"]
                self.futures[p] = self.client.submit(copy.deepcopy, (kept or
                                                                     self.checkpoints[p])[0],
                                                     pure=False)
            _settle(self.futures)
            for p in lost:
                if self.futures[p].status != "finished":
                    raise RuntimeError(f"training partition {p} and its copies were lost")
            self.recovered += len(lost)
            logger.warning("training partitions %s were lost with their worker and went back "
                           "to their copies (at most %d rounds old)", lost, CHECKPOINT_EVERY)
        if lost or force_rebuild:
            self.rebuild()

    def rebuild(self):
        """Rebuild the weights from every partition's duals (the learner's)."""
        raise NotImplementedError

    def release(self):
        self.futures = []
        self.checkpoints = None
