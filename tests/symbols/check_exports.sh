#!/usr/bin/env bash
# tests/symbols/check_exports.sh - the public prefix means public: every symbol libtether.so exports
# is a function include/tether.h declares with TETHER_API (and every one it declares is exported),
# and no function of libtether.a outside the header takes the public prefix tether_ (internal
# functions are tether__, so a program linking the library can tell API from internals, and a new
# internal function cannot slip into the public namespace unnoticed).
# Usage: check_exports.sh NM HEADER LIBTETHER.so LIBTETHER.a
set -euo pipefail
nm=$1 header=$2 shared=$3 static=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Declared: "TETHER_API <type> tether_name(" (the name is always on the TETHER_API line).
grep -oE 'TETHER_API[^(]*\btether_[a-z0-9_]+[[:space:]]*\(' "$header" |
    grep -oE 'tether_[a-z0-9_]+' | sort -u >"$tmp/declared"
[ -s "$tmp/declared" ] || { echo "no TETHER_API declaration found in $header"; exit 1; }

# Exported by the shared library; names of the toolchain and sanitizer runtimes (__*, _init,
# _fini) are not ours.
"$nm" -D --defined-only "$shared" | awk '{print $NF}' | sed 's/@.*//' |
    grep -vE '^(__|_init$|_fini$|_edata$|_end$|__bss_start$)' | sort -u >"$tmp/exported"

fail=0
if extra=$(comm -23 "$tmp/exported" "$tmp/declared") && [ -n "$extra" ]; then
    echo "libtether.so exports symbols include/tether.h does not declare (mark them internal:"
    echo "tether__ prefix, no TETHER_API):"
    echo "$extra" | sed 's/^/  /'
    fail=1
fi
if missing=$(comm -13 "$tmp/exported" "$tmp/declared") && [ -n "$missing" ]; then
    echo "include/tether.h declares functions libtether.so does not export:"
    echo "$missing" | sed 's/^/  /'
    fail=1
fi

# Functions (T) of the static library named tether_x (one underscore) but absent from the header.
"$nm" -g --defined-only "$static" | awk '$2 == "T" {print $3}' | grep -E '^tether_[a-z0-9]' |
    sort -u >"$tmp/static_public"
if leaked=$(comm -23 "$tmp/static_public" "$tmp/declared") && [ -n "$leaked" ]; then
    echo "internal functions named with the public prefix tether_ (rename them tether__):"
    echo "$leaked" | sed 's/^/  /'
    fail=1
fi

[ "$fail" = 0 ] && echo "symbols: ok ($(wc -l <"$tmp/declared") public functions, nothing else)"
exit "$fail"
