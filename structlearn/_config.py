"""Global configuration, in the manner of :func:`sklearn.set_config`."""

import threading
from contextlib import contextmanager

__all__ = ["config_context", "get_config", "set_config"]

_PROGRESS_BAR = (False, True, "tqdm", "text")
_defaults = {"progress_bar": False}
_local = threading.local()


def _config():
    if not hasattr(_local, "config"):
        _local.config = dict(_defaults)
    return _local.config


def get_config():
    """The current settings (a copy), see :func:`set_config`.

    Returns
    -------
    config : dict
    """
    return dict(_config())


def set_config(*, progress_bar=None):
    """Set structlearn's global settings (for the calling thread).

    Parameters
    ----------
    progress_bar : {False, True, "tqdm", "text"}, optional
        Progress bars on estimator fits (one step per pass or iteration,
        with the objective and gap) and on predictions over many samples.
        True draws them with tqdm where it is installed (``pip install
        structlearn[progress]``) and as plain-text lines on stderr
        otherwise; "tqdm" requires tqdm; "text" always uses plain text;
        False (the default) draws none.  None leaves the setting as is.

    Raises
    ------
    ValueError
        For an unknown ``progress_bar``.
    ImportError
        For ``progress_bar="tqdm"`` without tqdm installed.
    """
    if progress_bar is not None:
        if not any(progress_bar is v or (isinstance(v, str) and progress_bar == v)
                   for v in _PROGRESS_BAR):
            raise ValueError(f"progress_bar must be one of False, True, 'tqdm', 'text'; "
                             f"got {progress_bar!r}")
        if progress_bar == "tqdm":
            require_tqdm()
        _config()["progress_bar"] = progress_bar


def require_tqdm():
    """Import tqdm, or raise an ImportError naming the extra that installs it."""
    try:
        import tqdm
    except ImportError:
        raise ImportError("progress_bar='tqdm' needs the tqdm package: pip install "
                          "'structlearn[progress]' (or pip install tqdm)") from None
    return tqdm


@contextmanager
def config_context(**settings):
    """Settings of :func:`set_config` for the duration of a ``with`` block.

    Examples
    --------
    >>> import structlearn
    >>> with structlearn.config_context(progress_bar="text"):
    ...     pass
    """
    old = get_config()
    set_config(**settings)
    try:
        yield
    finally:
        _config().update(old)
