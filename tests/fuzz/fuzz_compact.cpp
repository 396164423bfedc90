// libFuzzer target over the core: gunzip (when the bytes are gzip) + parse_trace +
// compact_trace + write_compacted; when the input holds the marker "\n#RANK#\n", the two
// halves are compacted as two ranks (no single-trace arrows) and merged with merge_ranks.
// Every input must end in success or a clean tracelane::Error; anything else (a crash, a
// sanitizer report, another exception escaping) is a bug.
//
//   CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DTRACELANE_FUZZ=ON \
//       -DTRACELANE_BUILD_TESTS=OFF -DTRACELANE_BUILD_BENCH=OFF && ninja -C build-fuzz fuzz_compact
//   build-fuzz/tests/fuzz/fuzz_compact -dict=tests/fuzz/kineto.dict -max_len=65536 \
//       fuzz-work tests/fuzz/corpus ../shared/corpus/...
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tracelane/compact.hpp"
#include "tracelane/gzip.hpp"
#include "tracelane/merge.hpp"
#include "tracelane/trace.hpp"

namespace {

constexpr std::string_view kRankMarker = "\n#RANK#\n";

std::string decode(std::string_view bytes, const std::string& name) {
  if (tracelane::is_gzip(bytes)) return tracelane::gunzip(bytes, name);
  return std::string(bytes);
}

void compact_one(std::string_view bytes) {
  try {
    tracelane::CompactOptions options;
    auto compacted = tracelane::compact_trace(tracelane::parse_trace(decode(bytes, "fuzz.json"), "fuzz.json"), options);
    std::string out = tracelane::write_compacted(compacted);
    (void)out;
  } catch (const tracelane::Error&) {
  }
}

void merge_two(std::string_view a, std::string_view b) {
  try {
    tracelane::CompactOptions options;
    options.pp_flows = false;
    std::vector<tracelane::MergeInput> inputs;
    inputs.push_back({"rank0_trace.json", tracelane::compact_trace(tracelane::parse_trace(decode(a, "rank0_trace.json"), "rank0_trace.json"), options)});
    inputs.push_back({"rank1_trace.json", tracelane::compact_trace(tracelane::parse_trace(decode(b, "rank1_trace.json"), "rank1_trace.json"), options)});
    auto merged = tracelane::merge_ranks(std::move(inputs));
    (void)merged;
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
