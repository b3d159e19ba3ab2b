"""structlearn: scikit-learn-style structured prediction.

Structural SVMs trained by dual-decomposed GDMM with sublinear factorwise
oracles, CRFs trained by block belief propagation, and MAP inference
back-ends, on discrete factor graphs.

Importing the package compiles nothing; numba kernels compile (and are
cached on disk, keyed on the sources of all the package's kernel modules) on
first use.
"""

__version__ = "0.1.0"

import os as _os  # noqa: E402

from ._kernel_cache import stamp_package_kernels as _stamp_package_kernels  # noqa: E402

# before any kernel module: cached kernels are keyed on every kernel module of
# the package, not only their own (see structlearn._kernel_cache)
_stamp_package_kernels(_os.path.dirname(_os.path.abspath(__file__)))

from ._config import config_context, get_config, set_config  # noqa: E402
from .graphs import FactorGraph  # noqa: E402

__all__ = ["FactorGraph", "__version__", "config_context", "get_config", "set_config"]
