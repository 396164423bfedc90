// libFuzzer target over rules files (SPEC 9.9): arbitrary bytes -> Rules::parse; when they
// parse, the rules classify names (short, ~64 kB long, bytes that are not UTF-8, and the
// input's own), find PP actions in them (prefix grammar and user patterns), and run a
// small trace through compact_trace + write_compacted + merge_ranks with those rules. When
// the input holds the marker "\n#NAMES#\n", what precedes it is the rules file and each
// line after it is one more name to try (so the fuzzer can make names that reach a
// pattern's deep states). Every input must end in success or a clean tracelane::Error;
// anything else (a crash, a sanitizer report, a stack overflow in a regex engine, another
// exception escaping) is a bug, and so is a group index out of range or an output that is
// not valid JSON.
//
//   CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DTRACELANE_FUZZ=ON \
//       -DTRACELANE_BUILD_TESTS=OFF -DTRACELANE_BUILD_BENCH=OFF && ninja -C build-fuzz fuzz_rules
//   build-fuzz/tests/fuzz/fuzz_rules -dict=tests/fuzz/rules.dict -max_len=8192 \
//       fuzz-rules-work tests/fuzz/corpus_rules
//
// For a long run add -max_total_time=SECONDS (and a new -seed each time); CI runs a fixed
// -seed and -runs. Add each finding, once fixed, to tests/unit/rules_test.cpp and its
// input to tests/fuzz/corpus_rules (regress_*), which every run replays first.
#include <simdjson.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tracelane/compact.hpp"
#include "tracelane/merge.hpp"
#include "tracelane/rules.hpp"
#include "tracelane/trace.hpp"

namespace {

constexpr std::string_view kNamesMarker = "\n#NAMES#\n";

[[noreturn]] void bug(const char* what, std::string_view detail) {
  std::fprintf(stderr, "fuzz_rules: %s\n%.2000s\n", what, std::string(detail).c_str());
  std::abort();
}

// A JSON string literal for any bytes. Bytes that are not valid UTF-8 cannot appear in a
// trace (the parser refuses them), so they are written as U+FFFD there; the matcher still
// sees them raw through classify() and pp_actions().
std::string json_string(std::string_view bytes) {
  std::string out = "\"";
  for (size_t i = 0; i < bytes.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      char escape[8];
      std::snprintf(escape, sizeof escape, "\\u%04x", c);
      out += escape;
    } else if (c < 0x80) {
      out += char(c);
    } else {
      // Copy a well-formed UTF-8 sequence; replace anything else byte by byte.
      size_t n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
      bool ok = n > 0 && i + n <= bytes.size();
      for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(bytes[i + k]) & 0xc0) == 0x80;
      if (ok && n == 3) {
        unsigned char d = static_cast<unsigned char>(bytes[i + 1]);
        ok = !(c == 0xe0 && d < 0xa0) && !(c == 0xed && d >= 0xa0);  // overlong, surrogate
      }
      if (ok && n == 4) {
        unsigned char d = static_cast<unsigned char>(bytes[i + 1]);
        ok = !(c == 0xf0 && d < 0x90) && !(c == 0xf4 && d >= 0x90);  // overlong, past U+10FFFF
      }
      if (ok) {
        out.append(bytes.substr(i, n));
        i += n - 1;
      } else {
        out += "\\ufffd";
      }
    }
  }
  return out + "\"";
}

void expect_valid_json(const std::string& json, const char* what) {
  static simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto error = parser.parse(simdjson::padded_string(json)).get(root))
    bug(what, std::string(simdjson::error_message(error)) + "\n" + json);
}

// A one-GPU trace: each name as a kernel on its own stream and as a GPU annotation over it.
std::string trace_of(const std::vector<std::string>& names) {
  std::string events = R"({"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}})";
  int64_t ts = 1000;
  int stream = 7;
  for (const std::string& name : names) {
    std::string quoted = json_string(name);
    std::string s = std::to_string(stream), t = std::to_string(ts);
    events += R"(, {"ph": "X", "cat": "gpu_user_annotation", "name": )" + quoted + R"(, "pid": 0, "tid": )" + s +
              R"(, "ts": )" + t + R"(, "dur": 10, "args": {}})";
    events += R"(, {"ph": "X", "cat": "kernel", "name": )" + quoted + R"(, "pid": 0, "tid": )" + s + R"(, "ts": )" +
              std::to_string(ts + 1) + R"(, "dur": 5, "args": {"stream": )" + s + "}}";
    ts += 3;  // overlapping: several lanes per group
    stream = 7 + (stream - 6) % 5;
  }
  return R"({"schemaVersion": 1, "baseTimeNanoseconds": 1700000000000000000, "traceEvents": [)" + events + "]}";
}

void exercise(const tracelane::Rules& rules, const std::vector<std::string>& names) {
  const size_t groups = rules.groups().size();
  if (groups == 0) bug("rules with no groups (compute must always exist)", "");
  static const char* const kCats[] = {"kernel", "gpu_memcpy", "Memset", "cuda_sync", ""};
  for (const std::string& name : names) {
    for (const char* cat : kCats) {
      int g = rules.classify(cat, name);
      if (g < 0 || size_t(g) >= groups) bug("classify returned a group out of range", name);
    }
    for (const auto& action : rules.pp_actions(name))
      if (action.op.empty()) bug("a PP action without an op", name);
  }
  // The rules in the pipeline: lanes, labels and PP arrows from them, written as JSON. The
  // matcher saw every long name above; the trace takes one (the rest would only slow the
  // fuzzer down in JSON text) and up to 24 short ones.
  std::vector<std::string> few;
  bool long_one = false;
  for (const std::string& name : names) {
    if (few.size() == 24) break;
    if (name.size() > 4096 && std::exchange(long_one, true)) continue;
    few.push_back(name);
  }
  std::string json = trace_of(few);
  try {
    tracelane::CompactOptions options;
    options.rules = &rules;
    auto compacted = tracelane::compact_trace(tracelane::parse_trace(json, "fuzz.json"), options);
    expect_valid_json(tracelane::write_compacted(compacted), "compact with these rules wrote invalid JSON");
    options.pp_flows = false;
    std::vector<tracelane::MergeInput> inputs;
    inputs.push_back(
        {"rank0_trace.json", tracelane::compact_trace(tracelane::parse_trace(json, "rank0_trace.json"), options)});
    inputs.push_back(
        {"rank1_trace.json", tracelane::compact_trace(tracelane::parse_trace(json, "rank1_trace.json"), options)});
    expect_valid_json(tracelane::merge_ranks(std::move(inputs), &rules).json,
                      "merge with these rules wrote invalid JSON");
  } catch (const tracelane::Error&) {
    // A name the trace cannot hold is fine; the rules' own checks came first.
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::string_view rules_text = bytes, extra;
  if (auto marker = bytes.find(kNamesMarker); marker != std::string_view::npos) {
    rules_text = bytes.substr(0, marker);
    extra = bytes.substr(marker + kNamesMarker.size());
  }
  std::optional<tracelane::Rules> rules;
  try {
    rules = tracelane::Rules::parse(rules_text, "fuzz_rules.json");
  } catch (const tracelane::Error& e) {
    if (std::string_view(e.what()).rfind("fuzz_rules.json: ", 0) != 0)
      bug("an error that does not name the file", e.what());
    return 0;
  }
  // Names: ordinary ones, PP annotations, odd bytes, long ones (backtracking engines
  // recurse or explode on these), and the input's own lines.
  static const std::string kLongA(64 << 10, 'a'), kLongX(64 << 10, 'x');
  std::vector<std::string> names = {
      "",
      "k",
      "sm90_gemm",
      "void flash_attn_fwd_kernel<float>",
      "ncclDevKernel_AllGather_RING_LL",
      "symmetric_memory::barrier",
      "PP:0F0",
      "PP:1SEND_F2",
      "PP:(0F1;1B0)OVERLAP_F_B",
      "stage1_F_mb2",
      std::string("\xff\xfe\x00\x01\x1b[2J\xc3\x28\xed\xa0\x80", 12),
      "ATTN" + kLongA + "FWD",
      kLongA + "b",
      kLongX,
      kLongX + "y",
      kLongX + "stage0_F_mb0",
  };
  for (size_t start = 0; start <= extra.size() && names.size() < 64;) {
    size_t end = extra.find('\n', start);
    if (end == std::string_view::npos) end = extra.size();
    names.emplace_back(extra.substr(start, end - start));
    start = end + 1;
  }
  names.emplace_back(rules_text);
  exercise(*rules, names);
  return 0;
}
