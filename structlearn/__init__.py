"""structlearn: scikit-learn-style structured prediction.

Structural SVMs trained by dual-decomposed GDMM with sublinear factorwise
oracles, CRFs trained by block belief propagation, and MAP inference
back-ends, on discrete factor graphs.

Importing the package compiles nothing; numba kernels compile (and are
cached on disk) on first use.
"""

__version__ = "0.1.0"

from ._config import config_context, get_config, set_config  # noqa: E402
from .graphs import FactorGraph  # noqa: E402

__all__ = ["FactorGraph", "__version__", "config_context", "get_config", "set_config"]
