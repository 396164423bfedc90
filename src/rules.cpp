// Rules documents. Matching is on the hot path (every GPU slice), so the common
// conditions are plain: a cat set and lower-case substrings; a regex only when a rule
// asks for one.
#include "tracelane/rules.hpp"

#include <simdjson.h>

#include <algorithm>
#include <map>

#include "tracelane/trace.hpp"

namespace tracelane {
namespace {

std::string title_case(std::string_view id) {
  std::string label;
  bool start = true;
  for (char c : id) {
    if (c == '_') {
      label.push_back(' ');
      start = true;
      continue;
    }
    label.push_back(start && c >= 'a' && c <= 'z' ? char(c - 'a' + 'A') : c);
    start = false;
  }
  return label;
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
  return out;
}

}  // namespace

const std::string& Rules::default_json() {
  static const std::string json = R"({
  "groups": [
    {"id": "compute", "label": "Compute"},
    {"id": "symmetric_memory_barrier", "label": "Symmetric-memory barrier"},
    {"id": "nccl_all_gather", "label": "NCCL all-gather"},
    {"id": "nccl_reduce_scatter", "label": "NCCL reduce-scatter"},
    {"id": "nccl_all_reduce", "label": "NCCL all-reduce"},
    {"id": "nccl_other", "label": "NCCL other"},
    {"id": "memcpy", "label": "GPU memcpy"},
    {"id": "memset", "label": "GPU memset"},
    {"id": "sync", "label": "GPU sync"}
  ],
  "classify": [
    {"cat": ["gpu_memcpy", "Memcpy"], "group": "memcpy"},
    {"cat": ["gpu_memset", "Memset"], "group": "memset"},
    {"cat": ["cuda_sync"], "group": "sync"},
    {"name_contains": ["nccl", "allgather"], "group": "nccl_all_gather"},
    {"name_contains": ["nccl", "reducescatter"], "group": "nccl_reduce_scatter"},
    {"name_contains": ["nccl", "allreduce"], "group": "nccl_all_reduce"},
    {"name_contains": ["nccl"], "group": "nccl_other"},
    {"name_contains": ["symmetric_memory", "barrier"], "group": "symmetric_memory_barrier"},
    {"group": "compute"}
  ],
  "pp_annotations": {
    "prefix": "PP:",
    "patterns": []
  }
}
)";
  return json;
}

const Rules& Rules::defaults() {
  static const Rules rules = parse(default_json(), "(built-in rules)");
  return rules;
}

Rules Rules::parse(std::string_view json, const std::string& source) {
  auto fail = [&](const std::string& where, const std::string& problem) -> void {
    throw Error(source + ": " + (where.empty() ? "" : where + ": ") + problem);
  };
  simdjson::dom::parser parser;
  simdjson::dom::object root;
  simdjson::padded_string text(json);
  if (auto error = parser.parse(text).get(root)) fail("", std::string("not a JSON object: ") + simdjson::error_message(error));
  Rules rules;
  std::map<std::string, int> index;
  auto group_of = [&](const std::string& id) {
    auto it = index.find(id);
    if (it != index.end()) return it->second;
    int k = int(rules.groups_.size());
    rules.groups_.push_back({id, title_case(id)});
    index[id] = k;
    return k;
  };
  for (auto field : root) {
    if (field.key != "groups" && field.key != "classify" && field.key != "pp_annotations")
      fail("", "unknown key \"" + std::string(field.key) + "\" (expected groups, classify, pp_annotations)");
  }
  // Listed groups first, in order.
  simdjson::dom::array groups;
  if (root["groups"].get_array().get(groups) == simdjson::SUCCESS) {
    size_t k = 0;
    for (auto group : groups) {
      std::string where = "group #" + std::to_string(++k);
      std::string_view id, label;
      if (group["id"].get_string().get(id) || id.empty()) fail(where, "needs a non-empty string \"id\"");
      if (index.count(std::string(id))) fail(where, "group \"" + std::string(id) + "\" is listed twice");
      int g = group_of(std::string(id));
      if (group["label"].get_string().get(label) == simdjson::SUCCESS) rules.groups_[g].label = std::string(label);
    }
  } else if (root["groups"].error() != simdjson::NO_SUCH_FIELD) {
    fail("groups", "must be a list of {\"id\", \"label\"}");
  }
  simdjson::dom::array classify;
  if (root["classify"].get_array().get(classify)) fail("classify", "a list of rules is required");
  std::vector<std::string> rule_groups;  // group id of each rule, resolved once all are known
  for (auto element : classify) {
    ClassifyRule rule;
    rule.where = "classify rule #" + std::to_string(rules.rules_.size() + 1);
    simdjson::dom::object object;
    if (element.get_object().get(object)) fail(rule.where, "must be an object");
    std::string_view group;
    if (object["group"].get_string().get(group) || group.empty()) fail(rule.where, "needs a non-empty string \"group\"");
    rule.where += " (group \"" + std::string(group) + "\")";
    for (auto field : object) {
      std::string_view key = field.key;
      if (key == "group") continue;
      if (key == "cat" || key == "name_contains") {
        simdjson::dom::array list;
        if (field.value.get_array().get(list)) fail(rule.where, "\"" + std::string(key) + "\" must be a list of strings");
        for (auto item : list) {
          std::string_view s;
          if (item.get_string().get(s)) fail(rule.where, "\"" + std::string(key) + "\" must be a list of strings");
          if (key == "cat")
            rule.cats.emplace_back(s);
          else
            rule.name_contains.push_back(lower(s));
        }
      } else if (key == "name_regex") {
        std::string_view s;
        if (field.value.get_string().get(s)) fail(rule.where, "\"name_regex\" must be a string");
        rule.name_regex_text = std::string(s);
        try {
          rule.name_regex = std::make_shared<const std::regex>(
              rule.name_regex_text, std::regex::ECMAScript | std::regex::icase | std::regex::optimize);
        } catch (const std::regex_error& e) {
          fail(rule.where, "invalid name_regex \"" + rule.name_regex_text + "\": " + e.what());
        }
      } else {
        fail(rule.where, "unknown key \"" + std::string(key) + "\" (expected cat, name_contains, name_regex, group)");
      }
    }
    rule_groups.emplace_back(group);
    rules.rules_.push_back(std::move(rule));
  }
  // Groups only rules name come after the listed ones, sorted by id (SPEC 3).
  std::vector<std::string> extra;
  for (const auto& id : rule_groups)
    if (!index.count(id) && std::find(extra.begin(), extra.end(), id) == extra.end()) extra.push_back(id);
  std::sort(extra.begin(), extra.end());
  for (const auto& id : extra) group_of(id);
  for (size_t r = 0; r < rules.rules_.size(); ++r) rules.rules_[r].group = index[rule_groups[r]];
  // A slice no rule matches is compute, as in SPEC 3.
  rules.fallback_group_ = group_of("compute");

  simdjson::dom::object pp;
  if (root["pp_annotations"].get_object().get(pp) == simdjson::SUCCESS) {
    for (auto field : pp)
      if (field.key != "prefix" && field.key != "patterns")
        fail("pp_annotations", "unknown key \"" + std::string(field.key) + "\" (expected prefix, patterns)");
    std::string_view prefix;
    if (pp["prefix"].get_string().get(prefix) == simdjson::SUCCESS) rules.pp_prefix_ = std::string(prefix);
    simdjson::dom::array patterns;
    if (pp["patterns"].get_array().get(patterns) == simdjson::SUCCESS) {
      size_t p = 0;
      for (auto element : patterns) {
        std::string where = "pp_annotations pattern #" + std::to_string(++p);
        PpPattern pattern;
        std::string_view regex;
        if (element["regex"].get_string().get(regex)) fail(where, "needs a string \"regex\"");
        pattern.regex_text = std::string(regex);
        try {
          pattern.regex = std::make_shared<const std::regex>(pattern.regex_text, std::regex::ECMAScript);
        } catch (const std::regex_error& e) {
          fail(where, "invalid regex \"" + pattern.regex_text + "\": " + e.what());
        }
        int64_t value;
        if (element["stage"].get_int64().get(value) == simdjson::SUCCESS) pattern.stage = int(value);
        if (element["op"].get_int64().get(value) == simdjson::SUCCESS) pattern.op = int(value);
        if (element["microbatch"].get_int64().get(value) == simdjson::SUCCESS) pattern.microbatch = int(value);
        int groups_in_regex = int(pattern.regex->mark_count());
        for (int g : {pattern.stage, pattern.op, pattern.microbatch})
          if (g < 0 || g > groups_in_regex)
            fail(where, "capture group " + std::to_string(g) + " does not exist in \"" + pattern.regex_text + "\"");
        if (pattern.stage == 0 || pattern.op == 0) fail(where, "stage and op need capture groups");
        rules.pp_patterns_.push_back(std::move(pattern));
      }
    }
  } else if (root["pp_annotations"].error() != simdjson::NO_SUCH_FIELD) {
    fail("pp_annotations", "must be an object");
  }
  return rules;
}

int Rules::group_index(std::string_view id) const {
  for (size_t i = 0; i < groups_.size(); ++i)
    if (groups_[i].id == id) return int(i);
  return -1;
}

int Rules::classify(std::string_view cat, std::string_view name) const {
  // Kernel names run to hundreds of characters and several rules search them: lower-case
  // the name once (per thread, reused) and let find() do the searching.
  thread_local std::string lowered;
  bool have_lowered = false;
  for (const ClassifyRule& rule : rules_) {
    if (!rule.cats.empty() && std::find(rule.cats.begin(), rule.cats.end(), cat) == rule.cats.end()) continue;
    if (!rule.name_contains.empty() && !have_lowered) {
      lowered.assign(name);
      for (char& c : lowered)
        if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
      have_lowered = true;
    }
    bool all = true;
    for (const auto& needle : rule.name_contains)
      if (lowered.find(needle) == std::string::npos) {
        all = false;
        break;
      }
    if (!all) continue;
    if (rule.name_regex && !std::regex_search(name.begin(), name.end(), *rule.name_regex)) continue;
    return rule.group;
  }
  return fallback_group_;
}

std::vector<PpAction> Rules::pp_actions(std::string_view name) const {
  if (pp_prefix_ == "PP:" && pp_patterns_.empty()) return parse_pp_actions(name);  // the common case
  if (!pp_prefix_.empty() && name.substr(0, pp_prefix_.size()) == pp_prefix_) {
    // The built-in grammar after the prefix (SPEC 7, 9.5).
    std::string standard = "PP:" + std::string(name.substr(pp_prefix_.size()));
    auto actions = parse_pp_actions(standard);
    if (!actions.empty()) return actions;
  }
  for (const PpPattern& pattern : pp_patterns_) {
    std::match_results<std::string_view::const_iterator> m;
    if (!std::regex_match(name.begin(), name.end(), m, *pattern.regex)) continue;
    std::string text = "PP:" + m[pattern.stage].str() + m[pattern.op].str() +
                       (pattern.microbatch ? m[pattern.microbatch].str() : std::string());
    auto actions = parse_pp_actions(text);
    if (actions.size() == 1) return actions;
  }
  return {};
}

}  // namespace tracelane
