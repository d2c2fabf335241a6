"""Records read straight from Python objects through the field tables
(python/operators/report_from_objects.h), generated from the tables for
every record with one:

- object -> Python -> object: ToPython(record) read back with FromPython is
  the record, and the record that ToJson(record) read back with FromJson
  gives;
- the same mutated documents (an unknown key at every depth, a member
  removed, a value of the wrong type, an int out of range) give the same
  error text from the JSON reader and the Python reader, or are accepted
  by both;
- an unknown key is refused with its path named.

The records and their documents are test_report_objects.py's (the
test-only module _report_objects_check and the documents that write every
key of every table).
"""

from __future__ import annotations

import json
import random

import pytest
from test_report_objects import RECORDS, assert_same, check, documents  # noqa: F401 (fixtures)


UNKNOWN = "zz_not_a_field"

# Values that stand for another JSON type, or an integer out of a reader's range.
WRONG_VALUES = ["a string", 1.5, True, None, [], {}, -1, 2**63, 2**64, -(2**127), 2**127 - 1]


def test_the_records_read_are_those_written(check):
    assert sorted(RECORDS) == sorted(check.records())


@pytest.mark.parametrize("name", RECORDS)
def test_objects_read_back_are_the_record(check, documents, name):
    for index, document in enumerate(documents[name]):
        equal, equal_to_json, objects = check.round_trip(name, document)
        assert (True, True) == (equal, equal_to_json), f"{name}[{index}]"
        written, _ = check.convert(name, document)
        assert_same(objects, written, f"{name}[{index}]")


# --- Mutations: each a path into the document and what to do there.


def nodes(value, path=()):
    """Every (path, value) of a document, the root first."""
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from nodes(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from nodes(item, (*path, index))


def replaced(value, path, change):
    """A copy of `value` with change(node) at `path`, copying only the path."""
    if not path:
        return change(value)
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        copy = dict(value)
    else:
        copy = list(value)
    copy[head] = replaced(value[head], rest, change)
    return copy


def mutations(document, rng, limit):
    """(what, mutated document) for the nodes of `document`, at most `limit`
    of each kind, chosen by `rng`."""
    found = {"unknown key": [], "missing member": [], "wrong type": []}
    for path, node in nodes(document):
        if isinstance(node, dict):
            found["unknown key"].append((path, lambda node: {**node, UNKNOWN: 1}))
            for key in node:
                found["missing member"].append((path, lambda node, key=key: {k: v for k, v in node.items() if k != key}))
        if path:
            for wrong in WRONG_VALUES:
                if type(wrong) is not type(node) or wrong != node:
                    found["wrong type"].append((path, lambda node, wrong=wrong: wrong))
    for what, changes in found.items():
        for path, change in rng.sample(changes, min(limit, len(changes))):
            yield what, path, replaced(document, path, change)


def smallest(docs, count):
    return sorted(docs, key=lambda document: len(json.dumps(document)))[:count]


@pytest.mark.parametrize("name", RECORDS)
def test_mutated_documents_give_the_json_readers_errors(check, documents, name):
    rng = random.Random(29)
    differ = []
    errors = 0
    tried = 0
    for document in smallest(documents[name], 3):
        for what, path, mutated in mutations(document, rng, 200):
            json_error, python_error = check.read_errors(name, mutated)
            tried += 1
            errors += json_error is not None
            if json_error != python_error:
                differ.append((what, path, json_error, python_error))
    assert [] == differ[:5]
    # The mutations reach the readers' errors, not only keys both drop.
    assert errors > 0, tried


def test_every_kind_of_error_is_met(check, documents):
    """Across the records the mutations meet each error the readers share."""
    rng = random.Random(29)
    words = set()
    for name in RECORDS:
        for document in smallest(documents[name], 1):
            for _, _, mutated in mutations(document, rng, 20):
                json_error, _ = check.read_errors(name, mutated)
                for word in ("unknown field", "is missing", "expected an object", "expected an array",
                             "expected a string", "expected an integer", "expected a non-negative integer",
                             "must not be negative", "is out of range", "does not fit in 64 bits",
                             "expected a boolean", "needs exactly one of", "does not match"):
                    if json_error and word in json_error:
                        words.add(word)
    assert {
        "unknown field", "is missing", "expected an object", "expected an array", "expected a string",
        "expected an integer", "expected a non-negative integer", "must not be negative", "is out of range",
        "expected a boolean", "needs exactly one of", "does not match",
    } <= words


@pytest.mark.parametrize("name", RECORDS)
def test_unknown_keys_are_refused_with_their_path(check, documents, name):
    document = smallest(documents[name], 1)[0]
    json_error, python_error = check.read_errors(name, {**document, UNKNOWN: 1})
    assert json_error == python_error
    # Accepted by the records that keep or drop keys they do not know.
    assert python_error in (None, f"{name}.{UNKNOWN}: unknown field")
    deep = [path for path, node in nodes(document) if isinstance(node, dict) and len(path) >= 2]
    for path in deep[:10]:
        mutated = replaced(document, path, lambda node: {**node, UNKNOWN: 1})
        json_error, python_error = check.read_errors(name, mutated)
        assert json_error == python_error, path


def test_an_unknown_key_at_depth_names_its_path(check, documents):
    report = smallest(documents["AnalysisReport"], 1)[0]
    mutated = replaced(report, ("layers", 0, "metrics", "macs"), lambda node: {**node, UNKNOWN: 1})
    expected = f"AnalysisReport.layers[0].metrics.macs.{UNKNOWN}: unknown field"
    assert (expected, expected) == check.read_errors("AnalysisReport", mutated)


def test_tuples_read_as_arrays_and_big_ints_exactly(check, documents):
    report = smallest(documents["AnalysisReport"], 1)[0]
    as_tuples = replaced(report, ("layers",), tuple)
    assert (None, None) == check.read_errors("AnalysisReport", as_tuples)
    value = 2**100
    metric = {"status": "complete", "value": value, "known_value": value, "unit": "flops", "scope": "model",
              "method": "m"}
    assert (None, None) == check.read_errors("MetricResult", metric)
    equal, equal_to_json, objects = check.round_trip("MetricResult", metric)
    assert (True, True, value) == (equal, equal_to_json, objects["value"])


# --- The extension module's report functions read their arguments so.


def test_report_functions_give_the_json_readers_errors(check, documents):
    """format_summary's and compare_reports' reading errors on mutated crawl
    reports are the JSON reader's, at the argument's path."""
    from torchscan_dispatch._library import hooks

    rng = random.Random(29)
    report = smallest(documents["AnalysisReport"], 1)[0]
    compared = 0
    for what, path, mutated in mutations(report, rng, 40):
        json_error, _ = check.read_errors("AnalysisReport", mutated)
        if json_error is not None:
            with pytest.raises(ValueError) as caught:
                hooks().render_summary(mutated, {})
            assert json_error.replace("AnalysisReport", "report", 1) == str(caught.value), (what, path)
        if path[:1] == ("schema_version",):
            continue  # compare reads both versions first
        json_error, _ = check.read_errors("ComparableReport", mutated)
        if json_error is not None:
            compared += 1
            with pytest.raises(ValueError) as caught:
                hooks().compare_reports(report, mutated)
            assert json_error.replace("ComparableReport", "after", 1) == str(caught.value), (what, path)
    assert compared > 0


def test_nesting_beyond_the_records_limit_is_refused_alike(check):
    """ValueMetadata's kMaxNesting (200): the same guard, the same error."""
    for depth in (199, 200, 201, 205):
        value = {"kind": "none"}
        for _ in range(depth):
            value = {"kind": "list", "items": [value]}
        json_error, python_error = check.read_errors("ValueMetadata", value)
        assert json_error == python_error, depth
    assert python_error is not None and python_error.endswith("nesting deeper than 200 levels")
