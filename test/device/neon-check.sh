#!/usr/bin/env bash
# The arm64 kernel sets (cpu-neon, cpu-neon-dotprod, cpu-neon-i8mm) on an x86 Linux machine:
# cross-compiles the native unit tests (brainstem-native-tests, CUDA off, static) for aarch64 in
# build-arm64/ with plain CMake and cmake/aarch64-linux-gnu.cmake (the test binary needs no Node
# headers), then runs every case under `qemu-aarch64 -cpu max` (NEON, dot product, I8MM),
# requiring the three NEON sets to run. NEON_CC=clang builds with clang instead (the compiler
# family Apple's is; cmake/aarch64-linux-clang.cmake, build-arm64-clang/; CLANG=clang-14 names
# the binary). Exits 0 when every case passes, 1 on a build or test failure, 2 when the cross
# tools are missing (Debian: g++-aarch64-linux-gnu, qemu-user; clang for NEON_CC=clang).
# Usage: [NEON_CC=clang] test/device/neon-check.sh [CASE_SUBSTRING...]   (npm run test:arm64; JOBS=N builds)
set -uo pipefail
cd "$(dirname "$0")/../.."
toolchain=cmake/aarch64-linux-gnu.cmake dir=build-arm64 tools="aarch64-linux-gnu-g++ qemu-aarch64 cmake"
if [ "${NEON_CC:-gcc}" = clang ]; then
  toolchain=cmake/aarch64-linux-clang.cmake dir=build-arm64-clang tools="$tools ${CLANG:-clang}"
fi
for tool in $tools; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "neon-check: $tool not found (apt-get install g++-aarch64-linux-gnu qemu-user cmake clang)" >&2
    exit 2
  fi
done
. test/device/native-tests-build.sh
build_native_tests neon-check "$dir" -DCMAKE_TOOLCHAIN_FILE="$toolchain" || exit 1
echo "neon-check: running under qemu-aarch64 -cpu max" >&2
qemu-aarch64 -cpu max "$dir/brainstem-native-tests" --require-sets cpu-neon,cpu-neon-dotprod,cpu-neon-i8mm "$@"
rc=$?
[ "$rc" = 0 ] || echo "neon-check: failed (exit $rc)" >&2
exit "$rc"
