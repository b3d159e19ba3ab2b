"""Forward-backward over stacked chains, with the kernel chosen by the number of labels."""

from ._chain_kernels import GROUP_ENTRIES

__all__ = ["forward_backward", "GEMM_MIN_LABELS"]

# From this many labels on, the scaled recursion of many sequences runs at
# once as matrix products (BLAS) instead of one vector-matrix product per
# token: 0.55-0.75x of its time per position at K = 2-200 on the likelihood's
# blocks (benchmarks/bench_crf.py --part fb-kernels); below 8 labels the
# forward-backward is a small part of a fit, and the per-sequence kernel
# compiles in less time.
GEMM_MIN_LABELS = 8


def forward_backward(unary, offsets, trans, node_marg, trans_marg, logz):
    """Log-partition functions and marginals of a batch of linear chains.

    Arguments and outputs of
    :func:`._chain_kernels.forward_backward_batch`; with ``K >=
    GEMM_MIN_LABELS`` through
    :func:`._chain_kernels.forward_backward_grouped` (same numerics).  The
    choice is made here, outside the compiled code, so that a call with few
    labels never compiles the grouped kernel.
    """
    from ._chain_kernels import forward_backward_batch, forward_backward_grouped

    if unary.shape[1] < GEMM_MIN_LABELS:
        forward_backward_batch(unary, offsets, trans, node_marg, trans_marg, logz)
    else:
        forward_backward_grouped(unary, offsets, trans, node_marg, trans_marg, logz,
                                 GROUP_ENTRIES)
