// `tracelane restore COMPACTED`: the original trace back from an output's restore data
// (SPEC 9.12); `tracelane restore DIR --into OUT`: every rank's original of an iteration.
#include <fcntl.h>
#include <tbb/task_arena.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <iostream>
#include <map>
#include <typeinfo>

#include "commands.hpp"
#include "files.hpp"
#include "options.hpp"
#include "sweep/discovery.hpp"
#include "trace_commands.hpp"
#include "tracelane/gzip.hpp"
#include "tracelane/json_value.hpp"
#include "tracelane/restore.hpp"

namespace tracelane::cli {

namespace {

// `X_compacted.json.gz` -> `X_restored.json.gz` (`X_rank3_restored...` with --rank 3):
// beside the compacted file, never the original's name.
fs::path default_restore_output(const fs::path& compacted, std::optional<int64_t> rank) {
  std::string name = compacted.filename().string(), extension;
  for (const char* ext : {".json.gz", ".json"})
    if (name.size() > std::strlen(ext) && name.compare(name.size() - std::strlen(ext), std::string::npos, ext) == 0) {
      extension = ext;
      name.resize(name.size() - extension.size());
      break;
    }
  if (extension.empty()) extension = ".json.gz";
  static const std::string kCompacted = "_compacted";
  if (name.size() > kCompacted.size() &&
      name.compare(name.size() - kCompacted.size(), std::string::npos, kCompacted) == 0)
    name.resize(name.size() - kCompacted.size());
  if (rank) name += "_rank" + std::to_string(*rank);
  return compacted.parent_path() / (name + "_restored" + extension);
}

// The original, written into its AtomicOutput as it is rebuilt: for a .gz output, gzip
// members of kGzipMemberBytes compressed in parallel a batch at a time (the bytes one
// gzip_compress_members call over the whole text gives), so that neither the original nor
// its compressed form is ever whole in memory. A batch is two members a thread (as many as
// the compression keeps in flight), at most kMostBatchMembers: on 2 cores 16 MiB held,
// where 16 members held 64 MiB for no more speed.
class OriginalWriter {
 public:
  OriginalWriter(AtomicOutput& output, bool gzip, int level)
      : output_(output),
        gzip_(gzip),
        level_(level),
        batch_bytes_(
            std::clamp<size_t>(2 * size_t(std::max(1, tbb::this_task_arena::max_concurrency())), 2, kMostBatchMembers) *
            kGzipMemberBytes) {}

  void add(std::string_view piece) {
    if (!gzip_) {
      output_.write(piece);
      return;
    }
    pending_ += piece;
    if (pending_.size() >= batch_bytes_) compress(pending_.size() / kGzipMemberBytes * kGzipMemberBytes);
  }

  void finish() {
    if (gzip_ && (!pending_.empty() || !wrote_member_)) compress(pending_.size());
  }

 private:
  static constexpr size_t kMostBatchMembers = 16;

  void compress(size_t bytes) {
    gzip_compress_members(std::string_view(pending_).substr(0, bytes), level_, kGzipMemberBytes,
                          [&](std::string_view member) { output_.write(member); });
    pending_.erase(0, bytes);
    wrote_member_ = true;
  }

  AtomicOutput& output_;
  bool gzip_;
  int level_;
  std::string pending_;
  bool wrote_member_ = false;  // an empty original is still one (empty) gzip member
  size_t batch_bytes_;
};

// Record `record`'s original of `text` (read from `input`) into `output`. A refusal of
// the core's (damaged, not matching the copy's events) is RestoreRefused; a failure to
// write is what the output threw.
void write_original(std::string text, const fs::path& input, size_t record, const fs::path& output,
                    const SharedOptions& shared, const NamedIdentity& source) {
  if (shared.single_gzip_member && output.extension() == ".gz") {
    std::string original;
    try {
      original = restore_original(std::move(text), input.string(), record);
    } catch (const Error& e) {
      if (typeid(e) != typeid(Error)) throw;
      throw RestoreRefused(e.what());
    }
    write_atomically(output, encode_for(output, std::move(original), shared.level), shared.overwrite, {}, {source});
    return;
  }
  AtomicOutput written(output, {source});
  OriginalWriter writer(written, output.extension() == ".gz", shared.level);
  std::exception_ptr write_failure;
  try {
    restore_original_to(std::move(text), input.string(), record, [&](std::string_view piece) {
      try {
        writer.add(piece);
      } catch (...) {
        write_failure = std::current_exception();
        throw;
      }
    });
  } catch (const Error& e) {
    if (write_failure) std::rethrow_exception(write_failure);
    if (typeid(e) != typeid(Error)) throw;
    throw RestoreRefused(e.what());  // the core's: damaged, or not matching the copy's events
  }
  writer.finish();
  written.commit(shared.overwrite);
}

}  // namespace

JsonValue restore_file(const fs::path& input, const SharedOptions& shared, std::optional<int64_t> rank) {
  fs::path output = shared.output.empty() ? default_restore_output(input, rank) : fs::path(shared.output);
  if (shared.output.empty()) require_output_option_unless_regular(input);
  guard_output(output, {input}, shared.overwrite, RankName::allowed);
  FileIdentity identity;  // the original is no more readable than its copy
  std::string text = read_trace_bytes(input, &identity);
  size_t record = 0;
  std::vector<RestoreRecordInfo> records;
  try {
    records = list_restore_records(text, input.string());
    if (records.empty())
      throw RestoreRefused(
          input.string() + ": no restore data (no \"" + std::string(kRestoreKey) +
          "\"): it was written with --no-restore-data or by another tool, or is not a tracelane output");
    auto ranks = [&] {
      std::string list;
      for (const auto& r : records) list += (list.empty() ? "" : ", ") + std::to_string(r.global_rank);
      return list;
    };
    if (rank) {
      auto it = std::find_if(records.begin(), records.end(), [&](const auto& r) { return r.global_rank == *rank; });
      if (it == records.end())
        throw RestoreRefused(input.string() + ": no restore data for global rank " + std::to_string(*rank) +
                             (records.size() > 1 ? " (it has ranks " + ranks() + ")" : " (it is not a merged output)"));
      record = size_t(it - records.begin());
    } else if (records.size() > 1) {
      throw UsageError(input.string() + ": a merged output of " + std::to_string(records.size()) +
                       " ranks; name one with --rank (" + ranks() + ")");
    }
  } catch (const Error& e) {
    if (typeid(e) != typeid(Error)) throw;
    throw RestoreRefused(e.what());  // the core's: damaged, or not matching the copy's events
  }
  write_original(std::move(text), input, record, output, shared, {input.filename().string(), identity, input});
  JsonValue summary = JsonValue::object();
  summary.set("input", JsonValue::string(input.string())).set("output", JsonValue::string(output.string()));
  if (records[record].global_rank >= 0) summary.set("global_rank", JsonValue::integer(records[record].global_rank));
  summary.set("bytes", JsonValue::integer(int64_t(records[record].original_bytes)));
  summary.set("verified", JsonValue::boolean(true));
  return summary;
}

JsonValue restore_directory(const fs::path& dir, const fs::path& into, const SharedOptions& shared, int& failed) {
  // The iteration's names, listed through a descriptor (a name's link is never followed:
  // only a regular file is restored, examined without following it).
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw FileError(dir.string() + ": cannot open the directory: " + std::strerror(errno));
  std::vector<std::string> names;
  int error = list_directory(fd, names);
  ::close(fd);
  if (error) throw FileError(dir.string() + ": cannot list the directory: " + std::strerror(error));
  if (!fs::is_directory(into)) throw UsageError(into.string() + ": --into must be an existing directory");
  auto regular = [&](const std::string& name) {
    boost::system::error_code ec;
    return fs::symlink_status(dir / name, ec).type() == fs::regular_file;
  };
  // Each rank's copy first (rank<N>_trace_compacted.json[.gz] -> its original's name), then
  // the merged output's records of the ranks no copy had (-> rank<R>_trace.json.gz).
  std::map<long long, std::pair<std::string, std::string>> copies;  // rank -> (copy, original name)
  std::string merged;
  for (const std::string& name : names) {
    long long rank = 0;
    std::string original;
    if (is_rank_copy_name(name, &rank, &original) && regular(name)) copies[rank] = {name, original};
    if ((name == kMergedName || name == "pp_traces_merged_compacted.json") && regular(name)) merged = name;
  }
  JsonValue restored = JsonValue::array();
  size_t tried = 0;
  auto one = [&](const fs::path& input, const fs::path& output, std::optional<int64_t> rank) {
    SharedOptions options = shared;
    options.output = output.string();
    ++tried;
    try {
      restored.push(restore_file(input, options, rank));
    } catch (...) {
      ++failed;
      JsonValue row = JsonValue::object();
      row.set("input", JsonValue::string(input.string())).set("output", JsonValue::string(output.string()));
      if (rank) row.set("global_rank", JsonValue::integer(*rank));
      row.set("error", JsonValue::string(describe_exception(input)));
      print_error(describe_exception(input));
      restored.push(row);
    }
  };
  for (const auto& [rank, names_of] : copies) one(dir / names_of.first, into / names_of.second, std::nullopt);
  if (!merged.empty()) {
    std::vector<RestoreRecordInfo> records;
    try {
      FileIdentity identity;
      records = list_restore_records(read_trace_bytes(dir / merged, &identity), (dir / merged).string());
    } catch (...) {
      ++failed;
      print_error(describe_exception(dir / merged));
    }
    for (const RestoreRecordInfo& record : records)
      if (record.global_rank >= 0 && !copies.count(record.global_rank))
        one(dir / merged, into / ("rank" + std::to_string(record.global_rank) + "_trace.json.gz"), record.global_rank);
  }
  if (tried == 0 && !failed)
    throw UsageError(dir.string() + ": no compacted copy (rank<N>_trace_compacted.json[.gz]) and no merged output (" +
                     kMergedName + ") to restore");
  JsonValue summary = JsonValue::object();
  summary.set("input", JsonValue::string(dir.string())).set("into", JsonValue::string(into.string()));
  summary.set("restored", restored).set("failed", JsonValue::integer(failed));
  return summary;
}

int run_restore(int argc, char** argv) {
  SharedOptions shared;
  std::optional<int64_t> rank;
  std::string into;
  po::options_description options("restore options");
  options.add_options()("help,h", "show this help")(
      "output,o", po::value(&shared.output),
      "output file (.gz: gzip-compressed); default: COMPACTED's name without _compacted, plus _restored "
      "(and _rank<R> with --rank)")("overwrite", po::bool_switch(&shared.overwrite), "replace an existing output")(
      "level", po::value(&shared.level)->default_value(kDefaultLevel), "gzip level, 0 (store) to 12 (smallest)")(
      "rank", po::value<int64_t>()->notifier([&](int64_t r) { rank = r; }),
      "for a merged output: the global rank whose original to write")(
      "into", po::value(&into),
      "with an iteration DIR: write every rank's original into this existing directory, one file per rank "
      "(as HTA reads a multi-rank set)");
  add_single_member_option(options, shared.single_gzip_member);
  const CommandLine line{
      "restore", "usage: tracelane restore COMPACTED [options]\n       tracelane restore DIR --into OUT [options]\n",
      std::string("\n") + kUsage};
  std::string input_arg;
  if (auto done = parse_command_line(argc, argv, line, options, "COMPACTED", input_arg)) return *done;
  if (!check_level(shared.level, "restore")) return kExitUsage;
  fs::path input(input_arg);
  try {
    boost::system::error_code ec;
    if (!into.empty() || fs::is_directory(fs::symlink_status(input, ec))) {
      if (into.empty())
        throw UsageError(input.string() + ": a directory: name where its ranks' originals go with --into");
      if (rank || !shared.output.empty()) throw UsageError("--into restores every rank: it takes no --rank or -o");
      int failed = 0;
      std::cout << restore_directory(input, fs::path(into), shared, failed).dump(2) << std::endl;
      return failed ? kExitFailed : kExitOk;
    }
    std::cout << restore_file(input, shared, rank).dump(2) << std::endl;
    return kExitOk;
  } catch (...) {
    return exit_status_of_failure(input);
  }
}

}  // namespace tracelane::cli
