"""Exact inference on batches of linear chains: Viterbi and k-best Viterbi
(dense and mostly-zero transition tables), forward-backward marginals; the
kernels the chain learners and estimators call directly (no graph object).
"""
