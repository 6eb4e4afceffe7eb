#!/usr/bin/env bash
# scripts/check-format.sh - do the tree's C and C++ sources and headers pass the repo's .clang-format?
# CI runs it (.ci/run), so a change that breaks the style fails there rather than in the next
# person's diff.
#
# Usage: scripts/check-format.sh [--list]
#   (no option)  clang-format --dry-run -Werror on every file, its diagnostics shown; exit 1 when
#                any file does not pass
#   --list       only the names of the files that do not pass, one a line; exit 1 when any
# The files: git ls-files '*.c' '*.h' '*.cpp' (the torch binding), the set `make format` rewrites
# (the tree holds no third-party C or C++). The clang-format that runs is the first on PATH, or $CLANG_FORMAT.
set -euo pipefail
cd "$(dirname "$0")/.."

list=0
case "${1:-}" in
--list) list=1 ;;
"") ;;
*)
    echo "usage: scripts/check-format.sh [--list]" >&2
    exit 2
    ;;
esac

cf=${CLANG_FORMAT:-clang-format}
if ! command -v "$cf" >/dev/null 2>&1; then
    echo "check-format: $cf not found (scripts/install-deps.sh --with-tests installs it)" >&2
    exit 2
fi
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    echo "check-format: not a git checkout: the files checked are what git ls-files lists" >&2
    exit 2
fi

failed=0
while IFS= read -r -d '' f; do
    if [ $list = 1 ]; then
        "$cf" --dry-run -Werror "$f" >/dev/null 2>&1 || { echo "$f"; failed=$((failed + 1)); }
    else
        "$cf" --dry-run -Werror "$f" || failed=$((failed + 1))
    fi
done < <(git ls-files -z '*.c' '*.h' '*.cpp')

if [ $list = 0 ]; then
    if [ $failed -gt 0 ]; then
        echo "check-format: $failed files do not pass .clang-format ($cf: $("$cf" --version))" >&2
        echo "check-format: 'make format' rewrites them; '$0 --list' names them" >&2
    else
        echo "check-format: every C and C++ source and header passes .clang-format"
    fi
fi
[ $failed = 0 ]
