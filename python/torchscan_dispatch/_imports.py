"""Importing what a user names on the command line: a model factory given as
``package.module:callable``, and torchvision where its compiled operators
cannot load.

PyPI's torchvision wheels are CUDA builds; beside a CPU build of torch their
``_C`` extension does not load, and ``import torchvision`` then fails on its
fake-tensor registrations for ``torchvision::nms`` and ``torchvision::qnms``
("operator does not exist"). Its models do not use those operators, so
declaring their schemas (no kernels) is enough for the models to build.
Other packages import torchvision too (transformers does), so this runs
before any factory's module is imported.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch

__all__ = ["call_factory", "prepare_torchvision"]

# The schema declarations, kept alive for the process (a dropped Library
# object unregisters what it defined).
_declared: list[torch.library.Library] = []


def _has_operator(name: str) -> bool:
    try:
        getattr(torch.ops.torchvision, name)
    except (AttributeError, RuntimeError):
        return False
    return True


def prepare_torchvision() -> None:
    """Makes ``import torchvision`` work: its own extension when it loads,
    else the two schemas its import needs. Nothing when torchvision is not
    installed or already imported."""
    if "torchvision" in sys.modules or _declared:
        return
    spec = importlib.util.find_spec("torchvision")
    if spec is None or spec.origin is None:
        return
    for extension in sorted(Path(spec.origin).parent.glob("_C*.so")):
        try:
            torch.ops.load_library(str(extension))
        except (OSError, RuntimeError):
            continue
        if _has_operator("nms"):
            return
    library = torch.library.Library("torchvision", "FRAGMENT")
    for name in ("nms", "qnms"):
        if not _has_operator(name):
            library.define(f"{name}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    _declared.append(library)


def _resolve(path: str) -> Callable[..., Any]:
    module_name, separator, attribute = path.partition(":")
    if not separator or not module_name or not attribute:
        raise ValueError(f"{path!r} is not an import path to a factory (expected package.module:callable)")
    # Not only torchvision imports torchvision (transformers does too).
    prepare_torchvision()
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"cannot import {module_name!r} (from {path!r}): {error}") from None
    value: Any = module
    for name in attribute.split("."):
        if not hasattr(value, name):
            raise ValueError(f"{module_name!r} has no attribute {attribute!r} (from {path!r})")
        value = getattr(value, name)
    if not callable(value):
        raise ValueError(f"{path!r} is not callable")
    return value


def call_factory(path: str, kwargs: Mapping[str, Any]) -> Any:
    """What the factory at ``path`` returns when called with ``kwargs``.
    Exceptions from the factory itself propagate."""
    return _resolve(path)(**kwargs)
