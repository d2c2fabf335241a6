# Sourced (not run) by tools/test, tools/test_sanitizers, tools/test_wheel and
# tools/test_bazel_consumer: what they must know about the machine so that
# the tests pass on every x86-64 machine, not only the one they were written
# on (docs/building.md, "Tests on any machine"). Defines:
#
#   bazel_flags   flags for every `bazel build/test/run` of the test scripts:
#                 --jobs sized to the memory (below) and, when the CPU is
#                 simulated, --test_env for the simulation's variables.
#   TMPDIR        exported: a temporary directory where programs and shared
#                 libraries may run (a noexec /tmp is replaced).
#   test_machine_sanitizer_prefix   prints the command prefix sanitized
#                 programs need here (see its NOTE), or fails saying why
#                 they cannot run here.
#
# Idempotent: sourcing it again (a script run by another) changes nothing.

# The CPU simulation (tools/test --cpu): PyTorch's kernels, oneDNN and MKL
# each cap the instruction set they dispatch to. Bazel hands tests a clean
# environment, so the variables are passed through by name when set.
TORCHSCAN_SIMULATION_VARIABLES=(ATEN_CPU_CAPABILITY ONEDNN_MAX_CPU_ISA MKL_ENABLE_INSTRUCTIONS)

# The directory of this process's cgroup for controller $1 (v2 when $1 is
# empty), where the container's limits are; nothing if there is none.
test_machine_cgroup_dir() {
  local controller="$1" path dir
  if [[ -z "${controller}" ]]; then
    path="$(sed -n 's/^0:://p' /proc/self/cgroup 2>/dev/null)"
    dir="/sys/fs/cgroup"
  else
    path="$(sed -n "s/^[0-9]*:\([^:]*,\)\{0,1\}${controller}\(,[^:]*\)\{0,1\}://p" /proc/self/cgroup 2>/dev/null)"
    dir="/sys/fs/cgroup/${controller}"
  fi
  # Inside a cgroup namespace the own cgroup is mounted at the root.
  if [[ -n "${path}" && -d "${dir}${path}" ]]; then echo "${dir}${path}"; elif [[ -d "${dir}" ]]; then echo "${dir}"; fi
}

# Usable cores: the CPU affinity (nproc), capped by a cgroup CPU quota,
# which nproc does not see (a container limited to 2 CPUs on a 64-core host).
test_machine_cores() {
  local cores quota period dir
  cores="$(nproc)"
  dir="$(test_machine_cgroup_dir "")"
  if [[ -n "${dir}" && -r "${dir}/cpu.max" ]]; then
    read -r quota period <"${dir}/cpu.max"
  else
    dir="$(test_machine_cgroup_dir cpu)"
    quota="$(cat "${dir}/cpu.cfs_quota_us" 2>/dev/null || echo max)"
    period="$(cat "${dir}/cpu.cfs_period_us" 2>/dev/null || echo 100000)"
  fi
  if [[ "${quota}" =~ ^[0-9]+$ ]] && ((quota > 0 && period > 0)); then
    quota=$(((quota + period - 1) / period))
    ((quota < cores)) && cores="${quota}"
  fi
  echo "${cores}"
}

# Available memory in kB: the kernel's MemAvailable, capped by what a
# cgroup memory limit leaves (/proc/meminfo shows the host's memory inside a
# container).
test_machine_available_kb() {
  local available limit usage dir
  available="$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo 2>/dev/null || true)"
  dir="$(test_machine_cgroup_dir "")"
  if [[ -n "${dir}" && -r "${dir}/memory.max" ]]; then
    limit="$(cat "${dir}/memory.max")"
    usage="$(cat "${dir}/memory.current" 2>/dev/null || echo 0)"
  else
    dir="$(test_machine_cgroup_dir memory)"
    limit="$(cat "${dir}/memory.limit_in_bytes" 2>/dev/null || echo max)"
    usage="$(cat "${dir}/memory.usage_in_bytes" 2>/dev/null || echo 0)"
  fi
  if [[ "${limit}" =~ ^[0-9]+$ ]] && ((limit < (1 << 50))); then
    limit=$(((limit - usage) / 1024))
    if [[ -z "${available}" ]] || ((limit < available)); then available="${limit}"; fi
  fi
  echo "${available}"
}

# NOTE: Bazel estimates every C++ compile at a few hundred MB, but one of
# our LibTorch translation units peaks at 1.7 GB in gcc at -c opt and 2.5 GB
# under --config=asan (measured with /usr/bin/time on
# torchscan_dispatch/concurrency_test.cc). One job per core would exhaust a
# machine with less than 2.5 GB per core, so the jobs are also capped by the
# memory available when the run starts. TORCHSCAN_BAZEL_JOBS overrides.
test_machine_bazel_jobs() {
  local cores available_kb per_job_kb=$((2560 * 1024)) by_memory
  cores="$(test_machine_cores)"
  available_kb="$(test_machine_available_kb)"
  if [[ -z "${available_kb}" ]]; then
    echo "${cores}"
    return
  fi
  by_memory=$((available_kb / per_job_kb))
  ((by_memory >= 1)) || by_memory=1
  echo $((by_memory < cores ? by_memory : cores))
}

# Prints a directory under TMPDIR (or /tmp) where an executable file runs; if
# that one is mounted noexec (shared libraries could not be mapped there
# either: the wheel's venv, the load-safety tests' library copies), a
# directory in the user's cache instead, on the file system Bazel already
# executes from.
test_machine_exec_tmpdir() {
  local dir="${TMPDIR:-/tmp}" probe fallback
  fallback="${XDG_CACHE_HOME:-${HOME}/.cache}/torchscan-dispatch/tmp"
  if probe="$(mktemp "${dir}/torchscan-exec-probe.XXXXXX" 2>/dev/null)"; then
    printf '#!/bin/sh\nexit 0\n' >"${probe}"
    chmod +x "${probe}"
    if "${probe}" 2>/dev/null; then
      rm -f "${probe}"
      echo "${dir}"
      return
    fi
    rm -f "${probe}"
  fi
  mkdir -p "${fallback}"
  echo "note: ${dir} does not allow running programs (mounted noexec?); TMPDIR=${fallback}" >&2
  echo "${fallback}"
}

# NOTE: the sanitizer runtimes of Debian 12's gcc 12 and clang 14 place
# their shadow memory at fixed addresses and break when the kernel randomizes
# mmap with more than 28 bits (vm.mmap_rnd_bits=32, the default of newer
# Ubuntu kernels, which containers on such hosts inherit): TSan dies with
# "unexpected memory mapping", ASan intermittently with DEADLYSIGNAL. There,
# sanitized programs run with address-space randomization off (setarch -R),
# which a container's seccomp profile may forbid; then they cannot run at
# all, and this fails with the reason (the caller skips, saying so).
# Prints the prefix (nothing where none is needed).
test_machine_sanitizer_prefix() {
  local bits
  bits="$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 28)"
  if ((bits <= 28)); then
    return 0
  fi
  if setarch "$(uname -m)" -R true 2>/dev/null; then
    echo "setarch $(uname -m) -R"
    return 0
  fi
  echo "vm.mmap_rnd_bits=${bits} (more than 28) breaks the sanitizer runtimes of gcc 12 and clang 14, and address-space randomization cannot be turned off here (setarch -R is not permitted); \`sudo sysctl -w vm.mmap_rnd_bits=28\` on the host lets them run" >&2
  return 1
}

if [[ -z "${TORCHSCAN_TEST_MACHINE_SOURCED:-}" ]]; then
  export TORCHSCAN_TEST_MACHINE_SOURCED=1
  TMPDIR="$(test_machine_exec_tmpdir)"
  export TMPDIR
  : "${TORCHSCAN_BAZEL_JOBS:=$(test_machine_bazel_jobs)}"
  export TORCHSCAN_BAZEL_JOBS
  # NOTE: Bazel 4 hashes the client's PATH into every action (no
  # --incompatible_strict_action_env). A python3 that is a version manager's
  # shim (pyenv) runs Python with its own directories in front of PATH, so a
  # Bazel command started from the Python tests (the docs' shell blocks) saw
  # another PATH than the build stage and recompiled everything: 8 of the
  # python stage's 18 minutes in a clean-clone run. Every stage takes
  # Python's PATH, so every Bazel command sees the same one.
  python_path="$("${TORCHSCAN_PYTHON:-python3}" -c 'import os; print(os.environ.get("PATH", ""))' 2>/dev/null || true)"
  if [[ -n "${python_path}" ]]; then
    PATH="${python_path}"
    export PATH
  fi
  unset python_path
fi

bazel_flags=("--jobs=${TORCHSCAN_BAZEL_JOBS}")
for variable in "${TORCHSCAN_SIMULATION_VARIABLES[@]}"; do
  if [[ -n "${!variable:-}" ]]; then
    bazel_flags+=("--test_env=${variable}")
  fi
done
unset variable
