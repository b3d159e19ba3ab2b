"""Forward-backward over stacked chains, with the kernel chosen by the number of labels."""

from ._chain_kernels import GROUP_ENTRIES

__all__ = ["forward_backward", "GEMM_MIN_LABELS"]

# From this many labels on, the scaled recursion of many sequences runs at
# once as matrix products (BLAS) instead of one vector-matrix product per
# token (3-4x faster at K = 225, slower below about 40 labels).
GEMM_MIN_LABELS = 40


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
