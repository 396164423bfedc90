// The commands of `tracelane` (main.cpp's table). Each takes its argv with argv[0] the
// command's name and returns the exit status (options.hpp kExit*).
#pragma once

namespace tracelane::cli {

int run_compact(int argc, char** argv);  // compact_command.cpp
int run_merge(int argc, char** argv);    // merge_command.cpp
int run_restore(int argc, char** argv);  // restore_command.cpp
int run_rules(int argc, char** argv);    // rules_command.cpp
int run_sweep(int argc, char** argv);    // sweep/sweep_command.cpp
int run_report(int argc, char** argv);   // report/report_command.cpp
int run_check(int argc, char** argv);    // check_command.cpp: the verifier, src/check/check.hpp

}  // namespace tracelane::cli
