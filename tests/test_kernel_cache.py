"""numba's on-disk cache is keyed on all kernel modules of a stamped package."""

import os
import subprocess
import sys
import textwrap

from structlearn import _kernel_cache


def _write(path, text):
    path.write_text(textwrap.dedent(text))


def _run(code, env):
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_a_changed_callee_module_recompiles_its_callers(tmp_path):
    """A cached kernel calling a kernel of another module of the package sees
    that module's new code in the next process (numba alone would load the
    caller's cached machine code, the old callee inside)."""
    pkg = tmp_path / "stampdemo"
    pkg.mkdir()
    _write(pkg / "__init__.py", """\
        import os
        from structlearn._kernel_cache import stamp_package_kernels
        stamp_package_kernels(os.path.dirname(os.path.abspath(__file__)))
        """)
    _write(pkg / "b.py", """\
        import numba
        @numba.njit(cache=True)
        def g(x):
            return x + 1
        """)
    _write(pkg / "a.py", """\
        import numba
        from .b import g
        @numba.njit(cache=True)
        def f(x):
            return g(x) * 10
        """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path)] + sys.path),
               NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    code = "from stampdemo.a import f; print(f(1))"
    assert _run(code, env) == "20"
    assert _run(code, env) == "20"  # loaded from the cache
    assert any(p.suffix == ".nbc" for p in (tmp_path / "cache").rglob("*"))
    _write(pkg / "b.py", """\
        import numba
        @numba.njit(cache=True)
        def g(x):
            return x + 2
        """)
    assert _run(code, env) == "30"


def test_package_kernels_use_the_stamped_locators():
    from structlearn.learners._gdmm_chain_kernels import gdmm_chain_multipliers

    locator = gdmm_chain_multipliers._cache._impl.locator
    assert isinstance(locator, _kernel_cache._PackageStampMixin)
    own, package = locator.get_source_stamp()
    pkg_dir = os.path.dirname(os.path.abspath(_kernel_cache.__file__))
    assert package == _kernel_cache.package_stamp(os.path.normcase(pkg_dir))


def test_package_stamp_follows_the_numba_modules_only(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "k.py").write_text("import numba\n")
    (tmp_path / "sub" / "m.py").write_text("import numba\nx = 1\n")
    (tmp_path / "plain.py").write_text("x = 1\n")
    stamp = _kernel_cache.package_stamp
    first = stamp(str(tmp_path))
    stamp.cache_clear()
    (tmp_path / "plain.py").write_text("x = 2\n")  # no numba: not in the stamp
    assert stamp(str(tmp_path)) == first
    stamp.cache_clear()
    (tmp_path / "sub" / "m.py").write_text("import numba\nx = 2\n")
    assert stamp(str(tmp_path)) != first
    stamp.cache_clear()


def _demo_package(root):
    pkg = root / "cachedemo"
    pkg.mkdir(parents=True)
    _write(pkg / "__init__.py", """\
        import os
        from structlearn._kernel_cache import stamp_package_kernels
        stamp_package_kernels(os.path.dirname(os.path.abspath(__file__)))
        """)
    _write(pkg / "k.py", """\
        import numba
        @numba.njit(cache=True)
        def f(x):
            return x * 3
        """)
    return pkg


def _cache_files(folder):
    return [p for p in folder.rglob("*") if p.suffix in (".nbi", ".nbc")]


def test_an_installed_package_caches_outside_its_folder(tmp_path):
    """Installed (no build file beside the package): kernels cache into the
    user-wide folder, nothing lands in the package's __pycache__ (files there
    would survive ``pip uninstall``)."""
    site = tmp_path / "site-packages"
    pkg = _demo_package(site)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(PYTHONPATH=os.pathsep.join([str(site)] + sys.path),
               XDG_CACHE_HOME=str(tmp_path / "user-cache"))
    code = "from cachedemo.k import f; print(f(2))"
    assert _run(code, env) == "6"
    assert _cache_files(pkg) == []
    assert _cache_files(tmp_path / "user-cache")


def test_a_source_checkout_caches_beside_its_modules(tmp_path):
    checkout = tmp_path / "checkout"
    pkg = _demo_package(checkout)
    (checkout / "setup.cfg").write_text("[metadata]\nname = cachedemo\n")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(PYTHONPATH=os.pathsep.join([str(checkout)] + sys.path),
               XDG_CACHE_HOME=str(tmp_path / "user-cache"))
    assert _run("from cachedemo.k import f; print(f(2))", env) == "6"
    assert _cache_files(pkg / "__pycache__")
    assert not (tmp_path / "user-cache").exists() or not _cache_files(tmp_path / "user-cache")
