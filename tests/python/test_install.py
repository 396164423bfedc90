#!/usr/bin/env python3
"""`cmake --install BUILD --component python` (issue 26): the package lands in the
interpreter's site-packages (staged under DESTDIR here), imports from there with the
version of the build, and compacts; a plain `cmake --install` leaves it out unless
TRACELANE_INSTALL_PYTHON is ON.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import e2e_common  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--build-dir", required=True)
parser.add_argument("--cmake", required=True)
parser.add_argument("--site-dir", required=True, help="TRACELANE_PYTHON_INSTALL_DIR")
parser.add_argument("--version", required=True)
parser.add_argument("--install-by-default", default="OFF", help="TRACELANE_INSTALL_PYTHON")
parser.add_argument("--repo-root", required=True)
args = parser.parse_args()
checks = e2e_common.Checks("python_install")

stage = tempfile.mkdtemp(prefix="tracelane_python_install_")
try:
    env = dict(os.environ, DESTDIR=os.path.join(stage, "component"))
    done = e2e_common.run([args.cmake, "--install", args.build_dir, "--component", "python"], env=env)
    checks.equal(done.returncode, 0, f"cmake --install --component python: {e2e_common.describe(done)}")
    site = os.path.join(stage, "component") + args.site_dir
    package = os.path.join(site, "tracelane")
    names = sorted(os.listdir(package)) if os.path.isdir(package) else []
    checks.check(any(n.startswith("_core.") and n.endswith(".so") for n in names), f"the module installed: {names}")
    for name in ("__init__.py", "errors.py", "profiler.py"):
        checks.check(name in names, f"{name} installed")
    example = os.path.join(args.repo_root, "tests", "data", "example_trace.json")
    output = os.path.join(stage, "example_compacted.json")
    code = ("import sys, tracelane\n"
            "print(tracelane.__version__, tracelane.__file__)\n"
            "print(tracelane.compact(sys.argv[1], sys.argv[2])['compacted_lanes'])\n")
    env = dict(os.environ, PYTHONPATH=site)
    done = e2e_common.run([sys.executable, "-c", code, example, output], env=env, cwd=stage)
    if checks.check(done.returncode == 0, f"import the installed package: {e2e_common.describe(done)}"):
        version, where = done.stdout.split("\n")[0].split(" ", 1)
        checks.equal(version, args.version, "tracelane.__version__")
        checks.check(where.startswith(package), f"imported from the installed package: {where}")
        checks.equal(done.stdout.split("\n")[1], "6", "the installed package compacts the example (6 lanes)")

    env = dict(os.environ, DESTDIR=os.path.join(stage, "plain"))
    done = e2e_common.run([args.cmake, "--install", args.build_dir, "--prefix", "/usr/local"], env=env)
    checks.equal(done.returncode, 0, f"cmake --install: {e2e_common.describe(done)}")
    installed = os.path.isdir(os.path.join(stage, "plain") + args.site_dir + "/tracelane")
    checks.equal(installed, args.install_by_default.upper() in ("ON", "1", "TRUE", "YES"),
                 "a plain cmake --install installs the package exactly when TRACELANE_INSTALL_PYTHON is ON")
finally:
    shutil.rmtree(stage, ignore_errors=True)
sys.exit(checks.finish())
