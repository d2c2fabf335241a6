"""Finds and loads the native library into the running torch process."""

from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
import json
import os
import threading
from pathlib import Path

import torch

_LIBRARY_NAME = "libtorchscan_dispatch.so"
_ENV_OVERRIDE = "TORCHSCAN_DISPATCH_LIBRARY"

_lock = threading.Lock()
_loaded_path: str | None = None


def _candidates() -> list[Path]:
    package_dir = Path(__file__).resolve().parent
    return [
        # Installed from a wheel: the library sits inside the package.
        _packaged_library(),
        # A source checkout built with `bazel build //python:libtorchscan_dispatch.so`.
        package_dir.parent.parent / "bazel-bin" / "python" / _LIBRARY_NAME,
    ]


def library_path() -> str:
    """The path of the native library this process uses (or would load)."""
    override = os.environ.get(_ENV_OVERRIDE)
    if override:
        if not os.path.isfile(override):
            raise ImportError(f"{_ENV_OVERRIDE}={override!r} is not a file.")
        return os.path.abspath(override)
    for candidate in _candidates():
        if candidate.is_file():
            return str(candidate)
    searched = ", ".join(str(c) for c in _candidates())
    raise ImportError(
        f"Cannot find {_LIBRARY_NAME} (searched {searched}). Build it with "
        f"`bazel build //python:{_LIBRARY_NAME}` or set {_ENV_OVERRIDE}."
    )


def _packaged_library() -> Path:
    return Path(__file__).resolve().parent / "_lib" / _LIBRARY_NAME


def _check_packaged_build(path: str) -> None:
    """Refuses, before dlopen, a wheel's library built for another torch.

    A wheel made by tools/build_wheel records the torch version its library
    was built against in _build_info.py. Loading a library built against
    another torch release can crash the process instead of raising, so the
    versions are compared before the library is loaded. Libraries from a
    checkout or $TORCHSCAN_DISPATCH_LIBRARY are checked after loading.
    """
    if Path(path) != _packaged_library():
        return
    try:
        from torchscan_dispatch import _build_info
    except ImportError:
        return
    built_for = _build_info.TORCH_VERSION
    if built_for != torch.__version__:
        raise ImportError(
            f"torchscan_dispatch {_build_info.PACKAGE_VERSION} was built against "
            f"torch {built_for}, but this process runs torch {torch.__version__}; "
            f"install torch=={built_for} (`pip install torch=={built_for}`), or a "
            f"torchscan_dispatch wheel built for torch {torch.__version__} "
            "(tools/build_wheel). A dispatcher plugin is not ABI-compatible across "
            "torch releases, so the library was not loaded."
        )


def _check_owner(owner: str | None, path: str) -> None:
    """Refuses when torch.ops.torchscan belongs to another copy of the library.

    The first copy loaded into a process owns the counting fallback and the
    operators; a later copy's registrations fail softly (recorded, never
    thrown inside the dynamic loader) and it stays inert. Using the other
    copy's operators in its place would run code of unknown version.
    """
    if not owner:
        return
    try:
        same = os.path.samefile(owner, path)
    except OSError:
        same = False
    if not same:
        raise ImportError(
            f"Another copy of TorchScan Dispatch, loaded earlier from {owner}, owns the "
            f"torchscan operators and the counting fallback of this process, so {path} "
            "cannot be used; load only one copy (set TORCHSCAN_DISPATCH_LIBRARY to it)."
        )


def load_library() -> str:
    """Loads the native library once per process and returns its path.

    Raises ImportError when the library was built against another torch
    version: a dispatcher plugin is not ABI-compatible across releases.
    """
    global _loaded_path
    with _lock:
        if _loaded_path is not None:
            return _loaded_path
        path = library_path()
        _check_packaged_build(path)
        try:
            torch.ops.load_library(path)
        except OSError as error:
            raise ImportError(
                f"Loading {path} into torch {torch.__version__} failed: {error}. "
                "The library must be built against this exact torch version."
            ) from error
        info = json.loads(torch.ops.torchscan._build_info())
        _check_owner(info.get("library_path"), path)
        if not info["counting_available"]:
            raise ImportError(f"{path} loaded, but {info['counting_error']}.")
        if info["torch_version"] != torch.__version__:
            raise ImportError(
                f"{path} was built against torch {info['torch_version']}, but this "
                f"process runs torch {torch.__version__}; rebuild it (or install the "
                "matching wheel)."
            )
        _loaded_path = path
        return path


def _check_at_import() -> None:
    """An installed wheel built for another torch fails at import, before
    anything is loaded; other problems surface when the library is first
    used."""
    try:
        path = library_path()
    except ImportError:
        return
    _check_packaged_build(path)


_check_at_import()


def _loaded_library_path() -> str:
    """The path of the loaded copy of the library (dlopen of a loaded path
    returns that copy)."""
    path = load_library()
    return json.loads(torch.ops.torchscan._build_info()).get("library_path") or path


@functools.cache
def hooks():
    """The library's CPython extension module (python/operators/
    hooks_module.cc): the native bodies of the module hooks of by_module and
    crawl_module and the library's functions Python calls, imported from
    the loaded copy of the library."""
    name = "torchscan_dispatch._hooks"
    loader = importlib.machinery.ExtensionFileLoader(name, _loaded_library_path())
    spec = importlib.util.spec_from_loader(name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def compiled_region_calls():
    """The extension module, for its functions called around every compiled
    call and compiled graph (python/operators/compiled_region_calls.h):
    plain C calls, a tenth of a torch.ops call's cost."""
    return hooks()


def flex_attention_calls():
    """The extension module, for its functions called by the eager flex
    attention hook (python/operators/flex_attention_calls.h)."""
    return hooks()
