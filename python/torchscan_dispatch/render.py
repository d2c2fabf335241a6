"""Reports for people: one self-contained HTML page, folded stacks for
flame-graph tools, and the diagnostics listed for a terminal.

All three run in C++ (``report/render/``), called through the library's
extension module with the report dicts themselves
(``python/operators/report_functions.h``).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from typing import Any

from torchscan_dispatch._library import hooks

__all__ = ["list_diagnostics", "to_folded", "to_html", "write_html"]


def _check_document(value: Any, name: str) -> None:
    if not isinstance(value, Mapping):
        raise TypeError(
            f"{name} must be a dict (a report from crawl_module, summary, measure_flops or compare_reports), "
            f"got {type(value).__name__}"
        )


def _check_documents(report: Any, before: Any, after: Any) -> None:
    """A TypeError for an argument that is not a dict; the library names
    anything in one that no JSON report holds (a ValueError)."""
    for value, name in ((before, "before"), (after, "after")):
        if value is not None:
            _check_document(value, name)
    _check_document(report, "report")


def folded_stacks(
    report: Mapping[str, Any], before: Mapping[str, Any] | None, after: Mapping[str, Any] | None
) -> tuple[str, bool, list[str]]:
    """The folded lines, whether the FLOPs are partial (every value a lower
    bound) and the notes on paths whose children hold more than the path:
    ``to_folded`` and the command line's ``--folded``."""
    _check_documents(report, before, after)
    return hooks().folded_stacks(report, before, after)


def _device_document(device_model: Any) -> dict[str, Any] | None:
    """The device the page's roofline is drawn for, as the library reads it."""
    if device_model is None:
        return None
    # Imported here: the roofline module imports torch.
    from torchscan_dispatch.roofline import resolve_device

    spec = resolve_device(device_model)
    return {
        "name": spec.name,
        "peak_flops": {precision: float(peak) for precision, peak in spec.peak_flops.items()},
        "memory_bandwidth": float(spec.memory_bandwidth),
    }


def to_html(
    report: Mapping[str, Any],
    *,
    before: Mapping[str, Any] | None = None,
    after: Mapping[str, Any] | None = None,
    title: str = "",
    device_model: Any = None,
) -> str:
    """The HTML page of ``report``: an analysis (``crawl_module``), a FLOP
    report (``measure_flops``) or a diff (``compare_reports``). With a diff,
    ``before`` and ``after`` (the two reports it was computed from) add their
    charts side by side, the changed layers outlined. ``title`` defaults to
    the model's type.

    A FLOP report's page shows its bytes moved beside the FLOPs (totals,
    upper bound, by module, per operator with FLOPs per byte). With
    ``device_model`` (a device table name such as "H100 SXM", or a
    DeviceSpec such as ``roofline.measure_host_peak()``), it also plots the
    operators on that device's roofline; other pages ignore it.

    Raises TypeError for a value that is not a dict and ValueError for one
    that is no report, a report that does not parse (the message names the
    field), ``before``/``after`` that are not the diff's reports, or an
    unknown device name.
    """
    _check_documents(report, before, after)
    return hooks().render_html(report, before, after, title, _device_document(device_model))


def write_html(
    report: Mapping[str, Any],
    path: str | os.PathLike[str],
    *,
    before: Mapping[str, Any] | None = None,
    after: Mapping[str, Any] | None = None,
    title: str = "",
    device_model: Any = None,
) -> None:
    """Writes ``to_html(report, ...)`` to ``path``: one file, no network
    needed to view it."""
    html = to_html(report, before=before, after=after, title=title, device_model=device_model)
    with open(path, "w", encoding="utf-8") as file:
        file.write(html)


def to_folded(
    report: Mapping[str, Any],
    *,
    before: Mapping[str, Any] | None = None,
    after: Mapping[str, Any] | None = None,
) -> str:
    """Folded stacks of operator FLOPs by module path (``"Net;features;0
    1100"`` lines, self FLOPs: a module's own minus its submodules'), the
    input of flamegraph.pl and speedscope. Of a diff, with ``before`` and
    ``after``: the differential form, ``"stack BEFORE AFTER"``.

    Values of a partial report are lower bounds. Stacks are module paths,
    not calls: when a forward calls a submodule of its submodule directly,
    the submodule holds FLOPs its parent does not; the difference is taken
    from the enclosing modules' own FLOPs, with a warning.
    """
    text, _, notes = folded_stacks(report, before, after)
    for note in notes:
        warnings.warn(f"folded stacks: {note}", stacklevel=2)
    return text


def list_diagnostics(report: Mapping[str, Any], *, summary: str | None = None) -> str:
    """The diagnostics of an analysis or a FLOP report grouped by code, with
    counts, the metrics concerned, the first subjects and an example message
    (``""`` when there are none).

    With ``summary`` (``format_summary(report, ...)``), that text with its
    ``Diagnostics: N (inspect report['diagnostics'])`` line replaced by the
    listing: what a command line prints.
    """
    _check_document(report, "report")
    return hooks().list_diagnostics(report, summary or "")
