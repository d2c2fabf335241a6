#!/usr/bin/env bash
# Builds the report fuzzer with clang (libFuzzer + ASan + UBSan) straight from
# the report/ sources and runs it for a bounded time on the committed seed
# corpus. Any crash, leak, sanitizer report or broken invariant fails.
#
# Under `bazel test //report:report_fuzz_test` it runs in the runfiles tree;
# by hand, run it from the repository root. REPORT_FUZZ_SECONDS (default 20)
# bounds the fuzzing time.
set -euo pipefail

if ! command -v clang++ >/dev/null 2>&1; then
  echo "SKIPPED: clang++ is not installed, so the libFuzzer target cannot be built."
  exit 0
fi

seconds="${REPORT_FUZZ_SECONDS:-20}"
work="${TEST_TMPDIR:-$(mktemp -d)}/report_fuzz"
artifacts="${TEST_UNDECLARED_OUTPUTS_DIR:-${work}}"
mkdir -p "${work}/objects" "${work}/corpus" "${artifacts}"

sources=()
for source in report/*.cc; do
  case "${source}" in
    *_test.cc | report/test_support.cc) ;;
    *) sources+=("${source}") ;;
  esac
done
sources+=(report/fuzz/report_fuzzer.cc)

sanitize="-fsanitize=fuzzer,address,undefined"
modules=(absl_status absl_statusor absl_strings absl_str_format absl_int128
  nlohmann_json)
read -r -a cflags <<<"$(pkg-config --cflags "${modules[@]}")"
read -r -a libs <<<"$(pkg-config --libs "${modules[@]}")"

echo "== compiling ${#sources[@]} sources with $(clang++ --version | head -n 1)"
objects=()
for source in "${sources[@]}"; do
  object="${work}/objects/$(basename "${source}" .cc).o"
  clang++ -std=c++20 -O1 -g "${sanitize}" -fno-sanitize-recover=undefined \
    -I. "${cflags[@]}" -c "${source}" -o "${object}"
  objects+=("${object}")
done
clang++ "${sanitize}" "${objects[@]}" "${libs[@]}" -o "${work}/report_fuzzer"

echo "== fuzzing for ${seconds}s"
# New inputs go to the scratch corpus; the committed seeds are read only.
set +e
"${work}/report_fuzzer" -max_total_time="${seconds}" -timeout=10 \
  -rss_limit_mb=2048 -max_len=16384 -print_final_stats=1 \
  -artifact_prefix="${artifacts}/" \
  "${work}/corpus" report/testdata/fuzz_corpus >"${work}/fuzz.log" 2>&1
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
seeds="$(find -L report/testdata/fuzz_corpus -type f | wc -l)"
echo "== report fuzzer: ${runs} executions in ${seconds}s, no crash;" \
  "${seeds} seeds grew to a corpus of ${corpus} (inputs/size)"
