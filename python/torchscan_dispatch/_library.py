"""Finds and loads the native library into the running torch process."""

from __future__ import annotations

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
        package_dir / "_lib" / _LIBRARY_NAME,
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
        try:
            torch.ops.load_library(path)
        except OSError as error:
            raise ImportError(
                f"Loading {path} into torch {torch.__version__} failed: {error}. "
                "The library must be built against this exact torch version."
            ) from error
        info = json.loads(torch.ops.torchscan._build_info())
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
