// Planning the sweep: shard selection, staleness, what each rank and iteration needs.
#include "sweep_plan.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <set>
#include <sstream>

#include "printable.hpp"

namespace tracelane::cli {

std::optional<Shard> parse_shard(std::string_view text) {
  size_t slash = text.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == text.size()) return std::nullopt;
  auto number = [](std::string_view digits, long& value) {
    if (digits.empty() || digits.size() > 9) return false;
    value = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return false;
      value = value * 10 + (c - '0');
    }
    return true;
  };
  long index = 0, count = 0;
  if (!number(text.substr(0, slash), index) || !number(text.substr(slash + 1), count)) return std::nullopt;
  if (count < 1 || count > kMaxShards || index >= count) return std::nullopt;
  return Shard{int(index), int(count)};
}

namespace {

std::vector<NamedIdentity> named(const std::vector<const RankFile*>& inputs) {
  std::vector<NamedIdentity> out;
  for (const RankFile* input : inputs) out.push_back({input->path.filename().string(), input->identity, input->path});
  return out;
}
int64_t size_of(const fs::path& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? int64_t(st.st_size) : 0;
}

// An up-to-date output's row: "skipped", with the numbers of the run that wrote it, from
// the record stored with the output (write_atomically), when it has one that fits; and
// its figures, stored beside that record, only when the record fitted.
void mark_skipped(Row& row, const fs::path& output) {
  int64_t bytes = size_of(output);
  row.set_status(RowStatus::skipped).set(ColumnId::output_bytes, bytes);
  auto record = read_record(output);
  if (!record || !fill_from_record(row, *record, bytes)) return;
  if (auto figures = read_attribute(output, kFiguresAttribute, kFiguresRecordMax))
    fill_figures_from_record(row, *figures);
}

// The ranks the merged output there covers, from the record stored with it, or nothing
// (no merged output, or none with a record that is ours and fits it).
std::optional<int64_t> ranks_covered(const fs::path& merged_output) {
  auto record = read_record(merged_output);
  Row recorded(RowKind::merge);
  if (!record || !fill_from_record(recorded, *record, size_of(merged_output))) return std::nullopt;
  const Cell& ranks = recorded.get(ColumnId::ranks);
  return std::holds_alternative<int64_t>(ranks) ? std::optional(std::get<int64_t>(ranks)) : std::nullopt;
}

// A merge never shrinks: when the merged output there covers more ranks than the
// iteration has now (rank files, or compacted copies standing in for removed ones), both
// a rank file and its copy are gone, and merging what is left would replace the merge of
// all of them with a merge of some. It is kept, and the row says so (failed: exit 1).
void refuse_a_smaller_merge(IterationTask& iteration, size_t ranks_here) {
  std::optional<int64_t> covered = ranks_covered(iteration.merged_output);
  if (!covered || *covered <= int64_t(ranks_here)) return;
  iteration.merge = false;
  iteration.merge_row.set_status(RowStatus::failed)
      .set(ColumnId::error,
           iteration.dir->dir.string() + ": not merged: " + kMergedName + " covers " + std::to_string(*covered) +
               " ranks and only " + std::to_string(ranks_here) +
               " are here (rank files, or compacted copies of removed ones); it is kept, as merging these "
               "would drop the others");
}

}  // namespace

std::string original_name(const RankFile& file) {
  std::string name = file.path.filename().string();
  std::string original;
  return file.from_copy && is_rank_copy_name(name, nullptr, &original) ? original : name;
}

// An output is up to date when it is a regular file (not a link someone planted) whose
// kInputsAttribute names exactly the inputs as they are now: same names, devices, inodes,
// sizes and mtimes. "Newer than every input" is not enough: a rank file renamed into
// place keeps its older mtime, and one replaced while it was read leaves an output newer
// than it yet made from the file before. With no record (a file system without user
// extended attributes, an output written by another tool) the output is redone: a
// redundant redo costs time, a kept stale output costs a wrong result for good.
bool up_to_date(const fs::path& output, const std::vector<const RankFile*>& inputs, std::string_view recipe) {
  struct stat st {};
  if (::lstat(output.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  auto recorded = read_attribute(output, kInputsAttribute);
  // Ours only: another user's file under an output's name, whatever its attributes say,
  // is never reported as our up-to-date result.
  if (st.st_uid != ::geteuid()) return false;
  return recorded && *recorded == inputs_record(named(inputs), st.st_dev, recipe);
}

IterationPlan discovered_plan(const Discovery& discovery) {
  std::vector<std::string> names;
  for (const IterationDir& dir : discovery.iterations) names.push_back(dir.rel);
  return whole_plan(std::move(names));
}

// Decides, per iteration and rank, what is stale; fills the rows of what is up to date.
SweepPlan plan_sweep(const SweepOptions& options, const Discovery& discovery) {
  SweepPlan plan;
  plan.recorded = shard_plan(options.plan ? *options.plan : discovered_plan(discovery), options.shard);
  // Discovery's iterations are sorted by rel, as a plan's are: found by name.
  auto found = [&](const std::string& rel) -> const IterationDir* {
    auto it = std::lower_bound(discovery.iterations.begin(), discovery.iterations.end(), rel,
                               [](const IterationDir& dir, const std::string& name) { return dir.rel < name; });
    return it != discovery.iterations.end() && it->rel == rel ? &*it : nullptr;
  };
  if (options.plan && (!options.shard || options.shard->index == 0))
    for (const IterationDir& dir : discovery.iterations)
      if (!std::binary_search(options.plan->iterations.begin(), options.plan->iterations.end(), dir.rel))
        plan.plan_problems.push_back(
            {dir.rel, "not in the plan (--plan; written before this directory held rank files?): not swept", false});
  // What decides the outputs besides their inputs: kept in each output's inputs record.
  const std::string recipe = options.job.recipe(true);
  for (const std::string& rel : plan.recorded.iterations) {
    const IterationDir* found_dir = found(rel);
    if (!found_dir) {
      plan.plan_problems.push_back(
          {rel, "in the plan (--plan), but no rank<N>_trace.json[.gz] found here now: not swept", true});
      continue;
    }
    const IterationDir& dir = *found_dir;
    auto iteration = std::make_unique<IterationTask>();
    iteration->dir = &dir;
    iteration->index = plan.iterations.size();
    std::vector<const RankFile*> inputs;
    for (const RankFile& file : dir.ranks) inputs.push_back(&file);
    if (dir.ranks.size() >= 2) {
      iteration->has_merge_row = true;
      iteration->merged_output = dir.dir / kMergedName;
      iteration->merge = options.overwrite || !up_to_date(iteration->merged_output, inputs, recipe);
      Row& row = iteration->merge_row;
      row.set(ColumnId::dir, dir.rel).set(ColumnId::run, dir.run).set(ColumnId::iteration, dir.iteration);
      row.set(ColumnId::ranks, int64_t(dir.ranks.size())).set(ColumnId::output, std::string(kMergedName));
      int64_t input_bytes = 0;
      for (const RankFile& file : dir.ranks) input_bytes += int64_t(file.bytes_on_disk);
      row.set(ColumnId::input_bytes, input_bytes);
      if (!iteration->merge) mark_skipped(row, iteration->merged_output);
      if (iteration->merge) refuse_a_smaller_merge(*iteration, dir.ranks.size());
      if (iteration->merge) {
        // The guard, before any rank is read for the merge (again before writing it).
        std::vector<fs::path> rank_paths;
        for (const RankFile& file : dir.ranks) rank_paths.push_back(file.path);
        try {
          guard_output(iteration->merged_output, rank_paths, true);
        } catch (const OutputRefused& e) {
          iteration->merge = false;
          row.set_status(RowStatus::failed).set(ColumnId::error, std::string(e.what()));
        }
      }
    }
    for (const RankFile& file : dir.ranks) {
      auto task = std::make_unique<RankTask>();
      task->iteration = iteration.get();
      task->file = &file;
      // A copy standing in for its gone original is its own output, and up to date.
      task->output = file.from_copy ? file.path : default_compact_output(file.path);
      task->estimate = file.bytes_uncompressed;
      task->write_output = !file.from_copy && (options.overwrite || !up_to_date(task->output, {&file}, recipe));
      task->for_merge = iteration->merge;
      task->process = task->write_output || task->for_merge;
      Row& row = task->row;
      row.set(ColumnId::dir, dir.rel).set(ColumnId::file, original_name(file)).set(ColumnId::run, dir.run);
      row.set(ColumnId::iteration, dir.iteration).set(ColumnId::rank, int64_t(file.rank));
      row.set(ColumnId::output, task->output.filename().string());
      // A copy's row takes the original's size from the copy's record (mark_skipped).
      if (!file.from_copy) row.set(ColumnId::input_bytes, int64_t(file.bytes_on_disk));
      if (!task->write_output) mark_skipped(row, task->output);
      iteration->ranks.push_back(plan.ranks.size());
      plan.ranks.push_back(std::move(task));
    }
    plan.iterations.push_back(std::move(iteration));
  }
  return plan;
}

std::vector<Row> take_plan_rows(SweepPlan& plan) {
  std::vector<Row> rows;
  rows.reserve(plan.ranks.size() + plan.iterations.size());
  for (const auto& task : plan.ranks) rows.push_back(std::move(task->row));
  for (const auto& iteration : plan.iterations)
    if (iteration->has_merge_row) rows.push_back(std::move(iteration->merge_row));
  sort_rows(rows);
  return rows;
}

std::string plan_listing(const SweepPlan& plan) {
  std::ostringstream out;
  // Names from the tree are bytes: printable() keeps invalid UTF-8 and terminal escapes
  // off the terminal.
  auto rel_file = [](const RankTask& task, const fs::path& path) {
    const std::string& rel = task.iteration->dir->rel;
    return printable((rel == "." ? "" : rel + "/") + path.filename().string());
  };
  for (const auto& iteration : plan.iterations) {
    for (size_t index : iteration->ranks) {
      const RankTask& task = *plan.ranks[index];
      if (task.write_output)
        out << "compact " << rel_file(task, task.file->path) << " -> " << printable(task.output.filename().string())
            << "\n";
      else if (task.process && task.file->from_copy)
        out << "restore " << rel_file(task, task.file->path) << " (its rank file is gone; needed by the merge)\n";
      else if (task.process)
        out << "read    " << rel_file(task, task.file->path) << " (output up to date; needed by the merge)\n";
      else
        out << "skip    " << rel_file(task, task.file->path) << " (output up to date)\n";
    }
    if (iteration->has_merge_row) {
      if (iteration->merge)
        out << "merge   " << printable(iteration->dir->rel) << " (" << iteration->ranks.size() << " ranks) -> "
            << kMergedName << "\n";
      else if (const Cell& error = iteration->merge_row.get(ColumnId::error);
               std::holds_alternative<std::string>(error))
        out << "keep    " << printable(iteration->dir->rel) << "/" << kMergedName << " ("
            << printable(std::get<std::string>(error)) << ")\n";
      else
        out << "skip    " << printable(iteration->dir->rel) << "/" << kMergedName << " (up to date)\n";
    }
  }
  for (const DiscoveryProblem& problem : plan.plan_problems)
    out << "plan    " << printable(problem.rel) << ": " << problem.reason << "\n";
  size_t work = 0;
  uint64_t bytes = 0;
  for (const auto& task : plan.ranks)
    if (task->process) work++, bytes += task->file->bytes_uncompressed;
  out << work << " of " << plan.ranks.size() << " rank files to read (" << bytes << " bytes of JSON), "
      << plan.iterations.size() << " iteration directories\n";
  return out.str();
}

// A killed sweep leaves its temporary files (".<output>.tmp.<pid>.<n>", never the
// output's own name) behind; remove those of our outputs in the directories this run
// owns when their writer is no longer running on this host. Only regular files that we
// own are removed, by name relative to the directory we opened (unlinkat never follows a
// link: a symlink swapped in is removed itself, never its target).
void remove_stale_temporaries(const SweepPlan& plan) {
  for (const auto& iteration : plan.iterations) {
    std::set<std::string> outputs{kMergedName};
    for (size_t r : iteration->ranks) outputs.insert(plan.ranks[r]->output.filename().string());
    int fd = ::open(iteration->dir->dir.c_str(), O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;  // its rank files cannot be read either: they get failed rows
    int list_fd = ::openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR* listing = list_fd >= 0 ? ::fdopendir(list_fd) : nullptr;
    if (!listing && list_fd >= 0) ::close(list_fd);
    std::vector<std::string> stale;
    while (listing) {
      struct dirent* entry = ::readdir(listing);
      if (!entry) break;
      std::string name = entry->d_name;
      size_t tmp = name.find(".tmp.");
      if (name.empty() || name[0] != '.' || tmp == std::string::npos) continue;
      if (!outputs.count(name.substr(1, tmp - 1))) continue;
      long pid = std::atol(name.c_str() + tmp + 5);
      if (pid > 0 && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH) stale.push_back(name);
    }
    if (listing) ::closedir(listing);
    for (const std::string& name : stale) {
      struct stat st {};
      if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid())
        (void)::unlinkat(fd, name.c_str(), 0);
    }
    ::close(fd);
  }
}

}  // namespace tracelane::cli
