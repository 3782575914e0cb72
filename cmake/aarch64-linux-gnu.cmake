# Cross-compiling for arm64 Linux with Debian's g++-aarch64-linux-gnu (test/device/neon-check.sh):
# static binaries, so qemu-aarch64 runs them without an arm64 sysroot.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
# GCC_VERSION=11 picks Debian's versioned cross compilers (JetPack 6's GCC is 11).
if(DEFINED ENV{GCC_VERSION})
  set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc-$ENV{GCC_VERSION})
  set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++-$ENV{GCC_VERSION})
else()
  set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
  set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
endif()
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
