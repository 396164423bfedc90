// Where the time of one `compact` goes, pass by pass, in bytes per second of
// uncompressed trace. Run: TRACELANE_BENCH_TRACE=big.json.gz ./build/bench/tracelane_bench
#include <benchmark/benchmark.h>
#include <simdjson.h>
#include <tbb/task_arena.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tracelane/compact.hpp"
#include "tracelane/gzip.hpp"
#include "tracelane/lanes.hpp"
#include "tracelane/trace.hpp"

namespace {

const std::string& input_json() {
  static const std::string json = [] {
    const char* env = std::getenv("TRACELANE_BENCH_TRACE");
    std::string path = env && *env ? env : TRACELANE_SOURCE_DIR "/tests/data/example_trace.json";
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    std::string bytes = buffer.str();
    return tracelane::is_gzip(bytes) ? tracelane::gunzip(bytes, path) : bytes;
  }();
  return json;
}

void BM_SimdjsonDomParse(benchmark::State& state) {
  simdjson::dom::parser parser;  // one parser reused, as simdjson recommends
  simdjson::padded_string padded(input_json());
  for (auto _ : state) {
    simdjson::dom::element root;
    if (parser.parse(padded).get(root)) state.SkipWithError("parse failed");
    benchmark::DoNotOptimize(root);
  }
  state.SetBytesProcessed(int64_t(state.iterations() * input_json().size()));
}
BENCHMARK(BM_SimdjsonDomParse)->Unit(benchmark::kMillisecond);

void BM_ParseTrace(benchmark::State& state) {
  for (auto _ : state) {
    auto trace = tracelane::parse_trace(input_json(), "bench");
    benchmark::DoNotOptimize(trace.events.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations() * input_json().size()));
}
BENCHMARK(BM_ParseTrace)->Unit(benchmark::kMillisecond);

void BM_CompactPasses(benchmark::State& state) {
  for (auto _ : state) {
    state.PauseTiming();
    auto trace = tracelane::parse_trace(input_json(), "bench");
    state.ResumeTiming();
    auto compacted = tracelane::compact_trace(std::move(trace), {});
    benchmark::DoNotOptimize(compacted.lanes.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations() * input_json().size()));
}
BENCHMARK(BM_CompactPasses)->Unit(benchmark::kMillisecond);

void BM_Serialise(benchmark::State& state) {
  auto compacted = tracelane::compact_trace(tracelane::parse_trace(input_json(), "bench"), {});
  for (auto _ : state) {
    std::string out = tracelane::write_compacted(compacted);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations() * input_json().size()));
}
BENCHMARK(BM_Serialise)->Unit(benchmark::kMillisecond);

void BM_GzipLevel(benchmark::State& state) {
  for (auto _ : state) {
    std::string out = tracelane::gzip_compress(input_json(), int(state.range(0)));
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations() * input_json().size()));
}
BENCHMARK(BM_GzipLevel)->Arg(1)->Arg(6)->Arg(9)->Unit(benchmark::kMillisecond);

// Members of kGzipMemberBytes compressed concurrently: args level, threads. Real time is
// the figure (the work runs on the arena's threads); the counter `size_vs_one_member` is
// the output's size over gzip_compress's at the same level.
void BM_GzipMembers(benchmark::State& state) {
  int level = int(state.range(0));
  tbb::task_arena arena(int(state.range(1)));
  size_t bytes = 0;
  for (auto _ : state) {
    std::string out;
    arena.execute([&] { out = tracelane::gzip_compress_members(input_json(), level); });
    bytes = out.size();
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations() * input_json().size()));
  state.counters["size_vs_one_member"] = double(bytes) / double(tracelane::gzip_compress(input_json(), level).size());
}
BENCHMARK(BM_GzipMembers)
    ->Args({1, 1})
    ->Args({1, 2})
    ->Args({6, 1})
    ->Args({6, 2})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

void BM_AssignLanes(benchmark::State& state) {
  std::vector<tracelane::Interval> intervals;
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < state.range(0); ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    tracelane::Ns start = tracelane::Ns(x % 1000000000);
    intervals.push_back({start, start + tracelane::Ns(x % 50000)});
  }
  for (auto _ : state) {
    uint32_t lanes = 0;
    auto lane_of = tracelane::assign_lanes(intervals, lanes);
    benchmark::DoNotOptimize(lane_of.data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_AssignLanes)->Arg(1 << 16)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
