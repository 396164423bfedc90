// What two threads of the same work get on this machine, against one: the ceiling of
// `--jobs 2` over `--jobs 1` for the work that dominates a compaction. Each round times,
// on one thread and then on two at once (each thread on its own copy of the input, so the
// work per thread is the same), two kinds of work:
//
//   deflate  libdeflate level LEVEL over the input in 4 MiB pieces, as the output's gzip
//            members are made (trace_output.cpp)
//   copy     memcpy of the input into a buffer made before the round (memory bandwidth)
//
// and prints 2 x (one thread's time) / (two threads' time): 2.00x is two full cores. On a
// VM the two may share a physical core, a cache or memory bandwidth with other guests; a
// round that gives less says so for that moment (bench/README.md, "Two cores").
//
//   build/bench/two_cores FILE [MiB=256] [rounds=5] [level=1]   (FILE: text, e.g. a trace's JSON)
#include <libdeflate.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr size_t kPieceBytes = size_t(4) << 20;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Runs work(t) on `threads` threads at once and returns the wall seconds.
template <class Work>
double timed(int threads, const Work& work) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t) running.emplace_back(work, t);
  for (std::thread& thread : running) thread.join();
  return seconds_since(start);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: two_cores FILE [MiB=256] [rounds=5] [level=1]\n");
    return 2;
  }
  const size_t bytes = size_t(argc > 2 ? std::atoi(argv[2]) : 256) << 20;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 5;
  const int level = argc > 4 ? std::atoi(argv[4]) : 1;
  std::ifstream in(argv[1], std::ios::binary);
  std::string text(bytes, '\0');
  in.read(text.data(), std::streamsize(text.size()));
  text.resize(size_t(in.gcount()));
  if (text.size() < kPieceBytes) {
    std::fprintf(stderr, "two_cores: %s has less than 4 MiB\n", argv[1]);
    return 2;
  }
  // Each thread's own input and output, made (and written once) before any round.
  std::vector<std::string> inputs(2, text), outputs(2, std::string(text.size(), '\0'));
  auto deflate = [&](int t) {
    libdeflate_compressor* compressor = libdeflate_alloc_compressor(level);
    std::vector<char> member(libdeflate_gzip_compress_bound(compressor, kPieceBytes));
    for (size_t at = 0; at < inputs[t].size(); at += kPieceBytes) {
      const size_t n = std::min(kPieceBytes, inputs[t].size() - at);
      if (libdeflate_gzip_compress(compressor, inputs[t].data() + at, n, member.data(), member.size()) == 0)
        std::abort();
    }
    libdeflate_free_compressor(compressor);
  };
  auto copy = [&](int t) {
    for (int r = 0; r < 4; ++r) std::memcpy(outputs[t].data(), inputs[t].data(), inputs[t].size());
  };
  std::printf("%zu MiB a thread, level %d: 2 x one thread / two threads (2.00x is two full cores)\n", text.size() >> 20,
              level);
  for (int round = 0; round < rounds; ++round) {
    const double deflate_one = timed(1, deflate), deflate_two = timed(2, deflate);
    const double copy_one = timed(1, copy), copy_two = timed(2, copy);
    std::printf("round %d  deflate %.2fx (%.3f s, %.3f s)  copy %.2fx (%.3f s, %.3f s)\n", round + 1,
                2 * deflate_one / deflate_two, deflate_one, deflate_two, 2 * copy_one / copy_two, copy_one, copy_two);
  }
  return 0;
}
