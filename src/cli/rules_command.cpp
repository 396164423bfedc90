// `tracelane rules --print-defaults | --check FILE`: the built-in rules, or a rules file
// validated.
#include <iostream>

#include "commands.hpp"
#include "files.hpp"
#include "options.hpp"
#include "printable.hpp"

namespace tracelane::cli {

int run_rules(int argc, char** argv) {
  bool print_defaults = false;
  std::string check;
  po::options_description options("rules options");
  options.add_options()("help,h", "show this help")("print-defaults", po::bool_switch(&print_defaults),
                                                    "print the built-in rules (SPEC 3 and 7) as a rules file")(
      "check", po::value(&check), "validate a rules file and print the groups it defines");
  CommandLine line{"rules", "usage: tracelane rules --print-defaults | --check FILE\n", "\n"};
  line.options_after_error = true;
  if (auto done = parse_command_line(argc, argv, line, options)) return *done;
  if (!print_defaults && check.empty()) {
    std::cout << line.usage << "\n" << options;
    return kExitUsage;
  }
  if (print_defaults) {
    std::cout << Rules::default_json();
    return kExitOk;
  }
  try {
    Rules rules = Rules::parse(read_file(check), check);
    std::string text = check + ": ok; groups in order:";
    for (const auto& group : rules.groups()) text += " " + group.id + " (\"" + group.label + "\")";
    std::cout << printable(text) << "\n";
    return kExitOk;
  } catch (const Error& e) {
    print_error(e.what());
    return kExitUsage;
  }
}

}  // namespace tracelane::cli
