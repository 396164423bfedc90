// Classification and PP annotation rules (SPEC 3, 7 and 9.9): which lane group a GPU
// slice joins, the groups' order and labels, and which annotation names are PP actions.
// The built-in defaults are a rules document too (Rules::default_json), so what
// `tracelane rules --print-defaults` prints is exactly what runs.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace re2 {
class RE2;
}

namespace tracelane {

// A lane group: what classification rules assign a measured GPU slice to (SPEC 3).
struct GroupInfo {
  std::string id;     // "compute", "nccl_all_gather", ...
  std::string label;  // "Compute", "NCCL all-gather", ...
};

// One pipeline-parallel schedule action that an annotation name stands for (SPEC 7).
struct PpAction {
  int64_t stage = 0;
  // Compute: F, I, W, B. Communication: SEND_F, RECV_F, SEND_B, RECV_B. FSDP: UNSHARD,
  // RESHARD, REDUCE_GRAD (the last two are recognised but make no blocks).
  std::string op;
  std::optional<int64_t> microbatch;
};

// The actions an annotation name stands for, as torch.distributed.pipelining writes them
// (SPEC 7 and 9.5): "PP:<stage><op>[<microbatch>]" (full match) gives one action, the
// overlapped form "PP:(0F1;1B0)OVERLAP_F_B" gives its two sub-actions, anything else none.
std::vector<PpAction> parse_pp_actions(std::string_view name);
// The single action of a name, when it has exactly one.
std::optional<PpAction> parse_pp_action(std::string_view name);
bool is_pp_compute_op(std::string_view op);

// Regexes are RE2's (https://github.com/google/re2/wiki/Syntax): a user's pattern matches
// in time linear in the name and in bounded memory, whatever the pattern and the name, so
// no rule and no kernel name can crash or stall a run (std::regex recursed per character
// and overflowed the stack on long names). RE2 has no backreferences and no lookaround; a
// pattern it refuses is an error in the rules file.
struct ClassifyRule {
  std::string where;                       // "classify rule #3" for messages
  std::vector<std::string> cats;           // any of these (empty: any cat)
  std::vector<std::string> name_contains;  // all of these, case-insensitive (stored lower-case)
  std::string name_regex_text;             // RE2, UTF-8, case-insensitive search
  std::shared_ptr<const re2::RE2> name_regex;
  int group = 0;
};

struct PpPattern {
  std::string regex_text;  // RE2, UTF-8, full match
  std::shared_ptr<const re2::RE2> regex;
  int stage = 1, op = 2, microbatch = 3;  // capture group numbers (microbatch 0: none)
};

class Rules {
 public:
  // SPEC 3 and 7 as a rules document.
  static const std::string& default_json();
  static const Rules& defaults();
  // Parses and checks a rules document; throws Error("<source>: <rule>: <problem>").
  static Rules parse(std::string_view json, const std::string& source);

  // Groups in display order: the listed ones, then those only rules name, sorted by id.
  const std::vector<GroupInfo>& groups() const { return groups_; }
  int group_index(std::string_view id) const;  // -1 when unknown
  int classify(std::string_view cat, std::string_view name) const;
  // The PP actions an annotation name stands for (SPEC 7, 9.5), under these rules.
  std::vector<PpAction> pp_actions(std::string_view name) const;

 private:
  friend class RulesReader;  // parse(), in rules.cpp
  std::vector<GroupInfo> groups_;
  std::vector<ClassifyRule> rules_;
  int fallback_group_ = 0;
  std::string pp_prefix_ = "PP:";
  std::vector<PpPattern> pp_patterns_;
};

}  // namespace tracelane
