#include "tracelane/classify.hpp"

#include "tracelane/rules.hpp"

namespace tracelane {

// The built-in rules (SPEC 3) live in one place, Rules::default_json(); these are the
// shorthands the tests and the defaults use.
const std::vector<GroupInfo>& default_groups() { return Rules::defaults().groups(); }

int group_index(std::string_view id) { return Rules::defaults().group_index(id); }

int classify_slice(std::string_view cat, std::string_view name) { return Rules::defaults().classify(cat, name); }

bool is_measured_cat(std::string_view cat) {
  // By length first: each comparison is then of a known length, made inline, not a call to
  // memcmp (three passes ask this of every event).
  switch (cat.size()) {
    case 6:
      return cat == "kernel" || cat == "Kernel" || cat == "Memcpy" || cat == "Memset";
    case 10:
      return cat == "gpu_memcpy" || cat == "gpu_memset";
    default:
      return false;
  }
}

}  // namespace tracelane
