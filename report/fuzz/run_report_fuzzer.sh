#!/usr/bin/env bash
# The report fuzzer (report_fuzzer.cc: parser, compare, strict, summary)
# over the report/ sources, linked from the objects Bazel compiled with
# clang (the test's arguments; tools/fuzz/libfuzzer.bzl) and run on
# report/testdata/fuzz_corpus; see tools/fuzz/libfuzzer.sh.
#
# Run it as `bazel test //report:report_fuzz_test`; REPORT_FUZZ_SECONDS
# (default 20; --test_env=REPORT_FUZZ_SECONDS=600) bounds the fuzzing time.
set -euo pipefail
source tools/fuzz/libfuzzer.sh
libfuzzer_require_clang
libfuzzer_link report_fuzzer "$@"
libfuzzer_run report_fuzzer "${REPORT_FUZZ_SECONDS:-20}" report/testdata/fuzz_corpus
