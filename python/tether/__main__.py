"""``python -m tether ARGS``: run the tether command (launch, config, bench, check) with ARGS.

The command is looked up as TETHER_BIN, then next to the loaded libtether (the build directory
holds both), then in the folders libtether is looked for in (the package folder, the checkout's
build trees, install prefixes: tether._lib.search_dirs), then on PATH. The process is replaced by
the command (exec), so its exit status and signals pass through unchanged.
"""

import os
import shutil
import sys

from . import _lib

_NAME = "tether"


def _is_program(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_command(environ=None):
    """Path of the tether command; FileNotFoundError listing the places tried."""
    environ = os.environ if environ is None else environ
    explicit = environ.get("TETHER_BIN")
    if explicit:
        if _is_program(explicit):
            return explicit
        raise FileNotFoundError(f"TETHER_BIN={explicit} is not an executable file")
    tried = []
    dirs = []
    try:
        lib_path = _lib.path()
        if os.sep in lib_path:  # a bare name was found by dlopen on the system path: no folder
            dirs.append(os.path.dirname(lib_path))
    except _lib.LibraryNotFoundError:
        pass  # the command may still be on PATH
    for _, folder in _lib.search_dirs(environ):
        # An install keeps the library in lib/ and the command in bin/.
        dirs += [folder, os.path.join(os.path.dirname(folder), "bin")]
    for folder in dict.fromkeys(dirs):
        path = os.path.join(folder, _NAME)
        if _is_program(path):
            return path
        tried.append(path)
    on_path = shutil.which(_NAME, path=environ.get("PATH"))
    if on_path:
        return on_path
    tried.append("PATH")
    raise FileNotFoundError("cannot find the tether command; tried TETHER_BIN (unset), "
                            + ", ".join(tried))


def main(argv):
    try:
        command = find_command()
    except FileNotFoundError as exc:
        print(f"python -m tether: {exc}", file=sys.stderr)
        return 2
    os.execv(command, [command] + argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
