"""The open nodes of the soft arc search's hybrid best-first search
(:mod:`.soft_arc`).

An open node is a right branch (a label removed) that a dive left behind. It
is kept as the domains of its node, packed to one bit per padded label, with
its parent's bound; the search rebuilds it from the root's node by
propagating those domains (:func:`._soft_arc_kernels.restore_node`).  The
least bound comes first, the deepest node on ties (nearer a leaf, so an
incumbent sooner).
"""

import heapq

import numpy as np

__all__ = ["OPEN_ENTRY_BYTES", "OpenNodes"]

OPEN_ENTRY_BYTES = 200  # an open node's bookkeeping beside its packed domains


class OpenNodes:
    """A heap of open nodes over ``n_labels`` padded labels (``n * K``),
    holding at most ``max_bytes``.

    Attributes
    ----------
    nbytes : int
        What the open nodes hold (their packed domains and entries).
    """

    def __init__(self, n_labels, max_bytes):
        self.n_labels = int(n_labels)
        self.max_bytes = int(max_bytes)
        self.row_bytes = (self.n_labels + 7) // 8 + OPEN_ENTRY_BYTES
        self.nbytes = 0
        self._heap = []
        self._pushed = 0  # the heap's tie-break after bound and depth

    def __len__(self):
        return len(self._heap)

    def least_bound(self):
        """The least open bound (``inf`` when none is open)."""
        return self._heap[0][0] if self._heap else np.inf

    def prune(self, cut):
        """Drop the open nodes of least bound while that is ``cut`` or more
        (nothing under them beats the incumbent)."""
        while self._heap and self._heap[0][0] >= cut:
            heapq.heappop(self._heap)
            self.nbytes -= self.row_bytes

    def fits(self, count):
        """Whether ``count`` more open nodes fit in ``max_bytes``."""
        return self.nbytes + count * self.row_bytes <= self.max_bytes

    def push(self, domains, removed, bounds, depths, cut):
        """Open the right branches of nodes: ``domains`` bool (m, n_labels)
        the nodes' domains (overwritten), ``removed`` int (m,) the padded
        label each branch removes, ``bounds`` (m,) their parents' bounds,
        ``depths`` (m,) their depths in the tree; those bounded by ``cut``
        or more are dropped."""
        domains[np.arange(domains.shape[0]), removed] = False
        packed = np.packbits(domains, axis=1)
        for t in np.flatnonzero(np.asarray(bounds) < cut):
            heapq.heappush(self._heap, (float(bounds[t]), -int(depths[t]), self._pushed,
                                        packed[t].tobytes()))
            self._pushed += 1
            self.nbytes += self.row_bytes

    def pop(self, cut):
        """The open node of least bound below ``cut`` as ``(bound, depth,
        domains)``, ``domains`` uint8 (n_labels,) (1: in the domain); the
        ones at ``cut`` or above are dropped on the way.  None when none is
        left."""
        self.prune(cut)
        if not self._heap:
            return None
        bound, depth, _, packed = heapq.heappop(self._heap)
        self.nbytes -= self.row_bytes
        return bound, -depth, np.unpackbits(np.frombuffer(packed, dtype=np.uint8),
                                            count=self.n_labels)
