"""MAP, marginal and M-best back-ends behind one registry."""

from .registry import (available_methods, get_method, method_parameters, register_method,
                       solve_map)
from .result import MapResult
from .mbest import MBestResult, available_mbest_methods, solve_mbest
from .exact.forests import chain_marginals, tree_marginals

__all__ = [
    "MBestResult",
    "MapResult",
    "available_mbest_methods",
    "available_methods",
    "chain_marginals",
    "get_method",
    "method_parameters",
    "register_method",
    "solve_map",
    "solve_mbest",
    "tree_marginals",
]
