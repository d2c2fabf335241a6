"""The patches of PyTorch attributes that the torch.compile integration puts
in place (_compiled_calls.py, _compilation_marks.py), each once; the
integration's switch (_compiler_integration.py) takes them out together."""

from __future__ import annotations

from typing import Any

# (owner, attribute, original value) of each patch in place, in order.
_patches: list[tuple[Any, str, Any]] = []


def patch(owner: Any, name: str, replacement: Any) -> None:
    """Replaces owner.name, once; unpatch_all puts the original back."""
    original = getattr(owner, name)
    if getattr(original, "_torchscan_wrapped", False):
        return
    replacement._torchscan_wrapped = True
    setattr(owner, name, replacement)
    _patches.append((owner, name, original))


def unpatch_all() -> None:
    while _patches:
        owner, name, original = _patches.pop()
        setattr(owner, name, original)
