// PP pairing (SPEC 7) on adversarial shapes, n scaled by 10: the time per block must stay
// about flat from 3k to 300k (O(n log n)); the ratio between rows is the result, not the
// absolute times. Run: ./build/bench/tracelane_pp_bench (add --benchmark_filter=Pair to
// time the matching alone). Google Benchmark prints each row's time and items per second,
// and per family the fitted complexity (BigO, as N log N) and its RMS.
//
// Shapes (n sources, n destinations, all of one key):
//   sources_first       n sources left of n destinations (the issue 9 trace: n PP:0F0
//                       blocks, then n PP:0SEND_F0) - quadratic before
//   destinations_first  its mirror
//   interleaved         runs of 64 sources and 64 destinations alternating
//   all_equal           every midpoint equal (every distance ties)
//   alternating         source, destination, source, ... one apart
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "tracelane/pp_flows.hpp"

namespace {

using tracelane::Ns;

enum Shape { sources_first, destinations_first, interleaved, all_equal, alternating };
const char* shape_name(int64_t shape) {
  static const char* names[] = {"sources_first", "destinations_first", "interleaved", "all_equal", "alternating"};
  return names[shape];
}

// Start times of the n source and n destination blocks (each 5 ns long, gaps of 5).
std::pair<std::vector<Ns>, std::vector<Ns>> starts(int shape, int64_t n) {
  std::vector<Ns> s(static_cast<size_t>(n)), d(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    switch (shape) {
      case sources_first:
        s[k] = 10 * k, d[k] = 10 * (n + k);
        break;
      case destinations_first:
        s[k] = 10 * (n + k), d[k] = 10 * k;
        break;
      case interleaved:
        s[k] = 10 * (2 * 64 * (k / 64) + k % 64), d[k] = s[k] + 10 * 64;
        break;
      case all_equal:
        s[k] = 0, d[k] = 0;
        break;
      case alternating:
        s[k] = 20 * k, d[k] = 20 * k + 10;
        break;
    }
  }
  return {s, d};
}

void BM_PairByNearestMidpoint(benchmark::State& state) {
  int shape = int(state.range(0));
  int64_t n = state.range(1);
  auto [s, d] = starts(shape, n);
  for (Ns& v : s) v = 2 * v + 5;  // start + end
  for (Ns& v : d) v = 2 * v + 5;
  for (auto _ : state) {
    auto pairs = tracelane::pair_by_nearest_midpoint(s, d);
    benchmark::DoNotOptimize(pairs.data());
  }
  state.SetComplexityN(n);
  state.SetItemsProcessed(state.iterations() * 2 * n);
}

// The whole single-trace arrow pass on the trace shape: n PP:0F0 blocks and n
// PP:0SEND_F0 (F -> SEND pairing), laid out by `shape`.
void BM_BuildPpFlows(benchmark::State& state) {
  int shape = int(state.range(0));
  int64_t n = state.range(1);
  auto [s, d] = starts(shape, n);
  std::vector<tracelane::AnnotationSpan> spans;
  for (int64_t k = 0; k < n; ++k) spans.push_back({1, 100, s[k], s[k] + 5, "PP:0F0"});
  for (int64_t k = 0; k < n; ++k) spans.push_back({1, 300, d[k], d[k] + 5, "PP:0SEND_F0"});
  tracelane::PidTracks tracks;
  tracks.pid = 1;
  tracks.main_compute_track = 100;
  for (auto _ : state) {
    auto result = tracelane::build_pp_flows(spans, {tracks}, false);
    benchmark::DoNotOptimize(result.flows.data());
  }
  state.SetComplexityN(n);
  state.SetItemsProcessed(state.iterations() * 2 * n);
}

// Merge's send -> recv pairing: n PP:0SEND_F0 on one pid, n PP:1RECV_F0 on another.
void BM_BuildPpFlowsCrossRank(benchmark::State& state) {
  int shape = int(state.range(0));
  int64_t n = state.range(1);
  auto [s, d] = starts(shape, n);
  std::vector<tracelane::AnnotationSpan> spans;
  for (int64_t k = 0; k < n; ++k) spans.push_back({1, 300, s[k], s[k] + 5, "PP:0SEND_F0"});
  for (int64_t k = 0; k < n; ++k) spans.push_back({2, 300, d[k], d[k] + 5, "PP:1RECV_F0"});
  for (auto _ : state) {
    auto result = tracelane::build_pp_flows(spans, {}, true);
    benchmark::DoNotOptimize(result.flows.data());
  }
  state.SetComplexityN(n);
  state.SetItemsProcessed(state.iterations() * 2 * n);
}

}  // namespace

// One family per (pass, shape), so Google Benchmark fits each shape's growth on its own
// (the BigO row) and items_per_second shows the time per block at each n.
int main(int argc, char** argv) {
  struct Pass {
    const char* name;
    void (*run)(benchmark::State&);
  };
  for (Pass pass : {Pass{"PairByNearestMidpoint", BM_PairByNearestMidpoint}, Pass{"BuildPpFlows", BM_BuildPpFlows},
                    Pass{"BuildPpFlowsCrossRank", BM_BuildPpFlowsCrossRank}})
    for (int64_t shape : {sources_first, destinations_first, interleaved, all_equal, alternating}) {
      auto* b = benchmark::RegisterBenchmark((std::string(pass.name) + "/" + shape_name(shape)).c_str(), pass.run);
      for (int64_t n : {3000, 30000, 300000}) b->Args({shape, n});
      b->Unit(benchmark::kMillisecond)->Complexity(benchmark::oNLogN);
    }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
