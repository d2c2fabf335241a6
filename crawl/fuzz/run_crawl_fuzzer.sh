#!/usr/bin/env bash
# The crawl-record fuzzer (crawl_fuzzer.cc) over the torch-free sources
# (report/, formulas/, crawl/), linked from the objects Bazel compiled with
# clang (the test's arguments; tools/fuzz/libfuzzer.bzl) and run on
# crawl/testdata/crawl_fuzz_corpus (written by
# crawl/fuzz/make_crawl_fuzz_corpus.py from real crawl_module calls); see
# tools/fuzz/libfuzzer.sh.
#
# Run it as `bazel test //crawl:crawl_fuzz_test`; CRAWL_FUZZ_SECONDS
# (default 20; --test_env=CRAWL_FUZZ_SECONDS=600) bounds the fuzzing time.
set -euo pipefail
source tools/fuzz/libfuzzer.sh
libfuzzer_require_clang
libfuzzer_link crawl_fuzzer "$@"
libfuzzer_run crawl_fuzzer "${CRAWL_FUZZ_SECONDS:-20}" crawl/testdata/crawl_fuzz_corpus
