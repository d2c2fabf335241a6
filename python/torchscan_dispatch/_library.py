"""Finds and loads the native library into the running torch process."""

from __future__ import annotations

import ctypes
import functools
import importlib.machinery
import importlib.util
import json
import os
import threading
from pathlib import Path
from typing import Any

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


def _c_function(library: ctypes.CDLL, name: str, argtypes: list[Any], restype: Any) -> Any:
    """The library's C function `name`, typed."""
    function = getattr(library, name)
    function.argtypes = argtypes
    function.restype = restype
    return function


class CompiledRegionCalls:
    """The library's C functions for the calls made around every compiled
    call and compiled graph (python/operators/compiled_region_calls.cc),
    through ctypes: torch.ops costs five times as much per call. Each returns
    -1 on error."""

    def __init__(self, library: ctypes.CDLL) -> None:
        self.counting_key_bits = _c_function(library, "torchscan_counting_key_bits", [], ctypes.c_uint64)
        self.enter_compiled_call = _c_function(
            library, "torchscan_enter_compiled_call", [ctypes.c_char_p], ctypes.c_int32
        )
        self.exit_compiled_call = _c_function(library, "torchscan_exit_compiled_call", [ctypes.c_int32], None)
        self.change_compiling = _c_function(library, "torchscan_change_compiling", [ctypes.c_int32], None)
        self.enter_compiled_graph = _c_function(library, "torchscan_enter_compiled_graph", [], ctypes.c_uint64)
        self.exit_compiled_graph = _c_function(
            library, "torchscan_exit_compiled_graph", [ctypes.c_uint64], ctypes.c_int32
        )
        self.record_unseen = _c_function(
            library, "torchscan_record_unseen", [ctypes.c_char_p, ctypes.c_char_p], ctypes.c_int32
        )


class FlexAttentionCalls:
    """The library's C functions for the eager flex attention hook
    (python/operators/flex_attention_calls.cc, _flex_attention.py)."""

    def __init__(self, library: ctypes.CDLL) -> None:
        self.counting_here = _c_function(library, "torchscan_counting_here", [], ctypes.c_int32)
        self.stream_capturing = _c_function(library, "torchscan_stream_capturing", [ctypes.c_char_p], ctypes.c_int32)
        self.enter_not_counted = _c_function(library, "torchscan_enter_not_counted", [], ctypes.c_void_p)
        self.exit_not_counted = _c_function(library, "torchscan_exit_not_counted", [ctypes.c_void_p], None)
        self.record_mask = _c_function(
            library,
            "torchscan_record_flex_attention_mask",
            [ctypes.c_char_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_char_p],
            ctypes.c_int32,
        )


def _loaded_library_path() -> str:
    """The path of the loaded copy of the library (dlopen of a loaded path
    returns that copy)."""
    path = load_library()
    return json.loads(torch.ops.torchscan._build_info()).get("library_path") or path


@functools.cache
def _loaded_library() -> ctypes.CDLL:
    return ctypes.CDLL(_loaded_library_path())


@functools.cache
def hooks():
    """The library's CPython extension module, the native bodies of the
    module hooks of by_module and crawl_module (python/operators/
    hooks_module.cc), imported from the loaded copy of the library."""
    name = "torchscan_dispatch._hooks"
    loader = importlib.machinery.ExtensionFileLoader(name, _loaded_library_path())
    spec = importlib.util.spec_from_loader(name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@functools.cache
def compiled_region_calls() -> CompiledRegionCalls:
    """The compiled-region C functions of the loaded copy of the library."""
    return CompiledRegionCalls(_loaded_library())


@functools.cache
def flex_attention_calls() -> FlexAttentionCalls:
    """The flex attention C functions of the loaded copy of the library."""
    return FlexAttentionCalls(_loaded_library())
