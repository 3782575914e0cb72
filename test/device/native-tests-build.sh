# Sourced by neon-check.sh and sanitize-check.sh: build_native_tests NAME DIR CMAKE_ARGS... configures
# DIR with plain CMake (CUDA off, Release; the test binary needs no Node headers), builds only
# brainstem-native-tests (JOBS=N, default every core), logs to DIR/build.log, and on failure prints
# the log's tail, names the build and returns 1.
build_native_tests() {
  local name=$1 dir=$2
  shift 2
  mkdir -p "$dir"
  echo "$name: building $dir/brainstem-native-tests (log in $dir/build.log)" >&2
  if ! { cmake -S . -B "$dir" -DBRAINSTEM_CUDA=OFF -DCMAKE_BUILD_TYPE=Release "$@" &&
    cmake --build "$dir" --target brainstem-native-tests --parallel "${JOBS:-$(nproc 2>/dev/null || echo 2)}"; } \
    >"$dir/build.log" 2>&1; then
    tail -n 40 "$dir/build.log" >&2
    echo "$name: the build failed" >&2
    return 1
  fi
}
