"""Discrete factor graphs: storage, builders, structure tests and UAI files."""

from .builders import chain_graph, complete_graph, graph_from_edges, grid_edges, grid_graph
from .factor_graph import FactorGraph

__all__ = [
    "FactorGraph",
    "chain_graph",
    "complete_graph",
    "graph_from_edges",
    "grid_edges",
    "grid_graph",
]
