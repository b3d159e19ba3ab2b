"""Exact MAP back-ends: chains, trees and enumeration (``viterbi``,
``tree``, ``brute_force``), best-first branch and bound over LP bounds with
roof duality and depth-first search (``exact``), the HiGHS MILP over the
local polytope (``ilp``), and batched binary forests.  Each back-end module
declares its methods in a ``METHODS`` table read by
:mod:`structlearn.inference.registry`.
"""
