#!/usr/bin/env bash
# Builds the crawl-record fuzzer with clang (libFuzzer + ASan + UBSan) straight
# from the report/ and formulas/ sources and runs it for a bounded time on the
# committed seed corpus (formulas/testdata/crawl_fuzz_corpus, written by
# formulas/fuzz/make_crawl_fuzz_corpus.py from real crawl_module calls). Any
# crash, leak, uncaught exception, sanitizer report or broken invariant fails.
#
# Under `bazel test //formulas:crawl_fuzz_test` it runs in the runfiles tree;
# by hand, run it from the repository root. CRAWL_FUZZ_SECONDS (default 20)
# bounds the fuzzing time.
set -euo pipefail

if ! command -v clang++ >/dev/null 2>&1; then
  echo "SKIPPED: clang++ is not installed, so the libFuzzer target cannot be built."
  exit 0
fi

seconds="${CRAWL_FUZZ_SECONDS:-20}"
work="${TEST_TMPDIR:-$(mktemp -d)}/crawl_fuzz"
artifacts="${TEST_UNDECLARED_OUTPUTS_DIR:-${work}}"
mkdir -p "${work}/objects" "${work}/corpus" "${artifacts}"

sources=()
for source in report/*.cc formulas/*.cc; do
  case "${source}" in
    *_test.cc | report/test_support.cc | formulas/print_operator_tables.cc) ;;
    *) sources+=("${source}") ;;
  esac
done
sources+=(formulas/fuzz/crawl_fuzzer.cc)

sanitize="-fsanitize=fuzzer,address,undefined"
modules=(absl_status absl_statusor absl_strings absl_str_format absl_int128
  nlohmann_json)
cflags="$(pkg-config --cflags "${modules[@]}")"
read -r -a libs <<<"$(pkg-config --libs "${modules[@]}")"

echo "== compiling ${#sources[@]} sources with $(clang++ --version | head -n 1)"
export work sanitize cflags
# One compiler per core: the sources are independent.
printf '%s\n' "${sources[@]}" | xargs -P "$(nproc)" -I{} sh -c '
  object="${work}/objects/$(echo "{}" | tr / _ | sed "s/\.cc$/.o/")"
  clang++ -std=c++20 -O1 -g ${sanitize} -fno-sanitize-recover=undefined \
    -I. ${cflags} -c "{}" -o "${object}"'
clang++ "${sanitize}" "${work}"/objects/*.o "${libs[@]}" -o "${work}/crawl_fuzzer"

echo "== fuzzing for ${seconds}s"
# New inputs go to the scratch corpus; the committed seeds are read only.
set +e
"${work}/crawl_fuzzer" -max_total_time="${seconds}" -timeout=10 \
  -rss_limit_mb=2048 -max_len=16384 -print_final_stats=1 \
  -artifact_prefix="${artifacts}/" \
  "${work}/corpus" formulas/testdata/crawl_fuzz_corpus >"${work}/fuzz.log" 2>&1
status=$?
set -e
grep -E "INITED|DONE|Done [0-9]+ runs|stat::number_of_executed_units|ERROR|invariant" \
  "${work}/fuzz.log" || true
if [[ ${status} -ne 0 ]]; then
  echo "== the fuzzer failed (exit ${status}); its log:"
  tail -n 60 "${work}/fuzz.log"
  exit 1
fi
runs="$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "${work}/fuzz.log")"
corpus="$(sed -n 's/.*DONE .* corp: \([0-9]*\/[0-9A-Za-z]*\).*/\1/p' "${work}/fuzz.log")"
seeds="$(find -L formulas/testdata/crawl_fuzz_corpus -type f | wc -l)"
echo "== crawl fuzzer: ${runs} executions in ${seconds}s, no crash;" \
  "${seeds} seeds grew to a corpus of ${corpus} (inputs/size)"
