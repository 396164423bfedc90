// write_trace_text (trace_output.hpp): an output streamed in blocks of events, made and
// compressed concurrently, is the very text write_compacted and merge_ranks make whole,
// for every block size and number of threads; its gzip members decompress to that text
// and do not depend on the threads; its restore data gives the originals back; a failure
// anywhere stops the write and reaches the caller, and write_output_step then leaves no
// file behind.
#include <gtest/gtest.h>
#include <libdeflate.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <tbb/task_arena.h>
#include <unistd.h>

#include <algorithm>
#include <boost/filesystem.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>

#include "cli/files.hpp"
#include "cli/trace_job.hpp"
#include "cli/tree_lock.hpp"
#include "test_support.hpp"
#include "tracelane/gzip.hpp"
#include "tracelane/restore.hpp"
#include "tracelane/timings.hpp"
#include "tracelane/trace_output.hpp"

namespace tracelane {
namespace {

using namespace tracelane::testing;
namespace fs = boost::filesystem;

// The block sizes the brief names: 1 is a block per event, kGzipMemberBytes the default.
const std::vector<size_t> kBlockBytes = {1, 100, 4096, size_t(1) << 20, kGzipMemberBytes};
const std::vector<int> kThreads = {1, 2, 4};

OutputEncoding text_in_blocks(size_t member_bytes) {
  OutputEncoding encoding;
  encoding.gzip = false;
  encoding.member_bytes = member_bytes;
  return encoding;
}

OutputEncoding gzip_in_blocks(size_t member_bytes, int level = 6) {
  OutputEncoding encoding;
  encoding.gzip = true;
  encoding.level = level;
  encoding.member_bytes = member_bytes;
  return encoding;
}

// What write_trace_text handed to its sink, in an arena of `threads` (0: the caller's).
struct Streamed {
  std::string bytes;
  size_t calls = 0;
  uint64_t returned = 0;
};
Streamed stream(const TraceText& text, const OutputEncoding& encoding, int threads = 0, Timings* timings = nullptr) {
  Streamed out;
  auto run = [&] {
    out.returned = write_trace_text(
        text, encoding,
        [&](std::string_view bytes) {
          out.bytes += bytes;
          ++out.calls;
        },
        timings);
  };
  if (threads > 0)
    tbb::task_arena(threads).execute(run);
  else
    run();
  return out;
}

// Equality of two (possibly large) texts that says where they part instead of printing both.
::testing::AssertionResult same_text(const std::string& got, const std::string& want) {
  if (got == want) return ::testing::AssertionSuccess();
  size_t at = 0;
  while (at < got.size() && at < want.size() && got[at] == want[at]) ++at;
  size_t from = at < 40 ? 0 : at - 40;
  return ::testing::AssertionFailure() << "sizes " << got.size() << " vs " << want.size()
                                       << ", first difference at byte " << at << ":\n  got  ..."
                                       << got.substr(from, 100) << "\n  want ..." << want.substr(from, 100);
}

// A trace of `kernels` kernels on six streams of GPU 0 with what compaction and merge
// drop (identical overlapping annotations, which are coalesced; the streams' thread_name
// metadata, which a merged rank loses), flows from CPU ops to kernels, numbers spelled
// unlike tracelane's, and a top-level key after traceEvents. `rank` >= 0 makes it a rank
// of a PP job (distributedInfo, baseTimeNanoseconds).
std::string sample_trace(int kernels, int rank = -1) {
  std::vector<std::string> events;
  for (int s = 0; s < 6; ++s)
    events.push_back(metadata("thread_name", 0, 7 + s, R"({"name": "stream )" + std::to_string(7 + s) + R"("})"));
  events.push_back(metadata("thread_name", 100, 100, R"({"name": "main"})"));
  for (int i = 0; i < kernels; ++i) {
    int stream = 7 + i % 6;
    std::string ts = std::to_string(100 + 3 * i) + (i % 4 == 1 ? ".500" : i % 4 == 2 ? ".0" : "");
    if (i % 25 == 0) {  // two identical annotations that overlap: one is coalesced away
      events.push_back(annotation(0, stream, ts, "9", "step"));
      events.push_back(annotation(0, 7 + (i + 1) % 6, std::to_string(100 + 3 * i + 1), "9", "step"));
    }
    if (i % 7 == 0) {
      std::string id = std::to_string(i + 1);
      events.push_back(R"({"ph": "X", "cat": "cpu_op", "name": "launch", "pid": 100, "tid": 100, "ts": )" +
                       std::to_string(3 * i) + R"(, "dur": 2})");
      events.push_back(flow("s", "ac2g", id, 100, 100, std::to_string(3 * i + 1)));
      events.push_back(flow("f", "ac2g", id, 0, stream, ts));
    }
    events.push_back(kernel(0, stream, ts, i % 3 ? "4" : "4.25", "k" + std::to_string(i % 13),
                            "\"correlation\": " + std::to_string(i + 1)));
  }
  std::string top;
  if (rank >= 0)
    top = R"("distributedInfo": {"backend": "nccl", "rank": )" + std::to_string(rank) +
          R"(, "world_size": 4}, "baseTimeNanoseconds": )" + std::to_string(1000 + 37 * rank);
  std::string json = trace_json(events, top);
  json.insert(json.size() - 1, ", \"displayTimeUnit\": \"ns\"");
  return json;
}

CompactedTrace compact_json(const std::string& json, CompactOptions options = {}) {
  return compact_trace(parse_trace(json, "t.json"), options);
}

size_t written_events(const CompactedTrace& compacted) { return written_count(compacted.trace.events); }

// Every block size in every arena gives the whole text; B = 1 hands on one block per
// event and then the tail.
void expect_streamed_equals_whole(const CompactedTrace& compacted, const std::string& what) {
  std::string whole = write_compacted(compacted);
  for (size_t block_bytes : kBlockBytes)
    for (int threads : kThreads) {
      SCOPED_TRACE(what + ", member_bytes " + std::to_string(block_bytes) + ", " + std::to_string(threads) +
                   " threads");
      Streamed out = stream(compacted_text(compacted), text_in_blocks(block_bytes), threads);
      ASSERT_TRUE(same_text(out.bytes, whole));
      EXPECT_EQ(out.returned, whole.size());
      if (block_bytes == 1) {  // a block per event, the last one handed on with the tail
        EXPECT_EQ(out.calls, std::max<size_t>(written_events(compacted), 1));
      }
    }
}

struct CorpusTrace {
  std::string name;
  size_t text_bytes = 0;
  CompactedTrace compacted;
};

// Calls `check` with each corpus trace (corpus/single) of `min_bytes` to `max_bytes` of
// text that compacts (errors and already-laned traces are left out), one at a time so
// that no more than one is held; returns how many it was called with.
template <class Check>
size_t for_each_corpus_trace(const std::string& shared, size_t min_bytes, size_t max_bytes, Check&& check) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(shared) / "corpus" / "single"))
    if (entry.is_regular_file()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  size_t checked = 0;
  for (const auto& path : files) {
    std::string bytes = cli::read_file(fs::path(path.string()));
    std::string json = is_gzip(bytes) ? gunzip(bytes, path.string()) : std::move(bytes);
    if (json.size() < min_bytes || json.size() > max_bytes) continue;
    CorpusTrace trace{path.filename().string(), json.size(), {}};
    try {
      trace.compacted = compact_trace(parse_trace(std::move(json), path.string()), {});
    } catch (const Error&) {
      continue;  // error_*.json.gz: nothing to write
    }
    if (!trace.compacted.already_laned.empty()) continue;
    SCOPED_TRACE(trace.name);
    check(trace);
    ++checked;
  }
  return checked;
}

}  // namespace

// --- XXH64 piece by piece ----------------------------------------------------------------

TEST(Xxhash64Streaming, KnownVectorsComeOutWhateverThePieces) {
  Xxhash64 none;
  EXPECT_EQ(none.digest(), 0xEF46DB3751D8E999ULL);
  Xxhash64 empty_pieces;
  empty_pieces.update("");
  empty_pieces.update("");
  EXPECT_EQ(empty_pieces.digest(), 0xEF46DB3751D8E999ULL);
  EXPECT_EQ(xxhash64("abc"), 0x44BC2CF5AD770999ULL);
  Xxhash64 abc;
  abc.update("a");
  abc.update("");
  abc.update("bc");
  EXPECT_EQ(abc.digest(), 0x44BC2CF5AD770999ULL);
}

// A default string_view (no data pointer) is no bytes, before and after bytes were
// buffered: update() must not hand its null pointer to memcpy (UBSan's nonnull-attribute
// check stops the TRACELANE_SANITIZE=address build there).
TEST(Xxhash64Streaming, AnEmptyViewWithoutDataIsNoBytes) {
  Xxhash64 hash;
  hash.update(std::string_view());
  hash.update("ab");
  hash.update(std::string_view());
  hash.update("c");
  EXPECT_EQ(hash.digest(), 0x44BC2CF5AD770999ULL);
}

// Random splits into pieces of 0 bytes, less than a stripe (1-31) and more than one
// (32+), of texts from 0 to 200 bytes (every length, so every buffered remainder) and
// of about 10 KB; and seeds other than 0.
TEST(Xxhash64Streaming, PiecesOfAnySizeHashLikeTheWhole) {
  std::mt19937 rng(11);
  auto random_text = [&](size_t size) {
    std::string text(size, '\0');
    for (char& c : text) c = char(rng());
    return text;
  };
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 200; ++n) lengths.push_back(n);
  for (size_t n : {10000, 10007, 10240, 10271}) lengths.push_back(n);
  for (size_t length : lengths) {
    std::string text = random_text(length);
    for (uint64_t seed : {uint64_t(0), uint64_t(1), uint64_t(0x9E3779B97F4A7C15ULL)}) {
      uint64_t whole = xxhash64(text, seed);
      for (int split = 0; split < 8; ++split) {
        Xxhash64 hash(seed);
        size_t at = 0;
        std::string pieces;
        while (at < text.size()) {
          size_t piece;
          switch (rng() % 4) {
            case 0:
              piece = 0;
              break;
            case 1:
              piece = 1 + rng() % 31;
              break;
            case 2:
              piece = 32 + rng() % 100;
              break;
            default:
              piece = rng() % 3000;
              break;
          }
          piece = std::min(piece, text.size() - at);
          hash.update(std::string_view(text).substr(at, piece));
          pieces += std::to_string(piece) + " ";
          at += piece;
        }
        ASSERT_EQ(hash.digest(), whole) << "length " << length << ", seed " << seed << ", pieces " << pieces;
      }
      Xxhash64 bytewise(seed);
      for (char c : text) bytewise.update(std::string_view(&c, 1));
      ASSERT_EQ(bytewise.digest(), whole) << "length " << length << " one byte at a time";
    }
  }
}

// --- The streamed text ---------------------------------------------------------------------

TEST(TraceOutput, StreamedTextEqualsTheWholeTextForEveryBlockSizeAndThreadCount) {
  for (int kernels : {1, 2, 40, 700}) {
    std::string json = sample_trace(kernels);
    CompactedTrace compacted = compact_json(json);
    ASSERT_GT(compacted.trace.events.size(), written_events(compacted)) << "nothing dropped: a weaker test";
    expect_streamed_equals_whole(compacted, std::to_string(kernels) + " kernels, restore data");
    CompactedTrace without = compact_json(json, {.restore_data = false});
    expect_streamed_equals_whole(without, std::to_string(kernels) + " kernels, no restore data");
    EXPECT_EQ(write_compacted(without).find(kRestoreKey), std::string::npos);
  }
}

// Every corpus trace that compacts. Those over 4 MB of text (most: 10-55 MB) get the
// block sizes that matter at their size, in one and four threads: the full matrix (B = 1
// makes a block of each of their 10^5-10^6 events) would take a minute.
TEST(TraceOutput, CorpusTracesStreamTheirWholeText) {
  TRACELANE_REQUIRE_SHARED(shared);
  size_t checked = for_each_corpus_trace(shared, 0, size_t(60) << 20, [](CorpusTrace& trace) {
    CompactedTrace& compacted = trace.compacted;
    if (trace.text_bytes <= size_t(4) << 20) {
      expect_streamed_equals_whole(compacted, trace.name);
      compacted.restore_data = false;
      expect_streamed_equals_whole(compacted, trace.name + ", no restore data");
      return;
    }
    for (bool restore_data : {true, false}) {
      compacted.restore_data = restore_data;
      std::string whole = write_compacted(compacted);
      for (size_t block_bytes : {size_t(1) << 20, kGzipMemberBytes})
        for (int threads : {1, 4})
          ASSERT_TRUE(same_text(stream(compacted_text(compacted), text_in_blocks(block_bytes), threads).bytes, whole))
              << "member_bytes " << block_bytes << ", " << threads << " threads, restore data " << restore_data;
    }
  });
  EXPECT_GE(checked, 5u);
}

// --- gzip ------------------------------------------------------------------------------------

TEST(TraceOutput, GzipMembersDecompressToTheTextAndDoNotDependOnTheThreads) {
  CompactedTrace compacted = compact_json(sample_trace(700));
  for (bool restore_data : {true, false}) {
    compacted.restore_data = restore_data;
    std::string whole = write_compacted(compacted);
    for (size_t block_bytes : kBlockBytes) {
      SCOPED_TRACE("member_bytes " + std::to_string(block_bytes) + ", restore data " + std::to_string(restore_data));
      std::string one_thread;
      for (int threads : kThreads) {
        Streamed gz = stream(compacted_text(compacted), gzip_in_blocks(block_bytes), threads);
        EXPECT_EQ(gz.returned, gz.bytes.size());
        ASSERT_TRUE(same_text(gunzip(gz.bytes, "out.json.gz"), whole));
        if (threads == 1)
          one_thread = gz.bytes;
        else
          EXPECT_TRUE(gz.bytes == one_thread) << threads << " threads: other gzip bytes than one thread's";
      }
      std::vector<size_t> sizes = gzip_member_sizes(one_thread, whole.size());
      size_t total = 0;
      for (size_t size : sizes) total += size;
      EXPECT_EQ(total, whole.size());
      if (block_bytes == 1)  // a member per event at least (the tail may make more)
        EXPECT_GT(sizes.size(), written_events(compacted));
      else if (block_bytes <= 4096)
        EXPECT_GE(sizes.size(), whole.size() / block_bytes / 2);
      else  // the events (700 kernels: far under 1 MiB) in the first block; the tail apart
        EXPECT_LE(sizes.size(), 3u);
    }
  }
}

// member_bytes = 0 (--single-gzip-member): exactly gzip_compress of the whole text, for
// readers that stop after one member.
TEST(TraceOutput, MemberBytesZeroWritesOneMemberOfTheWholeText) {
  CompactedTrace compacted = compact_json(sample_trace(300));
  for (bool restore_data : {true, false}) {
    compacted.restore_data = restore_data;
    std::string whole = write_compacted(compacted);
    for (int threads : kThreads) {
      Streamed gz = stream(compacted_text(compacted), gzip_in_blocks(0), threads);
      EXPECT_EQ(gz.calls, 1u);
      EXPECT_TRUE(gz.bytes == gzip_compress(whole, 6)) << threads << " threads, restore data " << restore_data;
      EXPECT_EQ(gzip_member_sizes(gz.bytes, whole.size()), std::vector<size_t>{whole.size()});
      EXPECT_TRUE(same_text(gunzip(gz.bytes, "out.json.gz"), whole));
    }
  }
}

// Members of 4 MiB cost under 1% against one member, on the corpus traces that make
// several but few (8-17 MB: 2-5 blocks, where a member's fresh dictionary shows most); and
// member_bytes = 0 makes one member of a text larger than kGzipMemberBytes.
TEST(TraceOutput, CorpusMembersCostUnderOnePercentAtLevelSix) {
  TRACELANE_REQUIRE_SHARED(shared);
  bool checked_single = false;
  size_t checked = for_each_corpus_trace(shared, 2 * kGzipMemberBytes, size_t(17) << 20, [&](CorpusTrace& trace) {
    std::string whole = write_compacted(trace.compacted);
    std::string gz = stream(compacted_text(trace.compacted), gzip_in_blocks(kGzipMemberBytes)).bytes;
    std::string one = gzip_compress(whole, 6);
    EXPECT_GE(gzip_member_sizes(gz, kGzipMemberBytes + (size_t(1) << 20)).size(), 3u);
    EXPECT_LT(double(gz.size()) / double(one.size()), 1.01) << gz.size() << " vs " << one.size();
    EXPECT_TRUE(same_text(gunzip(gz, trace.name), whole));
    if (checked_single) return;
    checked_single = true;  // member_bytes = 0 is one member even here
    std::string single = stream(compacted_text(trace.compacted), gzip_in_blocks(0)).bytes;
    EXPECT_EQ(gzip_member_sizes(single, whole.size()), std::vector<size_t>{whole.size()});
    EXPECT_TRUE(single == one);
  });
  EXPECT_GE(checked, 2u);
}

// --- Restore -----------------------------------------------------------------------------

TEST(TraceOutput, AStreamedCompactionRestoresTheOriginal) {
  for (int kernels : {1, 40, 700}) {
    std::string original = sample_trace(kernels);
    CompactedTrace compacted = compact_json(original);
    for (size_t block_bytes : {size_t(1), size_t(100), kGzipMemberBytes}) {
      SCOPED_TRACE(std::to_string(kernels) + " kernels, member_bytes " + std::to_string(block_bytes));
      std::string text = stream(compacted_text(compacted), text_in_blocks(block_bytes), 4).bytes;
      EXPECT_TRUE(same_text(restore_original(text, "out.json", 0), original));
      std::string gz = stream(compacted_text(compacted), gzip_in_blocks(block_bytes), 2).bytes;
      EXPECT_TRUE(same_text(restore_original(gunzip(gz, "out.json.gz"), "out.json", 0), original));
    }
  }
}

TEST(TraceOutput, CorpusTracesStreamedRestoreTheirOriginals) {
  TRACELANE_REQUIRE_SHARED(shared);
  size_t checked = for_each_corpus_trace(shared, 0, size_t(4) << 20, [](CorpusTrace& trace) {
    std::string text = stream(compacted_text(trace.compacted), text_in_blocks(4096), 4).bytes;
    EXPECT_TRUE(same_text(restore_original(text, trace.name, 0), std::string(trace.compacted.trace.document)));
  });
  EXPECT_GE(checked, 2u);
}

// merge_ranks hands its text to the writer, whose streamed output is merge_ranks' own
// whole text (runs of several ranks, each with its name prefix and its dropped stream
// metadata, cut into blocks anywhere), and restores each rank.
TEST(TraceOutput, AStreamedMergeEqualsTheWholeMergeAndRestoresEachRank) {
  std::vector<std::string> originals = {sample_trace(30, 0), sample_trace(5, 1), sample_trace(60, 2)};
  auto inputs = [&] {
    std::vector<MergeInput> ranks;
    for (size_t r = 0; r < originals.size(); ++r) {
      std::string name = "rank" + std::to_string(r) + "_trace.json";
      ranks.push_back({name, compact_trace(parse_trace(originals[r], name), {.pp_flows = false})});
    }
    return ranks;
  };
  MergeResult whole = merge_ranks(inputs());
  ASSERT_FALSE(whole.json.empty());

  std::vector<std::pair<std::string, Streamed>> streamed;  // (what, output)
  size_t calls = 0;
  MergeResult written = merge_ranks(inputs(), nullptr, nullptr, [&](const TraceText& text) {
    ++calls;
    EXPECT_GT(text.runs.size(), originals.size());  // each rank's events, its new metadata, the PP arrows
    EXPECT_EQ(text.sources.size(), originals.size());
    for (size_t block_bytes : kBlockBytes)
      for (int threads : kThreads) {
        std::string what = "member_bytes " + std::to_string(block_bytes) + ", " + std::to_string(threads) + " threads";
        streamed.emplace_back(what, stream(text, text_in_blocks(block_bytes), threads));
        streamed.emplace_back(what + ", gzip", stream(text, gzip_in_blocks(block_bytes), threads));
      }
  });
  EXPECT_EQ(calls, 1u);
  EXPECT_TRUE(written.json.empty());
  EXPECT_EQ(written.summary.inputs.size(), originals.size());
  std::string gz_one_thread;
  for (const auto& [what, out] : streamed) {
    SCOPED_TRACE(what);
    bool gz = what.ends_with("gzip");
    std::string text = gz ? gunzip(out.bytes, "merged.json.gz") : out.bytes;
    ASSERT_TRUE(same_text(text, whole.json));
    if (gz && what.find(", 1 threads") != std::string::npos) gz_one_thread = out.bytes;
    if (gz && what.find(", 1 threads") == std::string::npos) {
      EXPECT_TRUE(out.bytes == gz_one_thread);
    }
  }
  auto records = list_restore_records(streamed.front().second.bytes, "merged.json");
  ASSERT_EQ(records.size(), originals.size());
  for (size_t k = 0; k < records.size(); ++k) {
    ASSERT_GE(records[k].global_rank, 0);
    EXPECT_TRUE(same_text(restore_original(streamed.front().second.bytes, "merged.json", k),
                          originals[size_t(records[k].global_rank)]))
        << "record " << k;
  }
}

// --- The whole-text fallback -------------------------------------------------------------

// A trace whose top level has "cuda_graph_stream_compaction" before traceEvents: the
// restore member goes there, before the events, so the text is made whole first (one
// call to the sink). Still the same text, and it restores. (The key marks tracelane's own
// output, which only --force compacts again.)
TEST(TraceOutput, RestoreDataBeforeTheEventsFallsBackToTheWholeTextAndRestores) {
  std::string original = sample_trace(200);
  original.insert(original.find("\"traceEvents\""),
                  R"("cuda_graph_stream_compaction": {"algorithm": "from an older run", "lanes": [1, 2]}, )");
  CompactedTrace compacted = compact_json(original, {.force = true});
  ASSERT_TRUE(compacted.already_laned.empty());
  std::string whole = write_compacted(compacted);
  ASSERT_LT(whole.find("\"cuda_graph_stream_compaction\": {"), whole.find("\"traceEvents\""));
  for (size_t block_bytes : {size_t(1), size_t(100), kGzipMemberBytes})
    for (int threads : kThreads) {
      SCOPED_TRACE("member_bytes " + std::to_string(block_bytes) + ", " + std::to_string(threads) + " threads");
      Streamed text = stream(compacted_text(compacted), text_in_blocks(block_bytes), threads);
      EXPECT_TRUE(same_text(text.bytes, whole));
      EXPECT_EQ(text.calls, 1u);  // the fallback, not blocks
      Streamed gz = stream(compacted_text(compacted), gzip_in_blocks(block_bytes), threads);
      EXPECT_TRUE(same_text(gunzip(gz.bytes, "out.json.gz"), whole));
      EXPECT_EQ(gz.returned, gz.bytes.size());
    }
  EXPECT_TRUE(same_text(restore_original(whole, "out.json", 0), original));
  // Without restore data nothing has to go before the events: blocks again.
  compacted.restore_data = false;
  Streamed blocks = stream(compacted_text(compacted), text_in_blocks(1));
  EXPECT_TRUE(same_text(blocks.bytes, write_compacted(compacted)));
  EXPECT_EQ(blocks.calls, std::max<size_t>(written_events(compacted), 1));
}

// Compacting an output again (as --force would; tracelane's outputs are not "already
// laned" in SPEC 9.8's sense): its compaction key, after traceEvents, is rewritten in
// place with the second run's restore member, and the first run's restore data is now
// part of the original; the streamed output equals the whole one and restores to the
// first output, restore data and all.
TEST(TraceOutput, ACompactedOutputCompactedAgainStreamsAndRestores) {
  std::string first = write_compacted(compact_json(sample_trace(300)));
  CompactedTrace again = compact_json(first, {.force = true});
  ASSERT_TRUE(again.already_laned.empty());
  std::string whole = write_compacted(again);
  for (size_t block_bytes : {size_t(1), size_t(4096), kGzipMemberBytes}) {
    SCOPED_TRACE("member_bytes " + std::to_string(block_bytes));
    std::string text = stream(compacted_text(again), text_in_blocks(block_bytes), 2).bytes;
    EXPECT_TRUE(same_text(text, whole));
    EXPECT_TRUE(same_text(restore_original(text, "again.json", 0), first));
  }
}

// --- No events written -------------------------------------------------------------------

// Every event dropped: the head and tail alone, with the restore data describing an
// output without events. Made by marking a compacted trace's events dropped, which no
// pass does, but which the writer must take as it takes an empty traceEvents. The second
// original is laid out as tracelane writes, so that its head and tail are diffed against
// the output's lines (the restore data then depends on which text is the output's head).
TEST(TraceOutput, AnOutputWithNoEventsWrittenIsTheWholeText) {
  for (const std::string& original : {sample_trace(20), write_compacted(compact_json(sample_trace(20)))}) {
    CompactedTrace compacted = compact_json(original, {.force = true});
    for (Event& event : compacted.trace.events) event.dropped = true;
    ASSERT_EQ(written_events(compacted), 0u);
    for (bool restore_data : {true, false}) {
      compacted.restore_data = restore_data;
      std::string whole = write_compacted(compacted);
      EXPECT_NE(whole.find("\"traceEvents\": [\n\n  ]"), std::string::npos) << whole;
      for (size_t block_bytes : {size_t(1), kGzipMemberBytes})
        for (int threads : {1, 4}) {
          SCOPED_TRACE("restore data " + std::to_string(restore_data) + ", member_bytes " +
                       std::to_string(block_bytes) + ", " + std::to_string(threads) + " threads");
          EXPECT_TRUE(same_text(stream(compacted_text(compacted), text_in_blocks(block_bytes), threads).bytes, whole));
          std::string gz = stream(compacted_text(compacted), gzip_in_blocks(block_bytes), threads).bytes;
          EXPECT_TRUE(same_text(gunzip(gz, "out.json.gz"), whole));
        }
      if (restore_data) {
        std::string text = stream(compacted_text(compacted), text_in_blocks(100)).bytes;
        EXPECT_TRUE(same_text(restore_original(text, "out.json", 0), original));
      }
    }
  }
}

// An empty traceEvents, written around a trace of no events (a TraceText made by hand:
// compaction refuses such a trace).
TEST(TraceOutput, AnEmptyTraceEventsIsTheWholeText) {
  Trace trace =
      parse_trace(R"({"schemaVersion": 1, "traceEvents": [], "cuda_graph_stream_compaction": {"a": 1}})", "empty.json");
  TraceText text;
  text.top = &trace;
  text.runs.push_back({&trace.events, {}});
  std::string whole = trace_text(text);
  EXPECT_NE(whole.find("\"traceEvents\": ["), std::string::npos);
  for (size_t block_bytes : {size_t(1), kGzipMemberBytes}) {
    Streamed out = stream(text, text_in_blocks(block_bytes), 2);
    EXPECT_TRUE(same_text(out.bytes, whole));
    EXPECT_TRUE(same_text(gunzip(stream(text, gzip_in_blocks(block_bytes), 2).bytes, "empty.json.gz"), whole));
  }
  text.runs.clear();  // no runs at all
  EXPECT_TRUE(same_text(stream(text, text_in_blocks(1)).bytes, whole));
}

// --- Failures ------------------------------------------------------------------------------

struct SinkFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A sink that fails on its k-th call (the first, one in the middle, the tail's): the
// failure reaches the caller as it was thrown, nothing more is handed on, and with the
// restore walks running beside the blocks the write leaves nothing behind (a second
// write of the same trace gives the whole text).
TEST(TraceOutput, ASinkThatFailsStopsTheWriteAndItsErrorReachesTheCaller) {
  CompactedTrace compacted = compact_json(sample_trace(2000));
  std::string whole = write_compacted(compacted);
  const size_t text_calls = stream(compacted_text(compacted), text_in_blocks(4096)).calls;
  const size_t gzip_calls = stream(compacted_text(compacted), gzip_in_blocks(4096)).calls;
  ASSERT_GT(text_calls, 10u);
  for (bool gzip : {false, true})
    for (size_t k : {size_t(1), size_t(2), size_t(7), gzip ? gzip_calls : text_calls})
      for (int threads : {1, 4}) {
        SCOPED_TRACE("gzip " + std::to_string(gzip) + ", failing call " + std::to_string(k) + ", " +
                     std::to_string(threads) + " threads");
        size_t calls = 0;
        auto write = [&] {
          write_trace_text(compacted_text(compacted), gzip ? gzip_in_blocks(4096) : text_in_blocks(4096),
                           [&](std::string_view) {
                             if (++calls == k) throw SinkFailed("disk full on call " + std::to_string(k));
                           });
        };
        try {
          tbb::task_arena(threads).execute(write);
          ADD_FAILURE() << "nothing was thrown";
        } catch (const SinkFailed& error) {
          EXPECT_EQ(std::string(error.what()), "disk full on call " + std::to_string(k));
        }
        EXPECT_EQ(calls, k) << "handed on after the failure";
        Streamed again = stream(compacted_text(compacted), gzip ? gzip_in_blocks(4096) : text_in_blocks(4096), threads);
        EXPECT_TRUE(same_text(gzip ? gunzip(again.bytes, "again.json.gz") : again.bytes, whole));
      }
}

// The restore walks read the source traces, which the caller frees as soon as the
// exception reaches it: they must have stopped by then (AddressSanitizer sees a walk
// that outlives the write; without it, a crash or garbage is likely here).
TEST(TraceOutput, NoRestoreWalkOutlivesAFailedWrite) {
  std::string json = sample_trace(20000);
  for (int round = 0; round < 3; ++round) {
    auto compacted = std::make_unique<CompactedTrace>(compact_json(json));
    EXPECT_THROW(write_trace_text(compacted_text(*compacted), text_in_blocks(4096),
                                  [](std::string_view) { throw SinkFailed("at once"); }),
                 SinkFailed);
    compacted.reset();  // while a walk still running would be reading it
  }
  CompactedTrace compacted = compact_json(sample_trace(50));
  EXPECT_TRUE(same_text(stream(compacted_text(compacted), text_in_blocks(100)).bytes, write_compacted(compacted)));
}

// A block that fails (here: a gzip level libdeflate refuses, found by the first block's
// compressor) stops the write before anything is handed on.
TEST(TraceOutput, ABlockThatFailsStopsTheWriteBeforeAnythingIsHandedOn) {
  CompactedTrace compacted = compact_json(sample_trace(300));
  for (int threads : {1, 4}) {
    size_t calls = 0;
    std::string message = error_message([&] {
      tbb::task_arena(threads).execute([&] {
        write_trace_text(compacted_text(compacted), gzip_in_blocks(100, 13), [&](std::string_view) { ++calls; });
      });
    });
    EXPECT_FALSE(message.empty());
    EXPECT_EQ(calls, 0u) << threads << " threads";
  }
}

// --- Timings -------------------------------------------------------------------------------

// The blocks' CPU time, summed over the threads that made them, is a phase inside the
// caller's; their wall time is the caller's phase, so it prints "-". What is left of the
// restore data once the blocks are out is a phase of its own, with its wall time.
TEST(TraceOutput, TimingsGetTheBlocksCpuTimeAndNoWallTime) {
  CompactedTrace compacted = compact_json(sample_trace(3000));
  for (bool gzip : {false, true}) {
    SCOPED_TRACE(gzip ? "gzip" : "text");
    Timings timings;
    {
      Timings::Scope write(&timings, "write");
      stream(compacted_text(compacted), gzip ? gzip_in_blocks(4096) : text_in_blocks(4096), 2, &timings);
    }
    std::vector<std::string> names;
    for (const Timings::Phase& phase : timings.phases()) {
      names.push_back(phase.name);
      if (phase.name == "write") continue;
      EXPECT_EQ(phase.depth, 1) << phase.name;
      if (phase.name == "restore data") {
        EXPECT_GE(phase.wall_s, 0);
      } else {
        EXPECT_LT(phase.wall_s, 0) << phase.name;
      }
      EXPECT_GE(phase.cpu_s, 0) << phase.name;
      EXPECT_FALSE(phase.open);
    }
    // Serialising 3000 events takes far longer than the thread clock's nanosecond steps.
    EXPECT_GT(timings.phases()[2].cpu_s, 0);
    std::vector<std::string> expected = {"write", "restore data", "serialise (blocks)"};
    if (gzip) expected.push_back("compress (blocks)");
    EXPECT_EQ(names, expected);
    std::string text = timings.text();
    for (const std::string& name : expected) {
      size_t line = text.find("timing:   " + name);
      if (name == "write" || name == "restore data") continue;
      ASSERT_NE(line, std::string::npos) << text;
      std::string rest = text.substr(line, text.find('\n', line) - line);
      EXPECT_NE(rest.find("        -   wall"), std::string::npos) << rest;
    }
  }
}

// --- write_output_step --------------------------------------------------------------------

namespace {

struct TempDir {
  fs::path path = fs::temp_directory_path() / fs::unique_path("tracelane-output-%%%%-%%%%");
  TempDir() { fs::create_directories(path); }
  ~TempDir() {
    boost::system::error_code ec;
    fs::remove_all(path, ec);
  }
  // The files in it but the directory's lock file (outputs and temporaries).
  std::set<std::string> names() const {
    std::set<std::string> out;
    for (const auto& entry : fs::directory_iterator(path))
      if (entry.path().filename() != tracelane::cli::kDirectoryLockName) out.insert(entry.path().filename().string());
    return out;
  }
};

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream(path.string(), std::ios::binary) << text;
}

// What the forked child's exit status says.
std::string child_status(int status) {
  if (!WIFEXITED(status)) return "killed by signal " + std::to_string(WIFSIGNALED(status) ? WTERMSIG(status) : -1);
  switch (WEXITSTATUS(status)) {
    case 0:
      return "ok";
    case 10:
      return "compact: the write did not fail";
    case 11:
      return "compact: failed, but not for the file size limit";
    case 12:
      return "compact: failed with something other than tracelane::Error";
    case 13:
      return "compact: the directory holds more than the input afterwards";
    case 20:
      return "merge: the write did not fail";
    case 21:
      return "merge: failed, but not for the file size limit";
    case 22:
      return "merge: failed with something other than tracelane::Error";
    case 23:
      return "merge: the directory holds more than the input afterwards";
    case 30:
      return "could not set the file size limit";
    default:
      return "exit status " + std::to_string(WEXITSTATUS(status));
  }
}

}  // namespace

// The file system refuses the output half way (RLIMIT_FSIZE: write() fails with EFBIG
// once the temporary reaches 64 KiB, after several blocks were written): the error
// reaches the caller and neither the output nor its temporary is left in the directory,
// for compact's write_output_step and merge_and_write alike. In a forked child, whose
// limit ends with it; the child writes in an arena of one thread, so it needs none of
// the parent's TBB workers, which fork() does not copy.
TEST(TraceOutputStep, AWriteThatFailsMidwayLeavesNeitherTheOutputNorATemporary) {
  TempDir dir;
  std::string json = sample_trace(30000);
  ASSERT_GT(json.size(), size_t(4) << 20);
  write_file(dir.path / "input.json", json);
  CompactedTrace compacted = compact_json(json);
  std::vector<MergeInput> ranks;
  for (int r = 0; r < 2; ++r) {
    std::string name = "rank" + std::to_string(r) + "_trace.json";
    ranks.push_back({name, compact_trace(parse_trace(sample_trace(8000, r), name), {.pp_flows = false})});
  }
  cli::JobOptions job;
  job.gzip_member_bytes = size_t(16) << 10;  // many blocks: the limit is met in the middle
  const std::set<std::string> before = dir.names();

  fflush(nullptr);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit limit{};
    if (::getrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(30);
    limit.rlim_cur = 64 << 10;
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(30);
    int status = 0;
    tbb::task_arena(1).execute([&] {
      try {
        cli::write_output_step(dir.path / "out.json", compacted_text(compacted), false, {}, job.recipe(true), job);
        status = 10;
      } catch (const Error& error) {
        if (std::string(error.what()).find(std::strerror(EFBIG)) == std::string::npos) status = 11;
      } catch (...) {
        status = 12;
      }
      if (status == 0 && dir.names() != before) status = 13;
      if (status != 0) return;
      try {
        cli::merge_and_write(std::move(ranks), {}, dir.path / "merged.json", false, job);
        status = 20;
      } catch (const Error& error) {
        if (std::string(error.what()).find(std::strerror(EFBIG)) == std::string::npos) status = 21;
      } catch (...) {
        status = 22;
      }
      if (status == 0 && dir.names() != before) status = 23;
    });
    _exit(status);
  }
  int status = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  pid_t done = 0;
  while ((done = ::waitpid(child, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (done == 0) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
    FAIL() << "the child did not finish within 120 s";
  }
  EXPECT_EQ(child_status(status), "ok");
  EXPECT_EQ(dir.names(), before);
}

// The records are made from the size of what was written, which is the file's size, and
// the output is the whole text; no temporary is left beside it.
TEST(TraceOutputStep, TheRecordsGetTheSizeOfTheFileWritten) {
  TempDir dir;
  CompactedTrace compacted = compact_json(sample_trace(2000));
  std::string whole = write_compacted(compacted);
  cli::JobOptions job;
  job.gzip_member_bytes = 4096;
  for (const char* name : {"out.json", "out.json.gz"}) {
    SCOPED_TRACE(name);
    fs::path output = dir.path / name;
    uint64_t seen = 0;
    uint64_t bytes =
        cli::write_output_step(output, compacted_text(compacted), false, {}, job.recipe(true), job, [&](uint64_t size) {
          seen = size;
          return cli::OutputRecords{};
        });
    EXPECT_EQ(seen, bytes);
    EXPECT_EQ(bytes, fs::file_size(output));
    EXPECT_TRUE(same_text(cli::read_trace_bytes(output), whole));
  }
  EXPECT_EQ(dir.names(), (std::set<std::string>{"out.json", "out.json.gz"}));
}

}  // namespace tracelane
