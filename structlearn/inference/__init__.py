"""MAP, marginal and M-best back-ends behind one registry."""

from .registry import available_methods, get_method, register_method, solve_map
from .result import MapResult

__all__ = ["MapResult", "available_methods", "get_method", "register_method", "solve_map"]
