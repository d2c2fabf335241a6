"""Module attribution for ``by_module``, with FlopCounterMode's labels.

PyTorch's ModuleTracker names modules and keeps the set of modules running
(forward, and backward through gradient hooks). We reuse it unchanged and
publish every change of that set to the native session, so operator calls
are attributed exactly as FlopCounterMode attributes them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from torch.utils.module_tracker import ModuleTracker

from torchscan_dispatch._native import MODULE_SCOPES, Measurement

_GLOBAL = "Global"


class _PublishingSet(set):
    """A set that reports every change of its contents."""

    def __init__(self, items: Iterable[str], publish: Callable[[set], None]) -> None:
        super().__init__(items)
        self._publish = publish

    def add(self, item: str) -> None:
        super().add(item)
        self._publish(self)

    def remove(self, item: str) -> None:
        super().remove(item)
        self._publish(self)

    def discard(self, item: str) -> None:
        super().discard(item)
        self._publish(self)


class ModuleScopes(ModuleTracker):
    """ModuleTracker whose ``parents`` set drives the session's module scope."""

    def __init__(self, measurement: Measurement) -> None:
        self._measurement = measurement
        super().__init__()

    @property
    def parents(self) -> set:
        return self._parents

    @parents.setter
    def parents(self, value: Iterable[str]) -> None:
        self._parents = _PublishingSet(value, self._publish)
        self._publish(self._parents)

    def _publish(self, parents: set) -> None:
        self._measurement.set_scope(MODULE_SCOPES, [p for p in parents if p != _GLOBAL])
