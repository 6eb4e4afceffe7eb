# cmake/zig/rules.cmake - read after CMake's own Darwin rules (CMAKE_USER_MAKE_RULES_OVERRIDE, set in
# cmake/macos.cmake). Those rules learn the macOS version from sw_vers, absent on Linux, and without
# it leave rpath support out, so a dylib would be named by its build directory instead of @rpath.
set(CMAKE_SHARED_LIBRARY_RUNTIME_C_FLAG "-Wl,-rpath,")
set(CMAKE_SHARED_LIBRARY_RUNTIME_C_FLAG_SEP ",")
