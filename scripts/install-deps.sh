#!/usr/bin/env bash
# scripts/install-deps.sh - install what tether needs to build and test, only what is missing.
# Debian/Ubuntu: apt-get (as root, or with sudo). macOS: Homebrew. Says every command it runs.
# Usage: scripts/install-deps.sh [--with-tests]   (--with-tests adds what `make test` runs, so that
# a fresh machine's suite skips nothing: ssh server, numpy, pytest, torch, on Linux iperf3
# (netns.shaping), valgrind and strace (docs/tuning.md, run by docs.commands), clang with its
# libFuzzer runtime for tests/fuzz, clang-format for scripts/check-format.sh, and the MPIs the mpi
# backend's plugins are built and tested against: Open MPI, plus MPICH on Debian, which installs
# beside it and leaves mpirun to Open MPI)
set -euo pipefail

with_tests=0
[ "${1:-}" = "--with-tests" ] && with_tests=1

run() { echo "+ $*" >&2; "$@"; }

case "$(uname -s)" in
Darwin)
    command -v brew >/dev/null 2>&1 || {
        echo "install-deps: Homebrew is needed (https://brew.sh), or install cmake, pkg-config, jansson and cmocka by hand" >&2
        exit 1
    }
    pkgs=(cmake pkg-config jansson cmocka)
    [ $with_tests = 1 ] && pkgs+=(python numpy pytest open-mpi)
    missing=()
    for p in "${pkgs[@]}"; do brew list --versions "$p" >/dev/null 2>&1 || missing+=("$p"); done
    if [ ${#missing[@]} -gt 0 ]; then run brew install "${missing[@]}"; fi
    # macOS has no libibverbs-dev: the RDMA backend builds against the header shipped in the SDK
    # with macOS 26.2+, or is left out with a message from CMake (docs/macos.md). The torch tests
    # need PyTorch from pip (pip3 install torch); without it they are skipped.
    ;;
Linux)
    pkgs=(build-essential cmake pkg-config libjansson-dev libibverbs-dev librdmacm-dev)
    if [ $with_tests = 1 ]; then
        pkgs+=(libcmocka-dev openssh-server openssh-client iproute2 python3 python3-numpy python3-pytest python3-torch libtorch-dev pybind11-dev)
        pkgs+=(clang libclang-rt-dev) # tests/fuzz: libFuzzer
        pkgs+=(clang-format)          # scripts/check-format.sh (CI's format phase)
        pkgs+=(openmpi-bin libopenmpi-dev mpich libmpich-dev) # tests/mpi: a plugin for each
        pkgs+=(iperf3)                                        # tests/netns: netns.shaping
        pkgs+=(valgrind strace)                               # docs.commands: docs/tuning.md
    fi
    missing=()
    for p in "${pkgs[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        sudo=""
        [ "$(id -u)" = 0 ] || sudo="sudo"
        export DEBIAN_FRONTEND=noninteractive
        # iperf3's package asks whether to run its daemon at boot: answer no beforehand, so
        # nothing waits for a reply (the tests start their own iperf3)
        if [[ " ${missing[*]} " == *" iperf3 "* ]]; then
            echo "iperf3 iperf3/start_daemon boolean false" | run $sudo debconf-set-selections
        fi
        run $sudo apt-get update -qq
        run $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
    fi
    ;;
*)
    echo "install-deps: unsupported system $(uname -s); install cmake, pkg-config, jansson and cmocka by hand" >&2
    exit 1
    ;;
esac
