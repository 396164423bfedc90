// The iteration plan of a sharded sweep: the sorted list of iteration directories that
// `sweep --shard K/N` splits by position (position % N == K). Shards of one job array must
// split the same list, or an iteration created between two shards' runs shifts every
// position after it: some iterations are swept twice and others by no shard. So each
// partial report records the plan it worked from (a digest of the whole list, its count,
// and the iterations the shard took), `report --combine` refuses shards of different
// plans, and a job array can share one plan written once (`sweep ROOT --write-plan FILE`,
// then `sweep ROOT --shard K/N --plan FILE`). docs/sweep.md, "Shards".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tracelane::cli {

// Whether `bytes` names a directory under ROOT as a sweep writes it (a report row's `dir`,
// a plan's iteration): "." or a relative path of names, none empty, "." or "..", and no
// NUL byte. A report or plan read from a file is checked so before its dirs are joined to
// ROOT or become links on the page.
bool is_dir_under_root(std::string_view bytes);

// The most iterations a plan may hold: far beyond any outputs tree (a million iterations
// of one rank is a terabyte of traces), small enough that a count read from a file cannot
// overflow the arithmetic on it.
inline constexpr int64_t kMaxPlanIterations = int64_t(1) << 40;

// Shard K/N of a sweep (`sweep --shard K/N`): the positions p of the plan's list with
// p % N == K. The one type for a shard, in options, plans, reports and runs.
struct Shard {
  int index = 0;  // K
  int count = 1;  // N
  // "K/N", as the command line and a run's record write it.
  std::string label() const { return std::to_string(index) + "/" + std::to_string(count); }
  bool operator==(const Shard&) const = default;
};

struct IterationPlan {
  std::string digest;  // plan_digest() of the whole list
  int64_t count = 0;   // iterations in the whole list
  // The iterations this report or file covers, sorted (byte order): a shard's positions of
  // the whole list; all of it for an unsharded report and for a plan file.
  std::vector<std::string> iterations;
};

// SHA-256, as 64 hex digits, of the whole sorted list, each name (its bytes, relative to
// ROOT, '/'-separated, "." for ROOT) preceded by its length as 8 bytes big-endian, so that
// no two lists give the same bytes.
std::string plan_digest(const std::vector<std::string>& iterations);

// The plan of a whole sorted list (an unsharded sweep's, a plan file's).
IterationPlan whole_plan(std::vector<std::string> iterations);

// How many of `count` positions shard K/N takes: those p < count with p % N == K.
int64_t shard_share(int64_t count, const Shard& shard);
// The plan as shard K/N records it: the whole plan's digest and count, and the iterations
// at the shard's positions; unsharded (nothing), the whole plan.
IterationPlan shard_plan(const IterationPlan& whole, const std::optional<Shard>& shard);

// What is wrong with a plan as a report of shard `shard` (nothing: unsharded) or a plan
// file holds it, or nothing: a digest of 64 lower-case hex digits, a count of at most
// kMaxPlanIterations, iterations that are each a directory under ROOT as a sweep names it
// (is_dir_under_root), strictly increasing, as many as the shard's share of the count.
// (Whether an unsharded plan's digest is its list's own is left to the caller:
// plan_digest().) `where` is relative to the plan ("iterations[3]", "digest").
struct PlanProblem {
  std::string where, what;
};
std::optional<PlanProblem> plan_problem(const IterationPlan& plan, const std::optional<Shard>& shard);

// The first 12 digits of a digest, for messages.
std::string short_digest(const std::string& digest);

}  // namespace tracelane::cli
