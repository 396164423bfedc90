#!/usr/bin/env python3
"""cmake/WriteBuildInfo.cmake, the commit `tracelane --version` names, in the cases a build
meets: a git checkout (the short HEAD), a source tree that is no checkout (a release
tarball: "unknown"), a tarball unpacked inside some other repository (not that
repository's commit: "unknown"), an override for packagers, and an override that would
break the C string literal (refused).

    test_build_info.py --source-dir SRC [--cmake CMAKE]
"""

import argparse
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from e2e_common import Checks  # noqa: E402
from install_common import describe, run  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--cmake", default="cmake")
    args = parser.parse_args()
    source = os.path.abspath(args.source_dir)
    script = os.path.join(source, "cmake", "WriteBuildInfo.cmake")
    git = shutil.which("git")
    checks = Checks("build_info")
    work = tempfile.mkdtemp(prefix="tracelane-build-info-")

    def commit_for(source_dir, override=""):
        header = os.path.join(work, "build_info.hpp")
        if os.path.exists(header):
            os.remove(header)
        result = run([args.cmake, f"-DSOURCE_DIR={source_dir}", f"-DOUTPUT={header}",
                      f"-DGIT_EXECUTABLE={git or ''}", f"-DCOMMIT_OVERRIDE={override}", "-P", script])
        if result.returncode != 0:
            return None, result
        match = re.search(r'#define TRACELANE_GIT_COMMIT "([^"\\]*)"', open(header).read())
        return (match.group(1) if match else "<no define>"), result

    try:
        tarball = os.path.join(work, "tracelane-0.1.0")
        os.makedirs(os.path.join(tarball, "cmake"))
        checks.equal(commit_for(tarball)[0], "unknown", "commit of a source tree that is not a git checkout")
        if git:
            # A tarball unpacked inside another repository: that repository's commit is not ours.
            outer = os.path.join(work, "outer")
            os.makedirs(os.path.join(outer, "vendor", "tracelane"))
            for argv in (["init", "-q"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                                          "--allow-empty", "-m", "outer"]):
                result = run([git, "-C", outer, *argv])
                checks.check(result.returncode == 0, f"git {argv[0]}: {describe(result)}")
            checks.equal(commit_for(os.path.join(outer, "vendor", "tracelane"))[0], "unknown",
                         "commit of a source tree inside another repository")
            top = run([git, "-C", source, "rev-parse", "--show-toplevel"])
            if top.returncode == 0 and os.path.realpath(top.stdout.strip()) == os.path.realpath(source):
                head = run([git, "-C", source, "rev-parse", "--short", "HEAD"]).stdout.strip()
                commit = commit_for(source)[0] or ""
                checks.check(re.fullmatch(re.escape(head) + r"(-dirty)?", commit),
                             f"commit of the checkout: {commit!r}, HEAD is {head}")
            else:
                print("NOTE: the source is not a git checkout of its own; its commit was not checked")
        else:
            print("NOTE: git is not installed: only the no-checkout and override cases were checked")
        checks.equal(commit_for(tarball, "1a2b3c4")[0], "1a2b3c4", "-DTRACELANE_GIT_COMMIT override")
        refused, result = commit_for(tarball, 'x" "y')
        checks.check(refused is None and "only letters" in result.stderr,
                     f"an override with a quote is refused: {describe(result)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
