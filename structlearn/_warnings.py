"""Warnings that point at the user's line, not at the library's."""

import os
import sys
import warnings

__all__ = ["warn_user"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn_user(message, category):
    """``warnings.warn`` with the stack level of the first caller outside
    structlearn (so that the warning names the user's call)."""
    level = 2  # stacklevel 2 is warn_user's caller, frame 1 below
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)
