// Rules documents. Matching is on the hot path (every GPU slice), so the common
// conditions are plain: a cat set and lower-case substrings; a regex only when a rule
// asks for one.
//
// Regexes are RE2's. A rules file is the user's, but the names it is matched against come
// from traces anyone may have written, and a templated kernel name runs to tens of
// kilobytes: a backtracking engine (std::regex recursed once per character) crashed on
// one such name with an ordinary pattern, and every rerun crashed again. RE2 matches in
// time linear in the name with no recursion, and each pattern's memory (compiled program
// plus match cache) is capped by max_mem, so neither a pattern nor a name can crash or
// stall a run.
#include "tracelane/rules.hpp"

#include <re2/re2.h>
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

// All of a file's regexes together may use this much memory (compiled programs and the
// caches RE2 fills while matching), shared out evenly but never more than RE2's own
// default of 8 MiB for one pattern; so a file holds at most kMaxRegexes of them. A
// pattern too large for its share is an error naming it, at load.
constexpr int64_t kRegexMemoryTotal = int64_t(256) << 20;
constexpr int64_t kRegexMemoryEach = int64_t(8) << 20;
constexpr size_t kMaxRegexes = 256;

// Compiles `pattern`, or returns null and sets `problem`.
std::shared_ptr<const re2::RE2> compile_regex(const std::string& pattern, bool case_sensitive, size_t regexes,
                                              std::string& problem) {
  re2::RE2::Options options;
  options.set_encoding(re2::RE2::Options::EncodingUTF8);  // names are JSON strings: UTF-8
  options.set_case_sensitive(case_sensitive);
  options.set_log_errors(false);  // a bad pattern is our error message, not a line on stderr
  int64_t share = std::min(kRegexMemoryEach, kRegexMemoryTotal / int64_t(std::max<size_t>(regexes, 1)));
  options.set_max_mem(share);
  auto regex = std::make_shared<const re2::RE2>(pattern, options);
  if (regex->ok()) return regex;
  problem = regex->error();
  if (regex->error_code() == re2::RE2::ErrorPatternTooLarge)
    problem += " (each of this file's " + std::to_string(regexes) + " regexes may use " + std::to_string(share >> 10) +
               " KiB)";
  return nullptr;
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

// Reads a rules file in the order its checks are reported: the regex count (before any is
// compiled), unknown top-level keys, the listed groups, the classify rules, the groups only
// rules name, then the PP patterns.
class RulesReader {
 public:
  explicit RulesReader(const std::string& source) : source_(source) {}

  Rules read(std::string_view json) {
    simdjson::padded_string text(json);
    if (auto error = parser_.parse(text).get(root_))
      fail("", std::string("not a JSON object: ") + simdjson::error_message(error));
    count_regexes();
    for (auto field : root_)
      if (field.key != "groups" && field.key != "classify" && field.key != "pp_annotations")
        fail("", "unknown key \"" + std::string(field.key) + "\" (expected groups, classify, pp_annotations)");
    read_groups();
    read_classify();
    name_rule_groups();
    read_pp_annotations();
    return std::move(rules_);
  }

 private:
  [[noreturn]] void fail(const std::string& where, const std::string& problem) const {
    throw Error(source_ + ": " + (where.empty() ? "" : where + ": ") + problem);
  }

  // Every regex's memory share depends on how many the file has (kRegexMemoryTotal).
  void count_regexes() {
    auto count = [&](simdjson::dom::element element, const char* key) {
      simdjson::dom::object object;
      if (element.get_object().get(object) == simdjson::SUCCESS && object[key].error() == simdjson::SUCCESS) ++regexes_;
    };
    simdjson::dom::array list;
    if (root_["classify"].get_array().get(list) == simdjson::SUCCESS)
      for (auto element : list) count(element, "name_regex");
    if (root_["pp_annotations"]["patterns"].get_array().get(list) == simdjson::SUCCESS)
      for (auto element : list) count(element, "regex");
    if (regexes_ > kMaxRegexes)
      fail("", std::to_string(regexes_) + " regexes (name_regex and pp_annotations patterns); at most " +
                   std::to_string(kMaxRegexes) + " are allowed");
  }

  int group_of(const std::string& id) {
    auto it = index_.find(id);
    if (it != index_.end()) return it->second;
    int k = int(rules_.groups_.size());
    rules_.groups_.push_back({id, title_case(id)});
    index_[id] = k;
    return k;
  }

  // Listed groups first, in order.
  void read_groups() {
    simdjson::dom::array groups;
    if (root_["groups"].get_array().get(groups) == simdjson::SUCCESS) {
      size_t k = 0;
      for (auto group : groups) {
        std::string where = "group #" + std::to_string(++k);
        std::string_view id, label;
        if (group["id"].get_string().get(id) || id.empty()) fail(where, "needs a non-empty string \"id\"");
        if (index_.count(std::string(id))) fail(where, "group \"" + std::string(id) + "\" is listed twice");
        int g = group_of(std::string(id));
        if (group["label"].get_string().get(label) == simdjson::SUCCESS) rules_.groups_[g].label = std::string(label);
      }
    } else if (root_["groups"].error() != simdjson::NO_SUCH_FIELD) {
      fail("groups", "must be a list of {\"id\", \"label\"}");
    }
  }

  void read_classify() {
    simdjson::dom::array classify;
    if (root_["classify"].get_array().get(classify)) fail("classify", "a list of rules is required");
    for (auto element : classify) read_classify_rule(element);
  }

  void read_classify_rule(simdjson::dom::element element) {
    ClassifyRule rule;
    rule.where = "classify rule #" + std::to_string(rules_.rules_.size() + 1);
    simdjson::dom::object object;
    if (element.get_object().get(object)) fail(rule.where, "must be an object");
    std::string_view group;
    if (object["group"].get_string().get(group) || group.empty())
      fail(rule.where, "needs a non-empty string \"group\"");
    rule.where += " (group \"" + std::string(group) + "\")";
    for (auto field : object) {
      std::string_view key = field.key;
      if (key == "group") continue;
      if (key == "cat" || key == "name_contains") {
        simdjson::dom::array list;
        if (field.value.get_array().get(list))
          fail(rule.where, "\"" + std::string(key) + "\" must be a list of strings");
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
        std::string problem;
        rule.name_regex = compile_regex(rule.name_regex_text, /*case_sensitive=*/false, regexes_, problem);
        if (!rule.name_regex) fail(rule.where, "invalid name_regex \"" + rule.name_regex_text + "\": " + problem);
      } else {
        fail(rule.where, "unknown key \"" + std::string(key) + "\" (expected cat, name_contains, name_regex, group)");
      }
    }
    rule_groups_.emplace_back(group);
    rules_.rules_.push_back(std::move(rule));
  }

  // Groups only rules name come after the listed ones, sorted by id (SPEC 3); a slice no
  // rule matches is compute.
  void name_rule_groups() {
    std::vector<std::string> extra;
    for (const auto& id : rule_groups_)
      if (!index_.count(id) && std::find(extra.begin(), extra.end(), id) == extra.end()) extra.push_back(id);
    std::sort(extra.begin(), extra.end());
    for (const auto& id : extra) group_of(id);
    for (size_t r = 0; r < rules_.rules_.size(); ++r) rules_.rules_[r].group = index_[rule_groups_[r]];
    rules_.fallback_group_ = group_of("compute");
  }

  void read_pp_annotations() {
    simdjson::dom::object pp;
    if (root_["pp_annotations"].get_object().get(pp) != simdjson::SUCCESS) {
      if (root_["pp_annotations"].error() != simdjson::NO_SUCH_FIELD) fail("pp_annotations", "must be an object");
      return;
    }
    for (auto field : pp)
      if (field.key != "prefix" && field.key != "patterns")
        fail("pp_annotations", "unknown key \"" + std::string(field.key) + "\" (expected prefix, patterns)");
    std::string_view prefix;
    if (pp["prefix"].get_string().get(prefix) == simdjson::SUCCESS)
      rules_.pp_prefix_ = std::string(prefix);
    else if (pp["prefix"].error() != simdjson::NO_SUCH_FIELD)
      fail("pp_annotations", "\"prefix\" must be a string");
    simdjson::dom::array patterns;
    if (pp["patterns"].get_array().get(patterns) == simdjson::SUCCESS) {
      size_t p = 0;
      for (auto element : patterns) read_pp_pattern(element, "pp_annotations pattern #" + std::to_string(++p));
    } else if (pp["patterns"].error() != simdjson::NO_SUCH_FIELD) {
      fail("pp_annotations", "\"patterns\" must be a list of {\"regex\", \"stage\", \"op\", \"microbatch\"}");
    }
  }

  void read_pp_pattern(simdjson::dom::element element, const std::string& where) {
    PpPattern pattern;
    simdjson::dom::object object;
    if (element.get_object().get(object)) fail(where, "must be an object");
    for (auto field : object)
      if (field.key != "regex" && field.key != "stage" && field.key != "op" && field.key != "microbatch")
        fail(where, "unknown key \"" + std::string(field.key) + "\" (expected regex, stage, op, microbatch)");
    std::string_view regex;
    if (object["regex"].get_string().get(regex)) fail(where, "needs a string \"regex\"");
    pattern.regex_text = std::string(regex);
    std::string problem;
    pattern.regex = compile_regex(pattern.regex_text, /*case_sensitive=*/true, regexes_, problem);
    if (!pattern.regex) fail(where, "invalid regex \"" + pattern.regex_text + "\": " + problem);
    // A capture group number is checked as the file wrote it (not after a cast to int,
    // which would turn 2^32 + 1 into group 1).
    const int64_t groups_in_regex = pattern.regex->NumberOfCapturingGroups();
    for (auto [key, group] : {std::pair{"stage", &pattern.stage}, std::pair{"op", &pattern.op},
                              std::pair{"microbatch", &pattern.microbatch}}) {
      auto field = object[key];
      if (field.error() == simdjson::NO_SUCH_FIELD) continue;
      int64_t value;
      if (field.get_int64().get(value)) fail(where, "\"" + std::string(key) + "\" must be a capture group number");
      if (value < 0 || value > groups_in_regex)
        fail(where, "capture group " + std::to_string(value) + " does not exist in \"" + pattern.regex_text + "\"");
      *group = int(value);
    }
    for (int g : {pattern.stage, pattern.op, pattern.microbatch})  // the defaults (1, 2, 3) too
      if (g > groups_in_regex)
        fail(where, "capture group " + std::to_string(g) + " does not exist in \"" + pattern.regex_text + "\"");
    if (pattern.stage == 0 || pattern.op == 0) fail(where, "stage and op need capture groups");
    rules_.pp_patterns_.push_back(std::move(pattern));
  }

  const std::string& source_;
  simdjson::dom::parser parser_;
  simdjson::dom::object root_;
  Rules rules_;
  std::map<std::string, int> index_;      // group id -> its index
  std::vector<std::string> rule_groups_;  // group id of each rule, resolved once all are known
  size_t regexes_ = 0;
};

Rules Rules::parse(std::string_view json, const std::string& source) { return RulesReader(source).read(json); }

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
    if (rule.name_regex && !re2::RE2::PartialMatch(re2::StringPiece(name.data(), name.size()), *rule.name_regex))
      continue;
    return rule.group;
  }
  return fallback_group_;
}

// The built-in PP action grammar (SPEC 7, 9.5): what torch.distributed.pipelining writes.

namespace {

// Reads digits at `pos`; false when there are none or too many to be a stage/microbatch.
bool read_number(std::string_view text, size_t& pos, int64_t& value, bool required) {
  size_t begin = pos;
  value = 0;
  while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
    if (pos - begin >= 12) return false;
    value = value * 10 + (text[pos] - '0');
    ++pos;
  }
  return pos > begin || !required;
}

// Parses "<stage><op>[<microbatch>]" that must fill `text` exactly.
std::optional<PpAction> parse_action_body(std::string_view text) {
  static constexpr std::string_view ops[] = {"SEND_F",      "RECV_F", "SEND_B", "RECV_B", "UNSHARD", "RESHARD",
                                             "REDUCE_GRAD", "F",      "I",      "W",      "B"};
  size_t pos = 0;
  PpAction action;
  if (!read_number(text, pos, action.stage, true)) return std::nullopt;
  for (std::string_view op : ops) {
    if (!text.substr(pos).starts_with(op)) continue;
    size_t after = pos + op.size();
    int64_t microbatch = 0;
    size_t end = after;
    if (!read_number(text, end, microbatch, false) || end != text.size()) continue;
    action.op = op;
    if (end > after) action.microbatch = microbatch;
    bool takes_microbatch = action.op != "UNSHARD" && action.op != "RESHARD" && action.op != "REDUCE_GRAD";
    if (!takes_microbatch && action.microbatch) return std::nullopt;
    return action;
  }
  return std::nullopt;
}

}  // namespace

bool is_pp_compute_op(std::string_view op) { return op == "F" || op == "I" || op == "W" || op == "B"; }

std::vector<PpAction> parse_pp_actions(std::string_view name) {
  if (name.substr(0, 3) != "PP:") return {};
  std::string_view body = name.substr(3);
  constexpr std::string_view kOverlap = ")OVERLAP_F_B";
  if (!body.empty() && body.front() == '(' && body.size() > kOverlap.size() + 1 &&
      body.substr(body.size() - kOverlap.size()) == kOverlap) {
    std::string_view inner = body.substr(1, body.size() - 1 - kOverlap.size());
    size_t semicolon = inner.find(';');
    if (semicolon == std::string_view::npos) return {};
    auto first = parse_action_body(inner.substr(0, semicolon));
    auto second = parse_action_body(inner.substr(semicolon + 1));
    if (!first || !second || !is_pp_compute_op(first->op) || !is_pp_compute_op(second->op)) return {};
    return {*first, *second};
  }
  auto action = parse_action_body(body);
  if (!action) return {};
  return {*action};
}

std::optional<PpAction> parse_pp_action(std::string_view name) {
  auto actions = parse_pp_actions(name);
  if (actions.size() != 1) return std::nullopt;
  return actions[0];
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
    // Group 0 and the groups up to the highest the pattern uses (checked at load to
    // exist); a group that took no part in the match is empty.
    thread_local std::vector<re2::StringPiece> m;
    m.assign(size_t(1 + std::max({pattern.stage, pattern.op, pattern.microbatch})), re2::StringPiece());
    if (!pattern.regex->Match(re2::StringPiece(name.data(), name.size()), 0, name.size(), re2::RE2::ANCHOR_BOTH,
                              m.data(), int(m.size())))
      continue;
    auto group = [&](int g) { return std::string(m[g].data() ? m[g].data() : "", m[g].size()); };
    std::string text = "PP:" + group(pattern.stage) + group(pattern.op) +
                       (pattern.microbatch ? group(pattern.microbatch) : std::string());
    auto actions = parse_pp_actions(text);
    if (actions.size() == 1) return actions;
  }
  return {};
}

}  // namespace tracelane
