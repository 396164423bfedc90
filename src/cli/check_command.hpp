// `tracelane check ORIGINAL COMPACTED`: the command-line side of the independent verifier
// (src/check/check.hpp).
#pragma once

namespace tracelane::cli {

// argv[0] is "check". Exit 0: OK; 1: violations; 2: usage or an unreadable input.
int run_check(int argc, char** argv);

}  // namespace tracelane::cli
