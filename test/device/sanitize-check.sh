#!/usr/bin/env bash
# The native unit tests under AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer:
# builds brainstem-native-tests (CUDA off: the CUDA and Metal kernels still run over their CPU
# emulations) in build-asan/ with plain CMake and -fsanitize=address,undefined, then runs every
# case (or those named). Any report fails the run: UB does not recover, a leak fails at exit.
# Built with clang and libc++ where both are installed (Apple's compiler family and C++ library:
# every case then also runs on libc++'s containers, strings and conversions, which the GCC build
# of the normal suite does not); SANITIZE_CC=default keeps the system compiler.
# Exits 0 when every case passes clean, 1 on a build or test failure.
# Usage: test/device/sanitize-check.sh [CASE_SUBSTRING...]   (npm run test:sanitize; JOBS=N builds)
set -uo pipefail
cd "$(dirname "$0")/../.."
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
ldflags="-fsanitize=address,undefined"
dir=build-asan toolchain=default compilers=()
if [ "${SANITIZE_CC:-clang}" = clang ] && command -v clang++ >/dev/null 2>&1 &&
  echo '#include <vector>' | clang++ -stdlib=libc++ -x c++ -fsyntax-only - >/dev/null 2>&1; then
  toolchain=clang-libc++ flags="$flags -stdlib=libc++" ldflags="$ldflags -stdlib=libc++"
  compilers=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++)
fi
# CMake cannot switch a configured folder to another compiler: start it afresh.
[ "$(cat "$dir/.toolchain" 2>/dev/null)" = "$toolchain" ] || rm -rf "$dir"
mkdir -p "$dir" && echo "$toolchain" >"$dir/.toolchain"
echo "sanitize-check: $toolchain" >&2
. test/device/native-tests-build.sh
build_native_tests sanitize-check "$dir" ${compilers[@]+"${compilers[@]}"} \
  "-DCMAKE_CXX_FLAGS=$flags" "-DCMAKE_EXE_LINKER_FLAGS=$ldflags" || exit 1
echo "sanitize-check: running" >&2
ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0 UBSAN_OPTIONS=print_stacktrace=1 \
  "$dir/brainstem-native-tests" "$@"
rc=$?
[ "$rc" = 0 ] || echo "sanitize-check: failed (exit $rc)" >&2
exit "$rc"
