// libFuzzer target over the core: gunzip (when the bytes are gzip) + parse_trace +
// compact_trace + write_compacted (also with the chunked parser on small chunks, which must
// agree); when the input holds the marker "\n#RANK#\n", the two
// halves are compacted as two ranks (no single-trace arrows) and merged with merge_ranks.
// Every input must end in success or a clean tracelane::Error; anything else (a crash, a
// sanitizer report, another exception escaping) is a bug, and so is an output that is not
// valid JSON (checked with simdjson's DOM parser, for an input that parser accepts), and so is
// an output whose restore data (SPEC 9.12) does not give the input back byte for byte, or
// is refused: whenever compaction or merge succeeds, restore must succeed too.
//
//   CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DTRACELANE_FUZZ=ON \
//       -DTRACELANE_BUILD_TESTS=OFF -DTRACELANE_BUILD_BENCH=OFF && ninja -C build-fuzz fuzz_compact
//   build-fuzz/tests/fuzz/fuzz_compact -dict=tests/fuzz/kineto.dict -max_len=65536 \
//       fuzz-work tests/fuzz/corpus ../shared/corpus/...
//
// For a long run add -max_total_time=SECONDS (and a new -seed each time); CI runs a fixed
// -seed and -runs, so that its result depends only on the commit. Add each finding, once
// fixed, to tests/unit/fuzz_regressions_test.cpp and its input to tests/fuzz/corpus
// (regress_*), which every run replays first.
#include <simdjson.h>
#include <tbb/task_arena.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "tracelane/compact.hpp"
#include "tracelane/gzip.hpp"
#include "tracelane/merge.hpp"
#include "tracelane/restore.hpp"
#include "tracelane/trace.hpp"

namespace {

constexpr std::string_view kRankMarker = "\n#RANK#\n";

std::string decode(std::string_view bytes, const std::string& name) {
  if (tracelane::is_gzip(bytes)) return tracelane::gunzip(bytes, name);
  return std::string(bytes);
}

bool valid_json(std::string_view json, simdjson::error_code* error = nullptr) {
  static simdjson::dom::parser parser;
  simdjson::dom::element root;
  simdjson::error_code e = parser.parse(simdjson::padded_string(json)).get(root);
  if (error) *error = e;
  return !e;
}

// Valid JSON in must give valid JSON out. (On-Demand checks only the scalars tracelane
// reads, so a malformed number elsewhere in an event is copied through as it was.)
void expect_valid_json(const std::string& json, bool input_valid, const char* what) {
  simdjson::error_code error;
  if (valid_json(json, &error) || !input_valid) return;
  std::fprintf(stderr, "fuzz_compact: valid input, %s output is not valid JSON: %s\n%.2000s\n", what,
               simdjson::error_message(error), json.c_str());
  std::abort();
}

// restore(output, record) must be `original`, exactly.
void expect_restores(const std::string& output, size_t record, const std::string& original, const char* what) {
  std::string restored;
  try {
    restored = tracelane::restore_original(output, "fuzz_out.json", record);
  } catch (const tracelane::Error& e) {
    std::fprintf(stderr, "fuzz_compact: %s succeeded but restore (record %zu) refused: %s\n", what, record, e.what());
    std::abort();
  }
  if (restored != original) {
    std::fprintf(stderr, "fuzz_compact: %s: restore (record %zu) gave %zu bytes, not the %zu bytes of the input\n",
                 what, record, restored.size(), original.size());
    std::abort();
  }
}

// The compacted output, or "error: <message>".
std::string compacted_or_error(const std::string& json, const tracelane::ParseOptions& parse) {
  try {
    tracelane::CompactOptions options;
    auto compacted = tracelane::compact_trace(tracelane::parse_trace(json, "fuzz.json", parse), options);
    std::string out = tracelane::write_compacted(compacted);
    expect_valid_json(out, valid_json(json), "compact");
    if (!parse.max_document_bytes) expect_restores(out, 0, json, "compact");
    return out;
  } catch (const tracelane::Error& e) {
    return std::string("error: ") + e.what();
  }
}

void compact_one(std::string_view bytes) {
  std::string json;
  try {
    json = decode(bytes, "fuzz.json");
  } catch (const tracelane::Error&) {
    return;
  }
  std::string whole = compacted_or_error(json, {});
  // Differential: the chunked parser (SPEC 9.10, for traces over 4 GiB) on small chunks
  // must give the same output, or fail as well. On one thread for half the inputs: there
  // the list is cut as it is read, at guessed separators (trace_parser.cpp, read_as_cut).
  if (json.size() > 64) {
    tracelane::ParseOptions chunked;
    chunked.max_document_bytes = 32 + json.size() % 97;
    std::string parts;
    if (json.size() % 2)
      tbb::task_arena(1).execute([&] { parts = compacted_or_error(json, chunked); });
    else
      parts = compacted_or_error(json, chunked);
    bool whole_failed = whole.rfind("error: ", 0) == 0, parts_failed = parts.rfind("error: ", 0) == 0;
    if (whole_failed != parts_failed || (!whole_failed && whole != parts)) {
      std::fprintf(stderr, "fuzz_compact: chunked parsing (max_document_bytes %zu) differs:\n%.1500s\n---\n%.1500s\n",
                   chunked.max_document_bytes, whole.c_str(), parts.c_str());
      std::abort();
    }
  }
}

void merge_two(std::string_view a, std::string_view b) {
  try {
    tracelane::CompactOptions options;
    options.pp_flows = false;
    std::string json_a = decode(a, "rank0_trace.json"), json_b = decode(b, "rank1_trace.json");
    bool input_valid = valid_json(json_a) && valid_json(json_b);
    std::vector<tracelane::MergeInput> inputs;
    inputs.push_back(
        {"rank0_trace.json", tracelane::compact_trace(tracelane::parse_trace(json_a, "rank0_trace.json"), options)});
    inputs.push_back(
        {"rank1_trace.json", tracelane::compact_trace(tracelane::parse_trace(json_b, "rank1_trace.json"), options)});
    std::string merged = tracelane::merge_ranks(std::move(inputs)).json;
    expect_valid_json(merged, input_valid, "merge");
    auto records = tracelane::list_restore_records(merged, "fuzz_out.json");
    if (records.size() != 2) {
      std::fprintf(stderr, "fuzz_compact: a merge of two ranks has %zu restore records\n", records.size());
      std::abort();
    }
    // Records come in PP order, which the fuzzed distributedInfo decides: each gives back
    // one input and, together, both.
    std::string first;
    try {
      first = tracelane::restore_original(merged, "fuzz_out.json", 0);
    } catch (const tracelane::Error& e) {
      std::fprintf(stderr, "fuzz_compact: merge succeeded but restore (record 0) refused: %s\n", e.what());
      std::abort();
    }
    expect_restores(merged, 0, first == json_a ? json_a : json_b, "merge");
    expect_restores(merged, 1, first == json_a ? json_b : json_a, "merge");
  } catch (const tracelane::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto marker = bytes.find(kRankMarker);
  if (marker == std::string_view::npos) {
    compact_one(bytes);
  } else {
    compact_one(bytes.substr(0, marker));
    merge_two(bytes.substr(0, marker), bytes.substr(marker + kRankMarker.size()));
  }
  return 0;
}
