// Helpers shared by the unit tests: build literal traces, run the core, read the result.
#pragma once

#include <gtest/gtest.h>
#include <libdeflate.h>
#include <simdjson.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tracelane/classify.hpp"
#include "tracelane/compact.hpp"
#include "tracelane/merge.hpp"
#include "tracelane/trace.hpp"

namespace tracelane::testing {

// The uncompressed size of each gzip member of `gz`, read one after another with libdeflate
// (`capacity`: at least the largest member's text); SIZE_MAX last where one does not read.
inline std::vector<size_t> gzip_member_sizes(const std::string& gz, size_t capacity = size_t(64) << 20) {
  std::vector<size_t> sizes;
  libdeflate_decompressor* d = libdeflate_alloc_decompressor();
  std::string out(capacity + 1, '\0');
  size_t in_pos = 0;
  while (in_pos < gz.size()) {
    size_t consumed = 0, produced = 0;
    if (libdeflate_gzip_decompress_ex(d, gz.data() + in_pos, gz.size() - in_pos, out.data(), out.size(), &consumed,
                                      &produced) != LIBDEFLATE_SUCCESS) {
      sizes.push_back(SIZE_MAX);
      break;
    }
    sizes.push_back(produced);
    in_pos += consumed;
  }
  libdeflate_free_decompressor(d);
  return sizes;
}

// A trace document from event objects written as JSON text, with optional extra
// top-level keys (raw JSON, e.g. R"("baseTimeNanoseconds": 1000)").
inline std::string trace_json(const std::vector<std::string>& events, const std::string& extra_top = "") {
  std::string out = "{\"schemaVersion\": 1, ";
  if (!extra_top.empty()) out += extra_top + ", ";
  out += "\"traceEvents\": [\n";
  for (size_t i = 0; i < events.size(); ++i) out += (i ? ",\n" : "") + events[i];
  out += "\n]}";
  return out;
}

// A kernel slice on GPU pid/stream with ts/dur in µs text.
inline std::string kernel(int pid, int stream, const std::string& ts, const std::string& dur,
                          const std::string& name = "k", const std::string& extra_args = "") {
  return "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"" + name + "\", \"pid\": " + std::to_string(pid) +
         ", \"tid\": " + std::to_string(stream) + ", \"ts\": " + ts + ", \"dur\": " + dur +
         ", \"args\": {\"stream\": " + std::to_string(stream) + (extra_args.empty() ? "" : ", " + extra_args) + "}}";
}

// Any measured (or cuda_sync) slice: cat, name, pid, stream, ts/dur as µs text.
inline std::string slice_event(const std::string& cat, const std::string& name, int pid, int stream,
                               const std::string& ts, const std::string& dur, const std::string& extra_args = "") {
  return "{\"ph\": \"X\", \"cat\": \"" + cat + "\", \"name\": \"" + name + "\", \"pid\": " + std::to_string(pid) +
         ", \"tid\": " + std::to_string(stream) + ", \"ts\": " + ts + ", \"dur\": " + dur +
         ", \"args\": {\"stream\": " + std::to_string(stream) + (extra_args.empty() ? "" : ", " + extra_args) + "}}";
}

// A gpu_user_annotation X span on (pid, tid); args is raw JSON.
inline std::string annotation(int pid, int tid, const std::string& ts, const std::string& dur, const std::string& name,
                              const std::string& args = "{}") {
  return "{\"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": \"" + name +
         "\", \"pid\": " + std::to_string(pid) + ", \"tid\": " + std::to_string(tid) + ", \"ts\": " + ts +
         ", \"dur\": " + dur + ", \"args\": " + args + "}";
}

// A flow endpoint (ph s, t or f); id_text is raw JSON (5, 5.0, "5").
inline std::string flow(const std::string& ph, const std::string& cat, const std::string& id_text, int pid, int tid,
                        const std::string& ts, const std::string& name = "flow") {
  return "{\"ph\": \"" + ph + "\", \"cat\": \"" + cat + "\", \"name\": \"" + name + "\", \"id\": " + id_text +
         ", \"pid\": " + std::to_string(pid) + ", \"tid\": " + std::to_string(tid) + ", \"ts\": " + ts +
         (ph == "f" ? ", \"bp\": \"e\"" : "") + "}";
}

// A metadata event (ph M) such as thread_name; args is raw JSON.
inline std::string metadata(const std::string& name, int pid, int tid, const std::string& args) {
  return "{\"name\": \"" + name + "\", \"ph\": \"M\", \"pid\": " + std::to_string(pid) +
         ", \"tid\": " + std::to_string(tid) + ", \"args\": " + args + "}";
}

// The message of the tracelane::Error that `body` throws; fails the test when it throws
// nothing or something else.
template <class Body>
std::string error_message(Body&& body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  } catch (const std::exception& other) {
    ADD_FAILURE() << "expected tracelane::Error, got std::exception: " << other.what();
    return "";
  }
  ADD_FAILURE() << "expected tracelane::Error, nothing was thrown";
  return "";
}

// The aligned tid (SPEC 9.11) of lane `number` (0-based) of a default group, or of one of
// its tracks: kAnnotationTrack, or n for "<label> annotations (n)".
inline int64_t lane_tid(std::string_view group_id, uint32_t number = 0, uint32_t track = kLaneTrack, uint32_t gpu = 0) {
  const auto& groups = default_groups();
  uint32_t group = 0;
  while (group < groups.size() && groups[group].id != group_id) ++group;
  if (group == groups.size()) ADD_FAILURE() << "no default group " << group_id;
  return *TrackTids::aligned({gpu, group, number, track});
}
inline int64_t annotation_tid(std::string_view group_id, uint32_t number = 0) {
  return lane_tid(group_id, number, kAnnotationTrack);
}

inline CompactedTrace compact_text(const std::string& json, CompactOptions options = {}) {
  return compact_trace(parse_trace(json, "test.json"), options);
}

// The output of compaction, parsed back with simdjson's DOM for inspection.
struct Output {
  std::string text;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  std::vector<simdjson::dom::element> events;

  explicit Output(std::string json) : text(std::move(json)) {
    root = parser.parse(text);
    for (auto e : root["traceEvents"].get_array()) events.push_back(e);
  }
  // Events whose "name" equals name.
  std::vector<simdjson::dom::element> named(std::string_view name) const {
    std::vector<simdjson::dom::element> out;
    for (auto e : events) {
      std::string_view n;
      if (e["name"].get_string().get(n) == simdjson::SUCCESS && n == name) out.push_back(e);
    }
    return out;
  }
  // Integer value of key (or `fallback` when absent or not an integer).
  static int64_t int_of(simdjson::dom::element e, std::string_view key, int64_t fallback = INT64_MIN) {
    int64_t v;
    if (e[key].get_int64().get(v) == simdjson::SUCCESS) return v;
    return fallback;
  }
  // Number value of key as double (integers too); NaN when absent.
  static double number_of(simdjson::dom::element e, std::string_view key) {
    simdjson::dom::element v;
    if (e[key].get(v) != simdjson::SUCCESS) return std::nan("");
    double d;
    if (v.get_double().get(d) == simdjson::SUCCESS) return d;
    int64_t i;
    if (v.get_int64().get(i) == simdjson::SUCCESS) return double(i);
    return std::nan("");
  }
  // String value of key, or "" when absent or not a string.
  static std::string string_of(simdjson::dom::element e, std::string_view key) {
    std::string_view s;
    if (e[key].get_string().get(s) == simdjson::SUCCESS) return std::string(s);
    return "";
  }
  // Events with the given ph (and cat, when non-empty).
  std::vector<simdjson::dom::element> with_ph(std::string_view ph, std::string_view cat = {}) const {
    std::vector<simdjson::dom::element> out;
    for (auto e : events)
      if (string_of(e, "ph") == ph && (cat.empty() || string_of(e, "cat") == cat)) out.push_back(e);
    return out;
  }
  // The single event named `name`; fails the test when there is not exactly one.
  simdjson::dom::element one(std::string_view name) const {
    auto all = named(name);
    EXPECT_EQ(all.size(), 1u) << "events named " << name;
    return all.empty() ? simdjson::dom::element() : all[0];
  }
  bool contains(std::string_view snippet) const { return text.find(snippet) != std::string::npos; }
  // thread_name label of (pid, tid), or "" when none.
  std::string label(int64_t pid, int64_t tid) const {
    for (auto e : named("thread_name")) {
      int64_t p, t;
      if (e["pid"].get_int64().get(p) || e["tid"].get_int64().get(t)) continue;
      if (p == pid && t == tid) return std::string(std::string_view(e["args"]["name"].get_string()));
    }
    return "";
  }
};

inline Output compact_output(const std::string& json, CompactOptions options = {}) {
  return Output(write_compacted(compact_text(json, options)));
}

// The shared corpus directory (TRACELANE_SHARED, default ../shared beside the checkout),
// or "" when absent.
inline std::string shared_dir() {
  const char* env = std::getenv("TRACELANE_SHARED");
  std::filesystem::path dir = env && *env ? env : std::filesystem::path(TRACELANE_SOURCE_DIR) / ".." / "shared";
  return std::filesystem::is_directory(dir / "corpus") ? dir.string() : "";
}

#define TRACELANE_REQUIRE_SHARED(var)                                                         \
  std::string var = ::tracelane::testing::shared_dir();                                       \
  if (var.empty())                                                                            \
  GTEST_SKIP() << "SKIPPED: corpus not found; set TRACELANE_SHARED to the shared/ directory " \
                  "(default ../shared beside the checkout)"

}  // namespace tracelane::testing
