"""Discrete factor graphs: storage, builders, structure tests and UAI files."""

from .builders import chain_graph, complete_graph, graph_from_edges, grid_edges, grid_graph
from .factor_graph import FactorGraph
from .propagation import Propagation, propagate_forbidden_labels, prune_dominated_labels
from .uai import (read_uai, read_uai_evidence, read_uai_solution, read_uai_solutions, write_uai,
                  write_uai_solution, write_uai_solutions)
from .structure import (
    bfs_schedule,
    chain_order,
    component_subgraphs,
    connected_components,
    is_chain,
    is_forest,
    merge_parallel_factors,
)

__all__ = [
    "FactorGraph",
    "Propagation",
    "propagate_forbidden_labels",
    "prune_dominated_labels",
    "bfs_schedule",
    "chain_order",
    "component_subgraphs",
    "connected_components",
    "is_chain",
    "is_forest",
    "merge_parallel_factors",
    "chain_graph",
    "complete_graph",
    "graph_from_edges",
    "grid_edges",
    "grid_graph",
    "read_uai",
    "read_uai_evidence",
    "read_uai_solution",
    "read_uai_solutions",
    "write_uai",
    "write_uai_solution",
    "write_uai_solutions",
]
