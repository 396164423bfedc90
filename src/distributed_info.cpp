#include "tracelane/distributed_info.hpp"

#include <simdjson.h>

#include <algorithm>

namespace tracelane {

DistributedInfo read_distributed_info(const Trace& trace) {
  DistributedInfo info;
  const TopLevelField* field = trace.find_top("distributedInfo");
  if (!field) return info;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  simdjson::padded_string text(field->value_raw);
  if (parser.parse(text).get(root) || !root.is_object()) return info;
  int64_t rank;
  if (root["rank"].get_int64().get(rank) == simdjson::SUCCESS) info.rank = rank;
  simdjson::dom::element backend;
  if (root["backend"].get(backend) == simdjson::SUCCESS) info.backend_raw = simdjson::minify(backend);
  simdjson::dom::array groups;
  if (root["pg_config"].get_array().get(groups) == simdjson::SUCCESS) {
    for (simdjson::dom::element group : groups) {
      std::string_view pg_name, pg_desc;
      bool is_pp =
          (group["pg_name"].get_string().get(pg_name) == simdjson::SUCCESS && pg_name == "torchtitan_real_pp") ||
          (group["pg_desc"].get_string().get(pg_desc) == simdjson::SUCCESS && pg_desc == "mesh_pp");
      simdjson::dom::array ranks;
      if (!is_pp || group["ranks"].get_array().get(ranks)) continue;
      std::vector<int64_t> members;
      for (simdjson::dom::element r : ranks) {
        int64_t v;
        if (r.get_int64().get(v) == simdjson::SUCCESS) members.push_back(v);
      }
      info.pp_groups.push_back(std::move(members));
    }
  }
  return info;
}

int single_trace_pp_rank(const Trace& trace) {
  DistributedInfo info = read_distributed_info(trace);
  if (!info.rank) return 0;
  for (const auto& group : info.pp_groups) {
    auto it = std::find(group.begin(), group.end(), *info.rank);
    if (it != group.end()) return int(it - group.begin());
  }
  return 0;
}

}  // namespace tracelane
