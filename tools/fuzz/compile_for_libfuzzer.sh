#!/usr/bin/env bash
# compile_for_libfuzzer.sh SOURCE OBJECT: one source of a libFuzzer target,
# compiled by clang with libFuzzer's coverage, ASan and UBSan, against
# Debian's abseil and nlohmann_json (pkg-config, the modules libfuzzer.sh
# lists); run from the execution root, so the project's includes resolve
# from `.`. The Bazel actions of
# tools/fuzz/libfuzzer.bzl run it. Without clang++ it writes an empty
# object, which the fuzz tests read as "skip" (tools/fuzz/libfuzzer.sh).
set -euo pipefail
source="$1"
object="$2"
if ! command -v clang++ >/dev/null 2>&1; then
  : >"${object}"
  exit 0
fi
# The module list, shared with the link (libfuzzer_link).
source "$(dirname "${BASH_SOURCE[0]}")/libfuzzer.sh"
read -r -a cflags <<<"$(pkg-config --cflags "${libfuzzer_pkg_config_modules[@]}")"
clang++ -std=c++20 -O1 -gline-tables-only -fsanitize=fuzzer,address,undefined \
  -fno-sanitize-recover=undefined -I. "${cflags[@]}" -c "${source}" -o "${object}"
