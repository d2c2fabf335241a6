# Shared by the libFuzzer tests (//report:report_fuzz_test,
# //crawl:crawl_fuzz_test); sourced, not run. Each test links its fuzzer
# from the objects clang compiled in Bazel actions (libFuzzer + ASan +
# UBSan, tools/fuzz/libfuzzer.bzl) and runs it for a bounded time on its
# committed seed corpus. Any crash, leak,
# uncaught exception, sanitizer report or broken invariant fails the test.
#
# Paths are relative to the repository root (the runfiles tree under
# `bazel test`). New inputs go to a scratch corpus; the committed seeds are
# read only.

# Debian's libraries the fuzzers' sources use, by pkg-config module: the
# compile flags (compile_for_libfuzzer.sh, which sources this file) and the
# link flags (libfuzzer_link) come from this one list.
libfuzzer_pkg_config_modules=(absl_status absl_statusor absl_strings
  absl_str_format absl_int128 absl_cord absl_synchronization nlohmann_json)

# Skips the test, saying so, when clang++ is missing.
libfuzzer_require_clang() {
  if ! command -v clang++ >/dev/null 2>&1; then
    echo "SKIPPED: clang++ is not installed, so the libFuzzer target cannot be built."
    exit 0
  fi
}

# Sets fuzzer_prefix (libfuzzer_link calls it): the fuzzer runs with address-space randomization off
# where the kernel's (vm.mmap_rnd_bits above 28) breaks clang 14's ASan, and
# the test skips, saying so, where that cannot be turned off. The same rule
# as tools/test_machine.sh (its NOTE says why); repeated here because the
# fuzz tests run from Bazel's runfiles tree with only their own data.
libfuzzer_require_sanitizer_memory_layout() {
  local bits
  bits="$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 28)"
  fuzzer_prefix=()
  if ((bits <= 28)); then
    return
  fi
  if setarch "$(uname -m)" -R true 2>/dev/null; then
    fuzzer_prefix=(setarch "$(uname -m)" -R)
    return
  fi
  echo "SKIPPED: vm.mmap_rnd_bits=${bits} breaks clang 14's ASan and setarch -R is not permitted here; \`sudo sysctl -w vm.mmap_rnd_bits=28\` on the host lets the fuzzer run."
  exit 0
}

# libfuzzer_link NAME OBJECT...: links the objects Bazel compiled
# (tools/fuzz/libfuzzer.bzl) into ${work}/NAME. Sets `work` and
# `artifacts`. Skips the test, saying so, when the objects are empty:
# clang++ was missing when they were built.
libfuzzer_link() {
  local name="$1"
  shift
  libfuzzer_require_sanitizer_memory_layout
  work="${TEST_TMPDIR:-$(mktemp -d)}/${name}"
  artifacts="${TEST_UNDECLARED_OUTPUTS_DIR:-${work}}"
  mkdir -p "${work}/corpus" "${artifacts}"
  local object
  for object in "$@"; do
    if [[ ! -s "${object}" ]]; then
      echo "SKIPPED: ${object} is empty: clang++ was not installed when Bazel built the fuzzer's objects."
      exit 0
    fi
  done
  local libs
  read -r -a libs <<<"$(pkg-config --libs "${libfuzzer_pkg_config_modules[@]}")"
  echo "== linking $# objects with $(clang++ --version | head -n 1)"
  clang++ -fsanitize=fuzzer,address,undefined "$@" "${libs[@]}" -o "${work}/${name}"
}

# libfuzzer_run NAME SECONDS SEEDS_DIR: fuzzes for SECONDS and prints the
# executions and the corpus growth; fails with the fuzzer's log otherwise.
libfuzzer_run() {
  local name="$1" seconds="$2" seeds="$3" status
  echo "== fuzzing for ${seconds}s"
  set +e
  "${fuzzer_prefix[@]}" "${work}/${name}" -max_total_time="${seconds}" -timeout=10 \
    -rss_limit_mb=2048 -max_len=16384 -print_final_stats=1 \
    -artifact_prefix="${artifacts}/" \
    "${work}/corpus" "${seeds}" >"${work}/fuzz.log" 2>&1
  status=$?
  set -e
  grep -E "INITED|DONE|Done [0-9]+ runs|stat::number_of_executed_units|ERROR|invariant" \
    "${work}/fuzz.log" || true
  if [[ ${status} -ne 0 ]]; then
    echo "== the fuzzer failed (exit ${status}); its log:"
    tail -n 60 "${work}/fuzz.log"
    exit 1
  fi
  local runs corpus seed_count
  runs="$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "${work}/fuzz.log")"
  corpus="$(sed -n 's/.*DONE .* corp: \([0-9]*\/[0-9A-Za-z]*\).*/\1/p' "${work}/fuzz.log")"
  seed_count="$(find -L "${seeds}" -type f | wc -l)"
  echo "== ${name}: ${runs} executions in ${seconds}s, no crash;" \
    "${seed_count} seeds grew to a corpus of ${corpus} (inputs/size)"
}
