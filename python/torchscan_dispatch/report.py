"""Report-level API: IncompleteAnalysisError and compare_reports."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscan_dispatch._library import hooks

__all__ = ["IncompleteAnalysisError", "compare_reports"]


class IncompleteAnalysisError(RuntimeError):
    """Raised by ``strict=True`` analyses; ``report`` holds the finished report."""

    def __init__(self, report: dict[str, Any], message: str | None = None) -> None:
        super().__init__(message or "Analysis is incomplete for: unknown metrics.")
        self.report = report


def compare_reports(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """Compares two reports of the same schema (ours or TorchScan 0.2's).

    Layers match by path + call_index; a numeric delta is given only when
    both sides are complete. Inputs are never mutated. Raises ValueError for
    mismatched schemas, duplicate layer calls or incompatible metric units,
    scopes or methods.
    """
    return hooks().compare_reports(before, after)
