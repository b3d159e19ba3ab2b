"""structlearn: scikit-learn-style structured prediction.

Structural SVMs trained by dual-decomposed GDMM with sublinear factorwise
oracles, CRFs trained by block belief propagation, and MAP inference
back-ends, on discrete factor graphs.

Importing the package compiles nothing; numba kernels compile (and are
cached on disk) on first use.
"""

__version__ = "0.1.0"

from .graphs import FactorGraph  # noqa: E402

__all__ = ["FactorGraph", "__version__"]
