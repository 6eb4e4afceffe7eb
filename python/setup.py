"""Build hook for ``pip install ./python``: the package carries the libtether (and the tether
command) of this checkout's build tree, so an installed package finds them next to itself with
no TETHER_LIBRARY and no ``cmake --install``. TETHER_BUILD_DIR names another build folder. Without
a build the package installs alone and looks in the usual places (tether/_lib.py)."""

import glob
import importlib.util
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


def _build_dirs():
    explicit = os.environ.get("TETHER_BUILD_DIR")
    if explicit:
        return [explicit]
    # tether/_lib.py alone (the package's __init__ needs numpy, which a build may not have).
    spec = importlib.util.spec_from_file_location("_tether_lib", os.path.join(HERE, "tether",
                                                                              "_lib.py"))
    lib = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lib)
    return lib._build_trees(os.path.join(HERE, "tether"))


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        for folder in _build_dirs():
            found = [p for p in glob.glob(os.path.join(folder, "libtether*"))
                     if p.endswith((".so", ".dylib")) or ".so." in p]
            if not found:
                continue
            target = os.path.join(self.build_lib, "tether")
            for path in found + [os.path.join(folder, "tether")]:
                if os.path.isfile(path):  # symlinks are copied as the files they name
                    shutil.copy2(path, os.path.join(target, os.path.basename(path)))
            break


setup(cmdclass={"build_py": BuildWithLibrary})
