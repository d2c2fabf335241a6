#!/usr/bin/env bash
# The crawl-record fuzzer (crawl_fuzzer.cc), built from the torch-free
# sources (report/, formulas/, crawl/) and run on
# crawl/testdata/crawl_fuzz_corpus (written by
# crawl/fuzz/make_crawl_fuzz_corpus.py from real crawl_module calls); see
# tools/fuzz/libfuzzer.sh.
#
# Under `bazel test //crawl:crawl_fuzz_test` it runs in the runfiles tree;
# by hand, run it from the repository root. CRAWL_FUZZ_SECONDS (default 20)
# bounds the fuzzing time.
set -euo pipefail
source tools/fuzz/libfuzzer.sh
libfuzzer_require_clang

sources=()
for source in report/*.cc formulas/*.cc crawl/*.cc; do
  case "${source}" in
    # *_builtin.cc: the embedded device table, a file Bazel generates, and
    # what uses it.
    *_test.cc | report/test_support.cc | report/*_builtin.cc | formulas/print_operator_tables.cc) ;;
    *) sources+=("${source}") ;;
  esac
done
libfuzzer_build crawl_fuzzer "${sources[@]}" crawl/fuzz/crawl_fuzzer.cc
libfuzzer_run crawl_fuzzer "${CRAWL_FUZZ_SECONDS:-20}" crawl/testdata/crawl_fuzz_corpus
