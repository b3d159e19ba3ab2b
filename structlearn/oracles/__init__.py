"""Factorwise maximization oracles (FMOs) and the sorted structures behind them.

* :mod:`~structlearn.oracles.sorted_tables` -- static sorted orders of fixed
  pairwise tables and the four-case search for MAP inference.
* :mod:`~structlearn.oracles.multimap` -- sorted multimaps (pools of indexed
  max-heaps) for numba.
* :mod:`~structlearn.oracles.indicator` -- indicator-factor oracle over a
  shared, updatable table (structural SVM bigram factors).
* :mod:`~structlearn.oracles.binary` -- joint oracle over all label pairs of
  a multilabel sample (binary variables, pairwise interaction factors).
* :mod:`~structlearn.oracles.inner_product` -- inner-product (unigram)
  oracle, exact or with nu-partition sampling.

Every module documents how to call its kernels from numba.
"""

from .binary import binary_pair_argmax, make_binary_oracle, make_binary_workspace
from .inner_product import inner_product_argmax, make_inner_workspace
from .indicator import indicator_argmax, make_indicator_oracle
from .multimap import make_cursor, make_multimap, multimap_from_keys
from .sorted_tables import (
    build_sorted_orders,
    make_pair_workspace,
    pair_argmax,
    sorted_orders_for_graph,
    unary_orders,
)

__all__ = [
    "binary_pair_argmax",
    "build_sorted_orders",
    "indicator_argmax",
    "inner_product_argmax",
    "make_indicator_oracle",
    "make_inner_workspace",
    "make_binary_oracle",
    "make_binary_workspace",
    "make_cursor",
    "make_multimap",
    "make_pair_workspace",
    "multimap_from_keys",
    "pair_argmax",
    "sorted_orders_for_graph",
    "unary_orders",
]
