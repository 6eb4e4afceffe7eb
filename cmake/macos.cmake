# cmake/macos.cmake - toolchain file: cross-compile tether for macOS with Zig's C compiler, which ships
# macOS's libc headers and libSystem stubs. scripts/cross-macos.sh sets the environment and runs it:
#   TETHER_ZIG          the zig binary (0.11)
#   TETHER_MACOS_ARCH   aarch64 (Apple Silicon) or x86_64
#   TETHER_MACOS_PREFIX where jansson and cmocka for that architecture are installed
# The environment, not cache variables, carries these so CMake's own try_compile projects see them.
set(CMAKE_SYSTEM_NAME Darwin)
# macOS 11 (Darwin 20), the oldest Zig 0.11 targets.
set(CMAKE_SYSTEM_VERSION 20.0)
set(CMAKE_OSX_DEPLOYMENT_TARGET 11.0)
set(CMAKE_USER_MAKE_RULES_OVERRIDE ${CMAKE_CURRENT_LIST_DIR}/zig/rules.cmake)
set(CMAKE_SYSTEM_PROCESSOR $ENV{TETHER_MACOS_ARCH})
if(CMAKE_SYSTEM_PROCESSOR STREQUAL "aarch64")
  set(CMAKE_SYSTEM_PROCESSOR arm64)
endif()
set(CMAKE_C_COMPILER ${CMAKE_CURRENT_LIST_DIR}/zig/cc)
set(CMAKE_AR ${CMAKE_CURRENT_LIST_DIR}/zig/ar CACHE FILEPATH "")
set(CMAKE_RANLIB ${CMAKE_CURRENT_LIST_DIR}/zig/ranlib CACHE FILEPATH "")
# Zig's linker signs arm64 binaries itself; no install_name_tool runs at build time.
set(CMAKE_FIND_ROOT_PATH $ENV{TETHER_MACOS_PREFIX})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(ENV{PKG_CONFIG_LIBDIR} $ENV{TETHER_MACOS_PREFIX}/lib/pkgconfig)
set(ENV{PKG_CONFIG_SYSROOT_DIR} "")
