#!/usr/bin/env bash
# The native unit tests under AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer:
# builds brainstem-native-tests (CUDA off: the CUDA and Metal kernels still run over their CPU
# emulations) in build-asan/ with plain CMake and -fsanitize=address,undefined, then runs every
# case (or those named). Any report fails the run: UB does not recover, a leak fails at exit.
# Exits 0 when every case passes clean, 1 on a build or test failure.
# Usage: test/device/sanitize-check.sh [CASE_SUBSTRING...]   (npm run test:sanitize; JOBS=N builds)
set -uo pipefail
cd "$(dirname "$0")/../.."
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
dir=build-asan
. test/device/native-tests-build.sh
build_native_tests sanitize-check "$dir" "-DCMAKE_CXX_FLAGS=$flags" "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined" ||
  exit 1
echo "sanitize-check: running" >&2
ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0 UBSAN_OPTIONS=print_stacktrace=1 \
  "$dir/brainstem-native-tests" "$@"
rc=$?
[ "$rc" = 0 ] || echo "sanitize-check: failed (exit $rc)" >&2
exit "$rc"
