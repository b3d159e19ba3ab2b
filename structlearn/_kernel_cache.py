"""numba's on-disk cache, invalidated when any kernel module of the package changes.

numba keys a cached kernel on the source of the module that defines it, while
the cached machine code also holds every kernel it calls from other modules.
A change to a called module alone (a ``git pull`` into an editable install
rewrites only the changed files) would leave its callers' cached code stale:
the old callee, silently.  :func:`stamp_package_kernels` registers a package
directory; from then on the kernels defined in it are cached under numba's
own locators (``NUMBA_CACHE_DIR``, the module's ``__pycache__``, the user-wide
folder, in numba's order) with a source stamp that adds a hash of every module
of the package that uses numba, so any change to one of them recompiles them
all on their next use.

The module's ``__pycache__`` is used only in a source checkout (a
``setup.cfg``, ``setup.py`` or ``pyproject.toml`` beside the package folder).
An installed package caches into numba's user-wide folder instead: cache files
inside ``site-packages/structlearn`` would outlive ``pip uninstall`` (they are
not in the wheel's record) and leave behind a folder that shadows a later
editable install as an empty namespace package.

Nothing is installed when numba's cache classes are not the expected ones, or
when ``NUMBA_CACHE_LOCATOR_CLASSES`` names the user's own locators; caching
then works as numba's defaults do.
"""

import functools
import hashlib
import os
import threading

__all__ = ["package_stamp", "stamp_package_kernels"]

_lock = threading.Lock()
_packages = []  # registered package directories (absolute, normalized)


@functools.lru_cache(maxsize=None)
def package_stamp(package_dir):
    """Hash (hex str) of the contents of the package's ``.py`` files that use numba.

    Parameters
    ----------
    package_dir : str
        Absolute path of the package directory (scanned recursively).
    """
    digest = hashlib.sha256()
    for root, dirs, files in os.walk(package_dir):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(root, name)
            with open(path, "rb") as fh:
                text = fh.read()
            if b"numba" in text:
                digest.update(os.path.relpath(path, package_dir).encode())
                digest.update(hashlib.sha256(text).digest())
    return digest.hexdigest()


_CHECKOUT_MARKERS = ("setup.cfg", "setup.py", "pyproject.toml")


@functools.lru_cache(maxsize=None)
def in_source_checkout(package_dir):
    """Whether ``package_dir`` sits in a source checkout (a build file beside it)."""
    parent = os.path.dirname(os.path.abspath(package_dir))
    return any(os.path.isfile(os.path.join(parent, m)) for m in _CHECKOUT_MARKERS)


def _package_of(py_file):
    path = os.path.normcase(os.path.abspath(py_file))
    for pkg in _packages:
        if path.startswith(pkg + os.sep):
            return pkg
    return None


def _numba_locators():
    """numba's file-backed locator classes and its cache implementation class, or None."""
    try:
        from numba.core import caching
    except ImportError:  # pragma: no cover - numba is a dependency
        return None
    names = ("UserProvidedCacheLocator", "InTreeCacheLocator", "UserWideCacheLocator")
    bases = [getattr(caching, n, None) or getattr(caching, "_" + n, None) for n in names]
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    if any(b is None for b in bases) or impl is None or not isinstance(
            getattr(impl, "_locator_classes", None), list):
        return None
    return bases, impl


class _PackageStampMixin:
    """A numba locator restricted to the registered packages' files, whose
    source stamp adds the package's stamp to numba's own."""

    in_tree = False  # True for the locator writing into the module's __pycache__

    @classmethod
    def from_function(cls, py_func, py_file):
        pkg = _package_of(py_file)
        if pkg is None or (cls.in_tree and not in_source_checkout(pkg)):
            return None
        return super().from_function(py_func, py_file)

    def get_source_stamp(self):
        return (super().get_source_stamp(), package_stamp(_package_of(self._py_file)))


_installed_classes = None


def stamp_package_kernels(package_dir):
    """Cache the kernels defined under ``package_dir`` with the package stamp.

    Call before the package's kernel modules are imported (numba picks a
    kernel's locator when its module defines it).  Idempotent; returns whether
    the stamped locators are in use.
    """
    global _installed_classes
    from numba.core import config

    if getattr(config, "CACHE_LOCATOR_CLASSES", ""):
        return False  # the user's own locators
    found = _numba_locators()
    if found is None:
        return False
    bases, impl = found
    with _lock:
        pkg = os.path.normcase(os.path.abspath(package_dir))
        if pkg not in _packages:
            _packages.append(pkg)
        if _installed_classes is None:
            _installed_classes = [
                type("Package" + b.__name__.lstrip("_"), (_PackageStampMixin, b),
                     {"in_tree": "InTree" in b.__name__})
                for b in bases]
            impl._locator_classes[:0] = _installed_classes
    return True
