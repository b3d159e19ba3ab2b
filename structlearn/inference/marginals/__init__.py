"""Marginals on loopy graphs: convex belief propagation (sum-product with
counting numbers), also the inference inside block belief propagation
learning (:mod:`structlearn.learners.convex_bp_learning`).
"""
