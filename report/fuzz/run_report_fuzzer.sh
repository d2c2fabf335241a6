#!/usr/bin/env bash
# The report fuzzer (report_fuzzer.cc: parser, compare, strict, summary),
# built from the report/ sources and run on report/testdata/fuzz_corpus;
# see tools/fuzz/libfuzzer.sh.
#
# Under `bazel test //report:report_fuzz_test` it runs in the runfiles tree;
# by hand, run it from the repository root. REPORT_FUZZ_SECONDS (default 20)
# bounds the fuzzing time.
set -euo pipefail
source tools/fuzz/libfuzzer.sh
libfuzzer_require_clang

sources=()
for source in report/*.cc; do
  case "${source}" in
    # *_builtin.cc: the embedded device table, a file Bazel generates, and
    # what uses it.
    *_test.cc | report/test_support.cc | report/*_builtin.cc) ;;
    *) sources+=("${source}") ;;
  esac
done
libfuzzer_build report_fuzzer "${sources[@]}" report/fuzz/report_fuzzer.cc
libfuzzer_run report_fuzzer "${REPORT_FUZZ_SECONDS:-20}" report/testdata/fuzz_corpus
