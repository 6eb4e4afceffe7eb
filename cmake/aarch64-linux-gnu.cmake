# cmake/aarch64-linux-gnu.cmake - toolchain file: cross-compile tether for 64-bit ARM Linux with
# Debian's gcc-aarch64-linux-gnu, against the arm64 multiarch packages (libjansson-dev:arm64,
# libcmocka-dev:arm64), and run what it builds under qemu-aarch64 (qemu-user) so ctest executes the
# arm64 tests on an x86-64 machine. scripts/cross-aarch64.sh installs the packages and runs it.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_AR aarch64-linux-gnu-ar CACHE FILEPATH "")
set(CMAKE_RANLIB aarch64-linux-gnu-ranlib CACHE FILEPATH "")
# -L /: the programs run with the loader and libc of the multiarch package libc6:arm64
# (/lib/ld-linux-aarch64.so.1, /lib/aarch64-linux-gnu), the ones jansson's and cmocka's arm64
# packages come with. Not -L /usr/aarch64-linux-gnu: that loader is libc6-arm64-cross's, the build's
# sysroot, which is not always the same Debian revision as libc6:arm64, and the loader still finds
# libc.so.6 in /lib/aarch64-linux-gnu; mixed, the two hang in the first pthread_create (seen with
# 2.36-8cross1 and 2.36-9+deb12u14). Linking against the sysroot's libc and running on the
# multiarch one is the usual older-build, newer-runtime case.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /)
# Headers in /usr/include are shared by every architecture under multiarch; libraries must be the
# arm64 ones.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_SYSROOT_DIR} "")
