// Semantic groups of GPU slices (SPEC 3): which lane family a slice belongs to.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tracelane/rules.hpp"

namespace tracelane {

// The groups in display order (SPEC 3, plus "sync" from SPEC 9.3).
const std::vector<GroupInfo>& default_groups();
int group_index(std::string_view id);

// Classifies a measured slice by cat and name; returns an index into default_groups().
int classify_slice(std::string_view cat, std::string_view name);

// Which cats are measured slices (SPEC 2 and 9.4), and which are memcpy/memset.
bool is_measured_cat(std::string_view cat);

}  // namespace tracelane
