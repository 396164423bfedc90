"""`pip install .`: the module tracelane._core is built by CMake (cmake/Python.cmake),
for the interpreter pip runs under, into build-python/; the version is the project's
(CMakeLists.txt). Tests and benchmarks are not built. CMAKE_BUILD_PARALLEL_LEVEL sets the
compile jobs (default: every core)."""

import os
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as handle:
        return re.search(r"project\(tracelane VERSION ([0-9.]+)", handle.read()).group(1)


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = os.path.join(ROOT, "build-python", "cmake")
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        subprocess.run(["cmake", "-S", ROOT, "-B", build, *generator, "-DCMAKE_BUILD_TYPE=Release",
                        "-DTRACELANE_BUILD_TESTS=OFF", "-DTRACELANE_BUILD_BENCH=OFF", "-DTRACELANE_PYTHON=ON",
                        "-DPython3_EXECUTABLE=" + sys.executable], check=True)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        subprocess.run(["cmake", "--build", build, "--target", "tracelane_python", "--parallel", jobs], check=True)
        built = os.path.join(build, "python", "tracelane", os.path.basename(self.get_ext_filename(ext.name)))
        if not os.path.exists(built):
            sys.exit(f"setup.py: CMake built no {built}: is pybind11-dev installed? (see the CMake output above)")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built, target)


setup(version=project_version(),
      ext_modules=[Extension("tracelane._core", sources=[])],
      cmdclass={"build_ext": CMakeBuild},
      options={"build": {"build_base": os.path.join("build-python", "setuptools")}})
