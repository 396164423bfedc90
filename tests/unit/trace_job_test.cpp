// The job for one trace file (src/cli/trace_job.hpp) that compact, merge and sweep share:
// its options come from the shared options in one place, its steps give what the core
// gives, each step is timed under its name, and merge_and_write stores what it is given.
#include <gtest/gtest.h>

#include <libdeflate.h>
#include <boost/filesystem.hpp>
#include <fstream>

#include "cli/files.hpp"
#include "cli/options.hpp"
#include "cli/trace_job.hpp"
#include "test_support.hpp"

namespace tracelane::cli {
namespace {

namespace fs = boost::filesystem;
using tracelane::testing::kernel;
using tracelane::testing::trace_json;

struct TempDir {
  fs::path path = fs::temp_directory_path() / fs::unique_path("tracelane-job-%%%%-%%%%");
  TempDir() { fs::create_directories(path); }
  ~TempDir() {
    boost::system::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string rank_trace(int rank) {
  std::string top = R"("distributedInfo": {"backend": "nccl", "rank": )" + std::to_string(rank) +
                    R"(, "world_size": 2}, "baseTimeNanoseconds": 1000000)";
  return trace_json({kernel(0, 7, "10", "5", "a"), kernel(0, 8, "12", "5", "b"), kernel(0, 7, "20", "1", "c")}, top);
}

fs::path write_file(const fs::path& path, const std::string& text) {
  std::ofstream(path.string(), std::ios::binary) << text;
  return path;
}

std::vector<std::string> phase_names(const Timings& timings) {
  std::vector<std::string> names;
  for (const auto& phase : timings.phases())
    if (phase.depth == 0) names.push_back(phase.name);
  return names;
}

TEST(TraceJob, CompactOptionsComeFromTheSharedOptions) {
  SharedOptions shared;
  shared.no_restore_data = true;
  shared.level = 7;
  shared.rules_text = "{}";
  Timings timings;
  JobOptions job = job_options(shared, true, &timings);
  CompactOptions options = job.compact_options(false);
  EXPECT_FALSE(options.pp_flows);
  EXPECT_TRUE(options.force);
  EXPECT_FALSE(options.restore_data);
  EXPECT_EQ(options.rules, nullptr);
  EXPECT_EQ(options.timings, &timings);
  EXPECT_TRUE(job.compact_options(true).pp_flows);
  EXPECT_EQ(job.level, 7);
  EXPECT_EQ(job.recipe(true), output_recipe("{}", false, true));
}

TEST(TraceJob, TheStepsGiveWhatTheCoreGivesAndAreTimedByName) {
  TempDir dir;
  fs::path input = write_file(dir.path / "rank0_trace.json", rank_trace(0));
  Timings timings;
  SharedOptions shared;
  JobOptions job = job_options(shared, false, &timings);
  FileIdentity identity;
  TraceBytes read = read_step(input, identity, {}, job);
  EXPECT_EQ(read.json.view(), rank_trace(0));
  EXPECT_FALSE(read.crc32);  // plain JSON: no trailer to take it from
  CompactedTrace compacted = compact_step(parse_step(std::move(read), input, job), job, true);
  ASSERT_TRUE(already_laned(compacted).empty());
  GpuFigures figures = figures_step(compacted, job, rank_of(input, compacted), compacted.summary.pp_rank);
  std::string text = write_compacted(compacted);
  EXPECT_EQ(text, write_compacted(compact_trace(parse_trace(rank_trace(0), input.string()), {})));
  fs::path output = dir.path / "out.json.gz";
  uint64_t bytes = write_output_step(output, compacted_text(compacted), false, {{input.filename().string(), identity}},
                                     job.recipe(true), job, [](uint64_t size) {
                                       return OutputRecords{std::to_string(size), ""};
                                     });
  EXPECT_EQ(read_trace_bytes(output), text);
  EXPECT_EQ(bytes, fs::file_size(output));
  if (auto record = read_record(output)) {  // a file system without user extended attributes keeps none
    EXPECT_EQ(*record, std::to_string(bytes));
  }
  EXPECT_EQ(identity.size, uint64_t(rank_trace(0).size()));
  EXPECT_EQ(rank_of(input, compacted), std::optional<int64_t>(0));
  EXPECT_EQ(phase_names(timings),
            (std::vector<std::string>{"read", "parse", "compact", "figures", "write (serialise, compress)"}));
}

// A gzip input's CRC-32 comes from its trailers and goes with the text to the trace, where
// restore data takes it (restore checks the text it gives back against it).
TEST(TraceJob, AGzipInputsCrcGoesWithItsTextToTheTrace) {
  TempDir dir;
  const std::string text = rank_trace(0);
  fs::path input = write_file(dir.path / "rank0_trace.json.gz", gzip_compress(text, 6));
  SharedOptions shared;
  JobOptions job = job_options(shared, false, nullptr);
  FileIdentity identity;
  TraceBytes read = read_step(input, identity, {}, job);
  EXPECT_EQ(read.json.view(), text);
  ASSERT_TRUE(read.crc32);
  EXPECT_EQ(*read.crc32, libdeflate_crc32(0, text.data(), text.size()));
  Trace trace = parse_step(std::move(read), input, job);
  EXPECT_EQ(trace.document, text);
  EXPECT_EQ(trace.document_crc32, std::optional<uint32_t>(libdeflate_crc32(0, text.data(), text.size())));
}

TEST(TraceJob, ReadTraceTextGivesWhatReadTraceBytesGives) {
  TempDir dir;
  const std::string text = rank_trace(1);
  for (const auto& [name, bytes] : {std::pair<std::string, std::string>{"plain.json", text},
                                    std::pair<std::string, std::string>{"packed.json.gz", gzip_compress(text, 6)}}) {
    fs::path path = write_file(dir.path / name, bytes);
    std::optional<uint32_t> crc;
    EXPECT_EQ(read_trace_text(path, nullptr, {}, &crc).view(), read_trace_bytes(path)) << name;
    EXPECT_EQ(crc.has_value(), name.ends_with(".gz")) << name;
    // A compacted copy to restore from is read into a std::string, which the sweep then
    // moves out of its TextBuffer, not copies.
    FileIdentity identity;
    TraceBytes copy = read_step(path, identity, {}, job_options(SharedOptions(), false, nullptr), true);
    const char* where = copy.json.data();
    const std::string moved = std::move(copy.json).release_string();
    EXPECT_EQ(moved, text) << name;
    EXPECT_EQ(moved.data(), where) << name;
  }
}

TEST(TraceJob, MergeAndWriteStoresTheRecordsItIsGivenOnceTheSizeIsKnown) {
  TempDir dir;
  SharedOptions shared;
  Timings timings;
  JobOptions job = job_options(shared, false, &timings);
  std::vector<MergeInput> ranks;
  std::vector<NamedIdentity> identities;
  for (int rank : {0, 1}) {
    fs::path input = write_file(dir.path / ("rank" + std::to_string(rank) + "_trace.json"), rank_trace(rank));
    FileIdentity identity;
    Trace trace = parse_step(read_step(input, identity, {}, job), input, job);
    ranks.push_back({input.filename().string(), compact_step(std::move(trace), job, false)});
    identities.push_back({input.filename().string(), identity});
  }
  fs::path output = dir.path / kMergedName;
  uint64_t seen_bytes = 0;
  MergedOutput merged = merge_and_write(std::move(ranks), identities, output, false, job,
                                        [&](const MergeSummary& summary, const GpuFigures&, uint64_t bytes) {
                                          seen_bytes = bytes;
                                          EXPECT_EQ(summary.inputs.size(), 2u);
                                          return OutputRecords{"row " + std::to_string(bytes), ""};
                                        });
  EXPECT_EQ(merged.output_bytes, fs::file_size(output));
  EXPECT_EQ(seen_bytes, merged.output_bytes);
  auto record = read_record(output);
  if (record) {  // a file system without user extended attributes keeps none
    EXPECT_EQ(*record, "row " + std::to_string(seen_bytes));
  }
  std::vector<std::string> names = phase_names(timings);
  EXPECT_EQ(names.back(), "merge");
}

}  // namespace
}  // namespace tracelane::cli
