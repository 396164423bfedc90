#!/usr/bin/env python3
"""The Debian package: `cpack -G DEB` from the existing build (no rebuild), its control
fields (every library the binary links is a Depends: of the package that ships it),
`apt-get install ./tracelane_*.deb`, the installed tracelane on the bundled example and its
Slurm scripts pointing at /usr/bin/tracelane, then `dpkg -r tracelane`: nothing `dpkg -L`
listed while installed may remain, except directories that existed before.

    test_deb.py --build-dir BUILD --source-dir SRC --version X.Y.Z [--cpack CPACK]

It changes the system (installs and removes a package), so it runs only as root with dpkg,
dpkg-deb, apt-get and dpkg-shlibdeps present, and refuses (skip, exit 77, saying why) when a
tracelane package is installed already or any file of the package exists already (it would
be replaced, then removed). The package is removed again however the test ends (exception,
SIGTERM from ctest's timeout, SIGINT, SIGHUP).
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from e2e_common import Checks  # noqa: E402
from install_common import VERSION_LINE, describe, read_trace, run, skip  # noqa: E402

PACKAGE = "tracelane"
APT_ENV = dict(os.environ, DEBIAN_FRONTEND="noninteractive")


def package_installed():
    result = run(["dpkg-query", "-W", "-f=${db:Status-Status}", PACKAGE])
    return result.returncode == 0 and result.stdout.strip() not in ("", "not-installed", "config-files")


def remove_package():
    result = run(["dpkg", "-r", PACKAGE], env=APT_ENV)
    print(f"    dpkg -r {PACKAGE}: rc={result.returncode}", flush=True)
    return result


def linked_library_packages(binary):
    """{soname: Debian package} for every library `ldd` resolves for the binary."""
    packages = {}
    for line in run(["ldd", binary]).stdout.splitlines():
        match = re.match(r"^\s*(\S+) => (/\S+)", line)
        if not match:
            continue
        soname, path = match.groups()
        candidates = [path, os.path.realpath(path)]
        candidates += [p[4:] if p.startswith("/usr/") else "/usr" + p for p in list(candidates)]  # merged /usr
        for candidate in candidates:
            owner = run(["dpkg", "-S", candidate])
            if owner.returncode == 0:
                packages[soname] = owner.stdout.split(":")[0].strip()
                break
        else:
            packages[soname] = None
    return packages


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("--cpack", default="cpack")
    args = parser.parse_args()
    build, source = os.path.abspath(args.build_dir), os.path.abspath(args.source_dir)

    if os.geteuid() != 0:
        skip("install_deb: needs root to install and remove the package (CI runs it as root)")
    missing = [tool for tool in ("dpkg", "dpkg-deb", "dpkg-query", "apt-get", "dpkg-shlibdeps", "file", "ldd")
               if not shutil.which(tool)]
    if missing:
        skip(f"install_deb: missing {' '.join(missing)} (a Debian system with dpkg-dev and file)")
    if package_installed():
        skip(f"install_deb: a {PACKAGE} package is installed on this machine; not touching it")

    checks = Checks("install_deb")
    work = tempfile.mkdtemp(prefix="tracelane-deb-")
    we_installed = False

    def on_signal(number, _frame):
        raise SystemExit(f"signal {number}")
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, on_signal)

    try:
        print("--- cpack -G DEB", flush=True)
        packed = run([args.cpack, "-G", "DEB", "-B", os.path.join(work, "package"),
                      "--config", os.path.join(build, "CPackConfig.cmake")], cwd=build)
        debs = [os.path.join(work, "package", n) for n in os.listdir(os.path.join(work, "package"))
                if n.endswith(".deb")] if os.path.isdir(os.path.join(work, "package")) else []
        if not checks.check(packed.returncode == 0 and len(debs) == 1, f"cpack -G DEB: {describe(packed)}"):
            return checks.finish()
        deb = debs[0]
        print(f"    {os.path.basename(deb)}", flush=True)
        checks.check(re.match(rf"^{PACKAGE}_{re.escape(args.version)}_[a-z0-9]+\.deb$", os.path.basename(deb)),
                     f"package file name {os.path.basename(deb)}")

        print("--- control fields", flush=True)
        fields = {}
        for field in ("Package", "Version", "Architecture", "Maintainer", "Depends", "Section", "Description"):
            fields[field] = run(["dpkg-deb", "-f", deb, field]).stdout.strip()
            print(f"    {field}: {fields[field].splitlines()[0] if fields[field] else ''}")
        checks.equal(fields["Package"], PACKAGE, "Package")
        checks.equal(fields["Version"], args.version, "Version")
        checks.equal(fields["Architecture"], run(["dpkg", "--print-architecture"]).stdout.strip(), "Architecture")
        checks.check(re.match(r"^.+ <[^<>@\s]+@[^<>@\s]+>$", fields["Maintainer"]), f"Maintainer {fields['Maintainer']!r}")
        checks.check(len(fields["Description"].splitlines()) > 1, "Description has no long description")
        depends = {d.strip().split()[0] for d in fields["Depends"].replace("|", ",").split(",") if d.strip()}
        for soname, owner in linked_library_packages(os.path.join(build, "tracelane")).items():
            if checks.check(owner, f"no Debian package ships {soname}, which tracelane links"):
                checks.check(owner in depends, f"Depends lacks {owner} (ships {soname}): {fields['Depends']}")

        contents = run(["dpkg-deb", "-c", deb]).stdout.splitlines()
        # "drwxr-xr-x root/root 0 2026-12-01 04:00 ./usr/share/" (a link: "NAME -> TARGET")
        paths = ["/" + line.split(maxsplit=5)[5].split(" -> ")[0].removeprefix("./").rstrip("/")
                 for line in contents if len(line.split(maxsplit=5)) == 6]
        checks.check("/usr/bin/tracelane" in paths, f"package lacks /usr/bin/tracelane: {paths}")
        for line in contents:
            owner = line.split()[1] if len(line.split()) > 1 else ""
            checks.check(owner == "root/root", f"not owned by root/root in the package: {line}")
        clashes = [p for p in paths if os.path.lexists(p) and not os.path.isdir(p)]
        if clashes:
            shutil.rmtree(work, ignore_errors=True)
            skip(f"install_deb: {', '.join(clashes)} exist(s) already, not from a {PACKAGE} package; "
                 "installing would replace them and removing would delete them")
        existed_before = {p for p in paths if os.path.lexists(p)}

        print("--- apt-get install", flush=True)
        we_installed = True  # from here on, whatever happens, the package is removed again
        install = run(["apt-get", "install", "-y", "--no-install-recommends", "-o", "DPkg::Lock::Timeout=300", deb],
                      env=APT_ENV)
        if not checks.check(install.returncode == 0 and package_installed(), f"apt-get install: {describe(install)}"):
            return checks.finish()
        listed = [line for line in run(["dpkg", "-L", PACKAGE]).stdout.splitlines() if line.startswith("/")]
        checks.check("/usr/bin/tracelane" in listed, f"dpkg -L lacks /usr/bin/tracelane: {listed}")

        print("--- the installed tracelane", flush=True)
        version = run(["/usr/bin/tracelane", "--version"])
        match = VERSION_LINE.match(version.stdout)
        checks.check(version.returncode == 0 and match and match.group(1) == args.version,
                     f"/usr/bin/tracelane --version: {describe(version)}")
        example = os.path.join(source, "tests", "data", "example_trace.json")
        outputs = {}
        for name, program in (("installed", "/usr/bin/tracelane"), ("build", os.path.join(build, "tracelane"))):
            out = os.path.join(work, f"{name}.json.gz")
            result = run([program, "compact", example, "-o", out])
            if checks.check(result.returncode == 0, f"{name} tracelane compact: {describe(result)}"):
                outputs[name] = read_trace(out)
        if len(outputs) == 2:
            checks.check(outputs["installed"] == outputs["build"], "the packaged binary's output differs from the build's")
        for script in ("submit.sh", "tracelane-sweep.sbatch", "tracelane-plan.sbatch", "tracelane-array.sbatch",
                       "tracelane-combine.sbatch"):
            path = f"/usr/share/tracelane/slurm/{script}"
            checks.check(os.path.isfile(path) and "\ninstalled_tracelane='/usr/bin/tracelane'\n" in open(path).read(),
                         f"{path}: missing, or not pointing at /usr/bin/tracelane")
        for path in ("/usr/share/man/man1/tracelane.1", "/usr/share/bash-completion/completions/tracelane"):
            checks.check(path in listed, f"dpkg -L lacks {path}")

        print("--- dpkg -r", flush=True)
        removed = remove_package()
        checks.check(removed.returncode == 0 and not package_installed(), f"dpkg -r: {describe(removed)}")
        we_installed = package_installed()
        left = [p for p in listed if os.path.lexists(p) and p not in existed_before]
        checks.check(not left, f"left behind after dpkg -r: {left}")
        left_files = [p for p in listed if os.path.lexists(p) and not os.path.isdir(p)]
        checks.check(not left_files, f"files left behind after dpkg -r: {left_files}")
    finally:
        if we_installed and package_installed():
            print(f"cleaning up: removing the {PACKAGE} package this test installed", flush=True)
            remove_package()
        shutil.rmtree(work, ignore_errors=True)
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
