#include "tracelane/classify.hpp"

#include "tracelane/rules.hpp"

namespace tracelane {

// The built-in rules (SPEC 3) live in one place, Rules::default_json(); these are the
// shorthands the tests and the defaults use.
const std::vector<GroupInfo>& default_groups() { return Rules::defaults().groups(); }

int group_index(std::string_view id) { return Rules::defaults().group_index(id); }

int classify_slice(std::string_view cat, std::string_view name) { return Rules::defaults().classify(cat, name); }

bool is_measured_cat(std::string_view cat) {
  return cat == "kernel" || cat == "Kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "Memcpy" ||
         cat == "Memset";
}

}  // namespace tracelane
