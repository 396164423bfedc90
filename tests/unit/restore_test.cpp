// Restore data (SPEC 9.12): restore(compact(x)) == x byte for byte, for single traces and
// each rank of a merge, and a damaged or edited copy is refused, never a wrong original.
#include <libdeflate.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>

#include "restore_codec.hpp"
#include "test_support.hpp"
#include "tracelane/decimal_time.hpp"
#include "tracelane/restore.hpp"

using namespace tracelane;
using namespace tracelane::testing;

namespace {

std::string compacted_text(const std::string& json, CompactOptions options = {}) {
  return write_compacted(compact_trace(parse_trace(json, "dir/t.json"), options));
}

// A trace laid out the way people's tools write them, not tracelane's way: odd spacing,
// a key after traceEvents, a slice on a legacy "stream 7" tid, two overlapping identical
// annotations (compaction coalesces them: one is removed), a flow, metadata.
std::string untidy_trace() {
  return "{ \"schemaVersion\":1,\"deviceProperties\" : [ {\"id\": 0} ],\n\t\"traceEvents\":[  "
         "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"a\", \"pid\": 0, \"tid\": 7, \"ts\": 10.5, \"dur\": 5, "
         "\"args\": {\"stream\": 7, \"correlation\": 1}} ,\n"
         "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"b\",\"pid\":0,\"tid\":9,\"ts\":11,\"dur\":2,\"args\":{\"stream\":"
         "9}},"
         "\r\n  " +
         annotation(0, 7, "10", "8", "step") + ",  " + annotation(0, 9, "10.5", "8", "step") + ",\n" +
         flow("s", "ac2g", "5", 1, 1, "9") + ",\n" + flow("f", "ac2g", "5", 0, 9, "11") + ",\n" +
         "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"c\", \"pid\": 0, \"tid\": \"stream 7\", \"ts\": 30, "
         "\"dur\": 1, \"args\": {\"stream\": 7}},\n" +
         metadata("thread_name", 0, 7, R"({"name": "stream 7"})") + "\n ] ,\"displayTimeUnit\": \"ns\"  }\n\n";
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string restored(const std::string& compacted, size_t record = 0) {
  return restore_original(compacted, "out.json", record);
}

}  // namespace

TEST(Restore, GivesAnUntidyTraceBackByteForByte) {
  std::string original = untidy_trace();
  std::string out = compacted_text(original);
  ASSERT_NE(out.find(", \"tracelane_restore\": [\""), std::string::npos);
  EXPECT_NE(out, original);
  EXPECT_EQ(restored(out), original);
  auto records = list_restore_records(out, "out.json");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].global_rank, -1);
  EXPECT_EQ(records[0].original_bytes, original.size());
}

TEST(Restore, IsOneMemberOfCompactionsOwnKeyAndChangesNothingElse) {
  std::string original = untidy_trace();
  std::string with = compacted_text(original);
  std::string without = compacted_text(original, {.restore_data = false});
  EXPECT_EQ(without.find("tracelane_restore"), std::string::npos);
  // Without the member, exactly what --no-restore-data writes.
  size_t begin = with.find(", \"tracelane_restore\": [");
  ASSERT_NE(begin, std::string::npos);
  size_t end = with.find(']', begin) + 1;
  EXPECT_EQ(with.substr(0, begin) + with.substr(end), without);
  Output parsed(with);  // still one valid JSON object, the member inside compaction's key
  EXPECT_EQ(parsed.root["cuda_graph_stream_compaction"]["tracelane_restore"].get_array().size(), 1u);
  EXPECT_EQ(std::string_view(parsed.root["cuda_graph_stream_compaction"]["algorithm"]),
            "semantic interval partitioning");
}

TEST(Restore, WorksAfterTheChunkedParser) {
  std::vector<std::string> events;
  for (int i = 0; i < 300; ++i)
    events.push_back(kernel(0, 7 + i % 5, std::to_string(i * 3), "4", "k" + std::to_string(i % 7)));
  std::string original = trace_json(events);
  ParseOptions parse;
  parse.max_document_bytes = 2000;
  std::string out = write_compacted(compact_trace(parse_trace(original, "t.json", parse), {}));
  EXPECT_EQ(restored(out), original);
}

TEST(Restore, GivesEachRankOfAMergeBack) {
  auto rank = [](int r, int64_t base) {
    std::vector<std::string> events = {
        R"({"ph": "X", "cat": "cpu_op", "name": "op", "pid": 100, "tid": 100, "ts": 1.25, "dur": 1})",
        kernel(0, 7, "10.001", "5", "k"),
        kernel(0, 8, "12", "5", "k2"),
        metadata("process_sort_index", 0, 0, R"({"sort_index": 3})"),
        metadata("thread_name", 100, 100, R"({"name": "main"})"),
        annotation(0, 7, "9", "9", "PP:F0"),
        flow("s", "ac2g", "3", 100, 100, "1.5"),
        flow("f", "ac2g", "3", 0, 7, "10.001")};
    return trace_json(events, R"("distributedInfo": {"backend": "nccl", "rank": )" + std::to_string(r) +
                                  R"(, "world_size": 2}, "baseTimeNanoseconds": )" + std::to_string(base));
  };
  std::string r0 = rank(0, 1000), r1 = rank(1, 1777);
  std::vector<MergeInput> inputs;
  inputs.push_back({"rank0_trace.json", compact_trace(parse_trace(r0, "x/rank0_trace.json"), {.pp_flows = false})});
  inputs.push_back({"rank1_trace.json", compact_trace(parse_trace(r1, "x/rank1_trace.json"), {.pp_flows = false})});
  std::string out = merge_ranks(std::move(inputs)).json;
  auto records = list_restore_records(out, "merged.json");
  ASSERT_EQ(records.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(restored(out, k), records[k].global_rank == 0 ? r0 : r1) << "record " << k;
  }
}

// A merged PP rank loses its streams' metadata (lanes have their own) and its duplicate
// annotations: each removed event is written as a copy of one shortly before it, so they
// cost a few bytes each, not their text. The numbers vary the way real ones do (ts with
// trailing zeros the writer would drop, ids counting up).
TEST(Restore, RemovedEventsCostLittle) {
  std::vector<std::string> events;
  constexpr int kStreams = 150;
  for (int s = 0; s < kStreams; ++s) {
    // Built with += (GCC 12's -Wrestrict misreads a chain of + on literals here).
    std::string tid = std::to_string(7 + s), ts = std::to_string(3304166932516 + s), name = "k";
    ts += ".630";
    name += tid;
    std::string thread_name = R"({"name": "stream )", sort_index = R"({"sort_index": )";
    thread_name += tid;
    thread_name += R"( "})";
    sort_index += tid;
    sort_index += "}";
    events.push_back(kernel(0, 7 + s, ts, "3.250", name));
    events.push_back(metadata("thread_name", 0, 7 + s, thread_name));
    events.push_back(metadata("thread_sort_index", 0, 7 + s, sort_index));
  }
  std::string original = trace_json(events, R"("distributedInfo": {"rank": 0})");
  std::string out = compacted_text(original);
  EXPECT_EQ(restored(out), original);
  size_t key = out.rfind("\"tracelane_restore\"");
  size_t record_bytes = out.find("\"]", key) - key;
  // Each stream's two metadata events are removed: 300 events of ~90 bytes of text.
  EXPECT_LT(record_bytes, size_t(2 * kStreams * 2)) << "restore data of " << record_bytes << " bytes";
}

// tests/data/example_trace_compacted_format1.json: tests/data/example_trace.json compacted by
// the tracelane before format 2 (removed events as copies); copies people kept still restore.
TEST(Restore, ReadsFormat1Records) {
  std::filesystem::path data = std::filesystem::path(TRACELANE_SOURCE_DIR) / "tests/data";
  std::string original = read_file(data / "example_trace.json");
  std::string old = read_file(data / "example_trace_compacted_format1.json");
  ASSERT_FALSE(original.empty());
  ASSERT_FALSE(old.empty());
  EXPECT_EQ(restored(old), original);
}

// tests/data/example_trace_compacted_stream_rewritten.json: tests/data/example_trace.json
// compacted by the tracelane of output format 2, which rewrote a moved slice's args.stream
// to its lane's tid (SPEC 9.14 keeps it); its restore data puts the streams back.
TEST(Restore, ReadsRecordsOfOutputsThatRewroteArgsStream) {
  std::filesystem::path data = std::filesystem::path(TRACELANE_SOURCE_DIR) / "tests/data";
  std::string original = read_file(data / "example_trace.json");
  std::string old = read_file(data / "example_trace_compacted_stream_rewritten.json");
  ASSERT_FALSE(original.empty());
  ASSERT_NE(old.find("\"stream\": 1000000000"), std::string::npos) << "not an output that rewrote args.stream";
  EXPECT_EQ(restored(old), original);
}

TEST(Restore, RefusesAChangedByteOfTheRecord) {
  std::string out = compacted_text(untidy_trace());
  size_t key = out.rfind("\"tracelane_restore\"");
  size_t end = out.find("\"]", key);
  for (size_t at : {key + 25, key + 40, end - 3}) {
    std::string damaged = out;
    damaged[at] = damaged[at] == 'A' ? 'B' : 'A';
    std::string message = error_message([&] { restored(damaged); });
    EXPECT_NE(message.find("out.json: restore data"), std::string::npos) << message;
    EXPECT_NE(message.find("damaged"), std::string::npos) << message;
  }
}

TEST(Restore, RefusesEditedEvents) {
  std::string out = compacted_text(untidy_trace());
  size_t dur = out.find("\"dur\": 5");
  ASSERT_NE(dur, std::string::npos);
  std::string edited = out;
  edited[dur + 7] = '6';
  std::string message = error_message([&] { restored(edited); });
  EXPECT_NE(message.find("out.json: the compacted trace was changed"), std::string::npos) << message;
}

TEST(Restore, RefusesAnOutputWithoutRestoreData) {
  std::string out = compacted_text(untidy_trace(), {.restore_data = false});
  EXPECT_TRUE(list_restore_records(out, "out.json").empty());
  std::string message = error_message([&] { restored(out); });
  EXPECT_NE(message.find("out.json: no restore data"), std::string::npos) << message;
}

TEST(Restore, RefusesARecordForAnotherOutput) {
  // Two compactions of different traces: one's record spliced into the other's output.
  std::string a = compacted_text(untidy_trace());
  std::string b = compacted_text(trace_json({kernel(0, 7, "1", "2"), kernel(0, 8, "1.5", "2")}));
  size_t key_a = a.rfind("\"tracelane_restore\""), key_b = b.rfind("\"tracelane_restore\"");
  std::string spliced = b.substr(0, key_b) + a.substr(key_a);
  std::string message = error_message([&] { restored(spliced); });
  EXPECT_NE(message.find("out.json: the compacted trace was changed"), std::string::npos) << message;
}

// Property: for random traces (random streams, overlaps, annotations that coalesce, flows,
// number spellings, whitespace, slices PyTorch's exporter moved), each compacted and
// merged, the originals come back.
TEST(RestoreProperty, RandomTracesComeBackByteForByte) {
  std::mt19937 rng(20261201);
  auto pick = [&](int n) { return int(std::uniform_int_distribution<int>(0, n - 1)(rng)); };
  auto number = [&](int64_t ns) {
    std::string text = ns_as_us(ns);
    if (pick(4) == 0 && text.find('.') == std::string::npos) text += ".0";  // spelled unlike tracelane
    return text;
  };
  const char* spaces[] = {",\n", ", ", ",", " ,\n\t", ",\r\n  "};
  auto random_trace = [&](int rank) {
    std::string json = pick(2) ? "{\"schemaVersion\": 1, " : "{ ";
    json += R"("distributedInfo": {"rank": )" + std::to_string(rank) + "}, ";
    if (pick(2)) json += "\"baseTimeNanoseconds\": " + std::to_string(1000 + pick(5000)) + ", ";
    json += "\"traceEvents\": [";
    int n = 5 + pick(60);
    for (int i = 0; i < n; ++i) {
      if (i) json += spaces[pick(5)];
      int64_t ts = pick(100000), dur = pick(5000);
      int stream = 7 + pick(6);
      switch (pick(7)) {
        case 0:
        case 1:
        case 2:
          json += kernel(pick(2), stream, number(ts), number(dur), "k" + std::to_string(pick(4)));
          break;
        case 3:
          json += annotation(0, stream, number(ts), number(dur + 100), pick(2) ? "PP:F0" : "step");
          break;
        case 4:
          json += flow(pick(2) ? "s" : "f", "ac2g", std::to_string(pick(20)), pick(2) ? 0 : 100, stream, number(ts));
          break;
        case 5:  // moved by PyTorch's exporter onto lane 7 or 41 (SPEC 9.8)
          json += kernel(0, pick(2) ? 7 : 41, number(ts), number(dur), "g",
                         "\"original_stream\": " + std::to_string(20 + pick(4)));
          break;
        default:
          json += R"({"ph": "X", "cat": "cpu_op", "name": "op", "pid": 100, "tid": 100, "ts": )" + number(ts) +
                  ", \"dur\": 3}";
      }
    }
    json += ",\n" + kernel(0, 7, "1", "1");  // at least one measured slice
    json += pick(2) ? "]}" : "\n]\n, \"displayTimeUnit\": \"ms\"}\n";
    return json;
  };
  int compacted = 0, merged = 0;
  for (int round = 0; round < 60; ++round) {
    std::string a = random_trace(0), b = random_trace(1);
    std::string out;
    try {
      out = compacted_text(a);
    } catch (const Error&) {
      continue;  // a random trace compaction refuses (e.g. SPEC 2 errors) has nothing to restore
    }
    ASSERT_EQ(restored(out), a) << "round " << round << "\n" << a;
    ++compacted;
    std::vector<MergeInput> inputs;
    try {
      inputs.push_back({"rank0_trace.json", compact_trace(parse_trace(a, "rank0_trace.json"), {.pp_flows = false})});
      inputs.push_back({"rank1_trace.json", compact_trace(parse_trace(b, "rank1_trace.json"), {.pp_flows = false})});
      out = merge_ranks(std::move(inputs)).json;
    } catch (const Error&) {
      continue;  // e.g. only one rank has baseTimeNanoseconds
    }
    auto records = list_restore_records(out, "merged.json");
    ASSERT_EQ(records.size(), 2u);
    for (size_t k = 0; k < 2; ++k)
      ASSERT_EQ(restored(out, k), records[k].global_rank == 0 ? a : b) << "round " << round << " record " << k;
    ++merged;
  }
  // The property held on enough traces to mean something.
  EXPECT_GE(compacted, 40);
  EXPECT_GE(merged, 15);
}

// restore_original_to hands the original on in pieces as it is rebuilt (so that a restore
// never holds it whole): pieces of about 4 MiB but the last, joined they are the
// original, and a removed event still copies the one before it across a piece's end.
TEST(Restore, HandsTheOriginalOnInPiecesThatJoinToIt) {
  std::vector<std::string> events;
  constexpr int kStreams = 8000;
  for (int s = 0; s < kStreams; ++s) {
    std::string thread_name = R"({"name": "stream )";
    thread_name += std::to_string(7 + s);
    thread_name += R"( "})";
    for (int k = 0; k < 5; ++k) {
      std::string ts = std::to_string(3304166932516 + 10 * s + 2 * k);
      ts += ".630";
      events.push_back(kernel(0, 7 + s, ts, "1.250", "gemm"));
    }
    events.push_back(metadata("thread_name", 0, 7 + s, thread_name));  // removed by compaction
  }
  std::string original = trace_json(events, R"("distributedInfo": {"rank": 0})");
  ASSERT_GT(original.size(), size_t(5) << 20);
  std::string out = compacted_text(original);
  std::vector<size_t> pieces;
  std::string joined;
  restore_original_to(out, "out.json", 0, [&](std::string_view piece) {
    pieces.push_back(piece.size());
    joined += piece;
  });
  ASSERT_GE(pieces.size(), 2u);
  // 4 MiB made, less the last 64 originals, which a removed one may still copy.
  for (size_t k = 0; k + 1 < pieces.size(); ++k) EXPECT_GE(pieces[k], size_t(4 << 20) - 64 * 1024) << "piece " << k;
  EXPECT_TRUE(joined == original);
  EXPECT_TRUE(restored(out) == original);
}

// An edited copy is refused by the output's own checksum in the record before anything is
// rebuilt: restore_original_to throws without handing on a single piece (a restore then
// leaves no output at all, not even a temporary).
TEST(Restore, RefusesAnEditedCopyBeforeHandingOnAnything) {
  std::string out = compacted_text(untidy_trace());
  bool handed_on = false;
  std::string edited = out;
  size_t at = edited.find("\"name\": \"c\"");
  ASSERT_NE(at, std::string::npos);
  edited[at + 9] = 'd';
  EXPECT_THROW(restore_original_to(edited, "out.json", 0, [&](std::string_view) { handed_on = true; }), Error);
  EXPECT_FALSE(handed_on) << "an edited output is refused before anything is rebuilt";
}

// A record is authentic by its CRC-32, but may be crafted: every byte of the untidy
// trace's decompressed record changed to each of a few values, repacked with a valid
// CRC-32, is refused as damaged (or, where the change means nothing, gives the original
// back). This walks the layout's checks: the placements outside the output, a mask column
// cut short, values and removed events that do not fit.
TEST(Restore, RefusesEveryCraftedChangeOfTheRecord) {
  const std::string original = untidy_trace();
  const std::string out = compacted_text(original);
  const size_t key = out.rfind("\"tracelane_restore\": [\"");
  ASSERT_NE(key, std::string::npos);
  const size_t begin = key + std::string("\"tracelane_restore\": [\"").size();
  const size_t end = out.find('"', begin);
  std::string record;
  ASSERT_TRUE(restore_codec::decode_base64(std::string_view(out).substr(begin, end - begin), record));
  ASSERT_GE(record.size(), 16u);
  uint64_t raw_size = 0;
  for (int k = 0; k < 8; ++k) raw_size |= uint64_t(uint8_t(record[4 + k])) << (8 * k);
  std::string raw(raw_size, '\0');
  std::unique_ptr<libdeflate_decompressor, void (*)(libdeflate_decompressor*)> inflater(libdeflate_alloc_decompressor(),
                                                                                        libdeflate_free_decompressor);
  size_t actual = 0;
  ASSERT_EQ(libdeflate_deflate_decompress(inflater.get(), record.data() + 16, record.size() - 16, raw.data(),
                                          raw.size(), &actual),
            LIBDEFLATE_SUCCESS);
  ASSERT_EQ(actual, raw.size());
  std::unique_ptr<libdeflate_compressor, void (*)(libdeflate_compressor*)> deflater(libdeflate_alloc_compressor(1),
                                                                                    libdeflate_free_compressor);
  auto with_raw = [&](const std::string& changed) {
    std::string packed(libdeflate_deflate_compress_bound(deflater.get(), changed.size()), '\0');
    packed.resize(
        libdeflate_deflate_compress(deflater.get(), changed.data(), changed.size(), packed.data(), packed.size()));
    std::string repacked(restore_codec::kMagic, 4);
    restore_codec::put_fixed(repacked, changed.size(), 8);
    restore_codec::put_fixed(repacked, libdeflate_crc32(0, changed.data(), changed.size()), 4);
    repacked += packed;
    std::string text = out.substr(0, begin);
    restore_codec::append_base64(text, repacked);
    return text + out.substr(end);
  };
  ASSERT_EQ(restored(with_raw(raw)), original) << "repacking alone changes nothing";
  size_t refused = 0, tried = 0;
  bool placed_outside = false;
  for (size_t at = 0; at < raw.size(); ++at)
    for (uint8_t value : {0x00, 0x01, 0x7f, 0x80, 0xff}) {
      if (uint8_t(raw[at]) == value) continue;
      std::string changed = raw;
      changed[at] = char(value);
      ++tried;
      try {
        EXPECT_EQ(restored(with_raw(changed)), original) << "byte " << at << " set to " << int(value);
      } catch (const Error& e) {
        ++refused;
        std::string message = e.what();
        EXPECT_EQ(message.rfind("out.json: ", 0), 0u) << message;
        placed_outside |= message.find("an event is placed outside the output") != std::string::npos;
      }
    }
  EXPECT_GT(refused, tried / 2) << "most changes of a record are refused";
  EXPECT_TRUE(placed_outside) << "a placement past the output's events is refused as such, before it is read";
  // The cut short: a record that ends anywhere before its end is refused.
  for (size_t size = 0; size < raw.size(); ++size)
    EXPECT_THROW(restored(with_raw(raw.substr(0, size))), Error) << "cut to " << size << " bytes";
}

// RestoreData::member() gives up the walks' columns as it joins them into the record: a
// second call would make a record of nothing, so it is refused.
TEST(Restore, ARecordIsMadeOnce) {
  CompactedTrace compacted = compact_trace(parse_trace(untidy_trace(), "dir/t.json"), {});
  RestoreSource source;
  source.trace = &compacted.trace;
  RestoreData data({source});
  data.walk(0);
  OutputFrame frame;  // what the record says of the output does not matter here
  frame.head = "{\"traceEvents\": [\n  ";
  frame.tail = "\n]}";
  frame.size = 1 << 20;
  std::string member = data.member(frame);
  EXPECT_NE(member.find("\"tracelane_restore\": [\""), std::string::npos) << member;
  std::string message = error_message([&] { data.member(frame); });
  EXPECT_NE(message.find("dir/t.json: internal: a restore record encoded twice"), std::string::npos) << message;
}
