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

import importlib

# name -> submodule; loaded on first access, so that importing one submodule
# (MAP inference uses sorted_tables) does not import the others' dependencies
_WHERE = {
    "binary_pair_argmax": "binary", "make_binary_oracle": "binary",
    "make_binary_workspace": "binary",
    "inner_product_argmax": "inner_product", "make_inner_workspace": "inner_product",
    "indicator_argmax": "indicator", "make_indicator_oracle": "indicator",
    "make_cursor": "multimap", "make_multimap": "multimap", "multimap_from_keys": "multimap",
    "build_sorted_orders": "sorted_tables", "make_pair_workspace": "sorted_tables",
    "pair_argmax": "sorted_tables", "sorted_orders_for_graph": "sorted_tables",
    "unary_orders": "sorted_tables",
}


def __getattr__(name):
    if name in _WHERE:
        return getattr(importlib.import_module("." + _WHERE[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_WHERE))


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
