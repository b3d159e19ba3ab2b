"""LP-relaxation MAP back-ends: AD3, PSDD, FISTA and SCM on the smoothed
dual, TRN, GDMM for large domains and for many binary factors, and cycle
tightening, over the shared local-polytope pieces (``_lp_common``,
``_lp_kernels``).  Each back-end module declares its methods in a
``METHODS`` table read by :mod:`structlearn.inference.registry`.
"""
