#include "tracelane/classify.hpp"

#include <algorithm>

namespace tracelane {

const std::vector<GroupInfo>& default_groups() {
  static const std::vector<GroupInfo> groups = {
      {"compute", "Compute"},
      {"symmetric_memory_barrier", "Symmetric-memory barrier"},
      {"nccl_all_gather", "NCCL all-gather"},
      {"nccl_reduce_scatter", "NCCL reduce-scatter"},
      {"nccl_all_reduce", "NCCL all-reduce"},
      {"nccl_other", "NCCL other"},
      {"memcpy", "GPU memcpy"},
      {"memset", "GPU memset"},
      {"sync", "GPU sync"},
  };
  return groups;
}

int group_index(std::string_view id) {
  const auto& groups = default_groups();
  for (size_t i = 0; i < groups.size(); ++i)
    if (groups[i].id == id) return int(i);
  return -1;
}

bool is_measured_cat(std::string_view cat) {
  return cat == "kernel" || cat == "Kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "Memcpy" ||
         cat == "Memset";
}

namespace {
// Case-insensitive substring search for an all-lowercase needle.
bool contains_lower(std::string_view haystack, std::string_view needle) {
  if (needle.size() > haystack.size()) return false;
  for (size_t i = 0; i + needle.size() <= haystack.size(); ++i) {
    size_t k = 0;
    while (k < needle.size()) {
      char c = haystack[i + k];
      if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
      if (c != needle[k]) break;
      ++k;
    }
    if (k == needle.size()) return true;
  }
  return false;
}
}  // namespace

int classify_slice(std::string_view cat, std::string_view name) {
  static const int memcpy = group_index("memcpy"), memset = group_index("memset");
  static const int all_gather = group_index("nccl_all_gather"), reduce_scatter = group_index("nccl_reduce_scatter"),
                   all_reduce = group_index("nccl_all_reduce"), nccl_other = group_index("nccl_other"),
                   barrier = group_index("symmetric_memory_barrier"), compute = group_index("compute"),
                   sync = group_index("sync");
  if (cat == "gpu_memcpy" || cat == "Memcpy") return memcpy;
  if (cat == "gpu_memset" || cat == "Memset") return memset;
  if (cat == "cuda_sync") return sync;
  if (contains_lower(name, "nccl")) {
    if (contains_lower(name, "allgather")) return all_gather;
    if (contains_lower(name, "reducescatter")) return reduce_scatter;
    if (contains_lower(name, "allreduce")) return all_reduce;
    return nccl_other;
  }
  if (contains_lower(name, "symmetric_memory") && contains_lower(name, "barrier")) return barrier;
  return compute;
}

}  // namespace tracelane
