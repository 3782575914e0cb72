# Cross-compiling for arm64 Linux with clang (NEON_CC=clang test/device/neon-check.sh): the
# compiler family Apple's is, against Debian's aarch64 libraries and binutils; static binaries,
# so qemu-aarch64 runs them without an arm64 sysroot. CLANG names the binary (default clang).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
if(NOT DEFINED ENV{CLANG})
  set(ENV{CLANG} clang)
endif()
set(CMAKE_C_COMPILER $ENV{CLANG})
# clang-14 -> clang++-14, clang -> clang++ (a match, not REGEX REPLACE: CMake refuses \1 when the
# optional version group matched nothing).
if("$ENV{CLANG}" MATCHES "^(.*clang)(-[0-9]+)?$")
  set(CMAKE_CXX_COMPILER "${CMAKE_MATCH_1}++${CMAKE_MATCH_2}")
else()
  set(CMAKE_CXX_COMPILER "$ENV{CLANG}")
endif()
set(CMAKE_C_COMPILER_TARGET aarch64-linux-gnu)
set(CMAKE_CXX_COMPILER_TARGET aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static -fuse-ld=bfd -B/usr/aarch64-linux-gnu/bin")
