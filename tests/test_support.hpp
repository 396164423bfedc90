// Helpers shared by the unit tests: build literal traces, run the core, read the result.
#pragma once

#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tracelane/compact.hpp"
#include "tracelane/merge.hpp"
#include "tracelane/trace.hpp"

namespace tracelane::testing {

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

#define TRACELANE_REQUIRE_SHARED(var)                                                              \
  std::string var = ::tracelane::testing::shared_dir();                                            \
  if (var.empty())                                                                                 \
  GTEST_SKIP() << "SKIPPED: corpus not found; set TRACELANE_SHARED to the shared/ directory "     \
                  "(default ../shared beside the checkout)"

}  // namespace tracelane::testing
