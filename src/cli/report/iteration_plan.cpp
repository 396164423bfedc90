// The iteration plan: its digest, the shards' shares of it, and the checks a plan read
// from a report or a plan file must pass.
#include "iteration_plan.hpp"

#include <algorithm>

#include "sha256.hpp"

namespace tracelane::cli {

bool is_dir_under_root(std::string_view bytes) {
  if (bytes == ".") return true;
  // A NUL never names a file: such a dir could never be the tree's.
  if (bytes.empty() || bytes.front() == '/' || bytes.find('\0') != std::string_view::npos) return false;
  size_t begin = 0;
  while (begin <= bytes.size()) {
    size_t end = std::min(bytes.find('/', begin), bytes.size());
    std::string_view name = bytes.substr(begin, end - begin);
    if (name.empty() || name == "." || name == "..") return false;
    begin = end + 1;
  }
  return true;
}

std::string plan_digest(const std::vector<std::string>& iterations) {
  Sha256 sha;
  for (const std::string& name : iterations) {
    char length[8];
    for (int i = 0; i < 8; ++i) length[i] = char(uint64_t(name.size()) >> (56 - 8 * i));
    sha.update(std::string_view(length, 8));
    sha.update(name);
  }
  return sha.hex_digest();
}

IterationPlan whole_plan(std::vector<std::string> iterations) {
  IterationPlan plan;
  plan.digest = plan_digest(iterations);
  plan.count = int64_t(iterations.size());
  plan.iterations = std::move(iterations);
  return plan;
}

int64_t shard_share(int64_t count, const Shard& shard) {
  return count > shard.index ? (count - shard.index + shard.count - 1) / shard.count : 0;
}

IterationPlan shard_plan(const IterationPlan& whole, const std::optional<Shard>& shard) {
  if (!shard) return whole;
  IterationPlan plan{whole.digest, whole.count, {}};
  for (size_t position = size_t(shard->index); position < whole.iterations.size(); position += size_t(shard->count))
    plan.iterations.push_back(whole.iterations[position]);
  return plan;
}

std::optional<PlanProblem> plan_problem(const IterationPlan& plan, const std::optional<Shard>& shard) {
  if (plan.digest.size() != 64 || plan.digest.find_first_not_of("0123456789abcdef") != std::string::npos)
    return PlanProblem{"digest", "expected 64 lower-case hex digits (SHA-256)"};
  if (plan.count < 0 || plan.count > kMaxPlanIterations)
    return PlanProblem{"count", "expected an integer from 0 to " + std::to_string(kMaxPlanIterations)};
  for (size_t i = 0; i < plan.iterations.size(); ++i) {
    const std::string& name = plan.iterations[i];
    std::string where = "iterations[" + std::to_string(i) + "]";
    if (!is_dir_under_root(name))
      return PlanProblem{where, "not a directory under the root (\".\" or a relative path without \"..\")"};
    if (i && !(plan.iterations[i - 1] < name))
      return PlanProblem{where, "not after the one before (the list is sorted, each name once)"};
  }
  int64_t expected = shard ? shard_share(plan.count, *shard) : plan.count;
  if (int64_t(plan.iterations.size()) != expected)
    return PlanProblem{"iterations", std::to_string(plan.iterations.size()) + " iterations, not the " +
                                         std::to_string(expected) +
                                         (shard ? " positions of shard " + shard->label() + " in " : " of ") +
                                         "a plan of " + std::to_string(plan.count)};
  return std::nullopt;
}

std::string short_digest(const std::string& digest) { return digest.substr(0, 12); }

}  // namespace tracelane::cli
