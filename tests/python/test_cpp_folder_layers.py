"""The C++ folders have layers: every #include goes down, never up.

Each C++ file (sources, headers and tests alike) and each project header it
includes get a layer below; a file includes headers of its own layer or of
lower ones. report/ holds three layers (docs/design.md, "Where the code
lives"): the count, JSON, Python-text, metric and diagnostic types at the
bottom, below formulas/; the measurement's FlopReport above formulas/ and
below the dispatcher core; the crawl report's assembly above the dispatcher
core, so that torchscan_dispatch/ cannot name crawl-report types. A new
folder, or a new report/ concept at the bottom, takes its place here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUFFIXES = {".h", ".cc", ".cpp"}

# report/ concepts at the bottom (by file stem): what formulas/ and
# torchscan_dispatch/ may use.
REPORT_BOTTOM = {
    "count", "utf8", "python_text", "json_io", "json_reader", "field_table", "field_table_testing", "diagnostic",
    "metric_result", "metric_map", "value_metadata", "precision",
}
# report/ concepts of the measurement's report, below the dispatcher core.
REPORT_MEASUREMENT = {"flop_report", "communication", "device_table", "device_table_builtin", "roofline",
                      "roofline_builtin"}

# Bottom to top: (name, what belongs to it). Folders are path prefixes; the
# longest matching prefix wins, so report/render/ is not report/.
LAYERS = [
    ("base", ["base/"]),
    ("example models", ["tools/examples/"]),
    ("report: counts, JSON, Python text, metrics, diagnostics", ["report:bottom"]),
    ("formulas", ["formulas/"]),
    ("report: the measurement's report", ["report:measurement"]),
    ("dispatcher core", ["torchscan_dispatch/"]),
    ("report: crawl report assembly", ["report/"]),
    ("report rendering", ["report/render/"]),
    ("crawl assembly", ["crawl/"]),
    ("C++ front ends", ["torchscan/"]),
    ("tools", ["tools/"]),
    ("Python package library", ["python/"]),
    ("examples", ["examples/"]),
]

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def concept(path: str) -> str:
    return Path(path).name.split(".")[0]


def layer_of(path: str) -> int | None:
    """The layer index of a repository path, None for a file outside every
    layer (third-party headers). report/'s tests are leaves that check a
    concept through the reports it ends up in: they are in report/'s top
    layer."""
    if path.startswith("report/") and path.count("/") == 1 and not path.endswith("_test.cc"):
        if concept(path) in REPORT_BOTTOM:
            path = "report:bottom"
        elif concept(path) in REPORT_MEASUREMENT:
            path = "report:measurement"
    best, best_length = None, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if path.startswith(prefix) and len(prefix) > best_length:
                best, best_length = index, len(prefix)
    return best


def cpp_files() -> list[Path]:
    skip = {"third_party", ".git"}
    return sorted(
        path
        for path in ROOT.rglob("*")
        if path.suffix in SUFFIXES
        and path.is_file()
        and not path.relative_to(ROOT).parts[0].startswith("bazel-")
        and path.relative_to(ROOT).parts[0] not in skip
    )


def project_includes(source: str) -> list[tuple[int, str]]:
    """The quoted includes of `source` with their line numbers."""
    found = []
    for number, line in enumerate(source.splitlines(), start=1):
        match = INCLUDE.match(line)
        if match:
            found.append((number, match.group(1)))
    return found


def upward_includes(files: dict[str, str]) -> list[str]:
    """'file:line includes header (layer) from layer' for every include of a
    project header of a higher layer."""
    upward = []
    for path, source in sorted(files.items()):
        own = layer_of(path)
        if own is None:
            continue
        for line, header in project_includes(source):
            target = layer_of(header)
            if target is not None and target > own:
                upward.append(f"{path}:{line} includes {header} ({LAYERS[target][0]}) "
                              f"from layer {LAYERS[own][0]}")
    return upward


def test_every_cpp_file_has_a_layer():
    unplaced = [str(path.relative_to(ROOT)) for path in cpp_files() if layer_of(str(path.relative_to(ROOT))) is None]
    assert unplaced == [], "give the new folder a layer in LAYERS (docs/design.md)"


def test_every_report_concept_in_a_named_layer_exists():
    stems = {concept(str(path.relative_to(ROOT))) for path in (ROOT / "report").glob("*") if path.suffix in SUFFIXES}
    assert (REPORT_BOTTOM | REPORT_MEASUREMENT) - stems == set()


def test_no_include_goes_to_a_higher_layer():
    files = {str(path.relative_to(ROOT)): path.read_text(errors="replace") for path in cpp_files()}
    assert upward_includes(files) == []


def test_the_dispatcher_core_names_no_crawl_report_type():
    assert layer_of("report/analysis_report.h") > layer_of("torchscan_dispatch/counting_session.h")
    assert layer_of("report/flop_report.h") < layer_of("torchscan_dispatch/counting_session.h")


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        # The old pycompat/ circle: report's JSON writer below formulas, its
        # Python-text users at the bottom.
        ({"report/json_io.cc": '#include "formulas/exact_count.h"\n'},
         ["report/json_io.cc:1 includes formulas/exact_count.h (formulas) from layer "
          "report: counts, JSON, Python text, metrics, diagnostics"]),
        ({"torchscan_dispatch/counting_session.h": '#include <map>\n\n# include "report/analysis_report.h"\n'},
         ["torchscan_dispatch/counting_session.h:3 includes report/analysis_report.h "
          "(report: crawl report assembly) from layer dispatcher core"]),
        ({"report/render/html_report.cc": '#include "report/analysis_report.h"\n#include "absl/strings/str_cat.h"\n'},
         []),
    ],
)
def test_upward_includes_are_named_with_file_and_line(files, expected):
    assert upward_includes(files) == expected
