"""Warnings that point at the user's line, not at the library's."""

import os
import sys
import warnings

import sklearn.base

__all__ = ["warn_user"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
# scikit-learn's fit wrapper (parameter validation) sits between the user's
# call and the estimator's fit
_WRAPPER_FILES = (os.path.abspath(sklearn.base.__file__),)


def _inside(frame):
    path = os.path.abspath(frame.f_code.co_filename)
    return path.startswith(_PACKAGE_DIR) or path in _WRAPPER_FILES


def warn_user(message, category):
    """``warnings.warn`` with the stack level of the first caller outside
    structlearn and scikit-learn's fit wrapper (so that the warning names
    the user's call)."""
    level = 2  # stacklevel 2 is warn_user's caller, frame 1 below
    frame = sys._getframe(1)
    while frame is not None and _inside(frame):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)
