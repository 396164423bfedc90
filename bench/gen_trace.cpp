// tracelane_gen: writes synthetic Kineto (PyTorch profiler) traces shaped like the real
// CUDA-graph pipeline-parallel traces tracelane is made for, at any size, deterministically
// from a seed, for benchmarks.
//
// What one file holds (per profiler step, repeated until --size is reached):
//   - FSDP unshard: NCCL all-gather kernels on two overlapping streams plus copy-out
//     kernels, with FSDP::all_gather / nccl:_all_gather_base / PP:<s>UNSHARD annotations;
//   - a 1F1B pipeline schedule over --microbatches microbatches: every action
//     (PP:<s>RECV_F<m>, PP:<s>F<m>, PP:<s>SEND_F<m>, PP:<s>RECV_B<m>, PP:<s>B<m>,
//     PP:<s>SEND_B<m>) is a cudaGraphLaunch (cuda_runtime, ac2g flow start) whose kernels
//     replay on their own CUDA-graph streams (hundreds of stream ids over the file), carry
//     args.name = the PP annotation, overlap on side streams, and get one ac2g flow end
//     each; the annotation is also written as gpu_user_annotation X events projected onto
//     every stream the action used (as Kineto does), and as a CPU user_annotation;
//   - NCCL SendRecv kernels for the sends/receives, reduce-scatter, all-reduce (grad norm),
//     memcpy/memset and fused-AdamW kernels on the default stream 7, cudaStreamWaitEvent /
//     cudaEventRecord runtime events, cpu_ops;
//   - Kineto's top-level keys (schemaVersion, deviceProperties, distributedInfo with a
//     pg_config "mesh_pp" group of all --ranks ranks, baseTimeNanoseconds differing per rank
//     by a few microseconds, traceName after traceEvents) and its metadata events.
//
// The pipeline timeline is simulated identically for every rank (it depends on the seed
// only), so rank files of one iteration fit together: every SEND lies before its RECV ends
// after clock alignment, and `tracelane merge` pairs them.
//
// Streaming: events are formatted into a buffer that is written out whenever it exceeds
// --member-bytes (default 64 MiB), so memory stays bounded for any --size. libdeflate has
// no streaming API, so a .gz output is a sequence of gzip MEMBERS, one per buffer: a file
// up to --member-bytes uncompressed is one ordinary gzip member; a larger one is
// multi-member gzip, which gzip/zcat and tracelane read (RFC 1952 allows it) but Perfetto
// does not. The gzip trailer of a multi-member file gives only the last member's size.
//
// Usage:
//   tracelane_gen --size 50M --out trace.json.gz [--seed N] [--streams N] [--rank R --ranks P]
//   tracelane_gen --tree DIR --runs A --iterations B --ranks P [--size 4M] [--seed N]
//     writes DIR/<run>/profile_trace/iteration_<k>/rank<r>_trace.json.gz (torchtitan layout;
//     DIR plays the role of torchtitan's outputs/).
// Sizes take K/M/G suffixes (decimal: 50M = 50,000,000 bytes) and are approximate.

#include <libdeflate.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace {

// ---------------------------------------------------------------------------------------
// Deterministic randomness

uint64_t mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
uint64_t hash(std::initializer_list<uint64_t> parts) {
  uint64_t h = 0x1234567;
  for (uint64_t p : parts) h = mix(h ^ p);
  return h;
}
struct Rng {
  uint64_t state;
  explicit Rng(uint64_t seed) : state(mix(seed)) {}
  uint64_t next() { return state = mix(state); }
  int64_t range(int64_t lo, int64_t hi) { return lo + int64_t(next() % uint64_t(hi - lo + 1)); }  // inclusive
  double unit() { return double(next() >> 11) / double(1ULL << 53); }
};
// A value in [lo, hi] from a hash (for quantities every rank must agree on).
int64_t hrange(uint64_t h, int64_t lo, int64_t hi) { return lo + int64_t(h % uint64_t(hi - lo + 1)); }

// ---------------------------------------------------------------------------------------
// Output: buffer + gzip members

class Sink {
 public:
  Sink(FILE* file, bool gzip, int level, size_t member_bytes) : file_(file), gzip_(gzip), member_bytes_(member_bytes) {
    if (gzip_) compressor_ = libdeflate_alloc_compressor(level);
    buf.reserve(std::min<size_t>(member_bytes_ + (1 << 20), size_t(1) << 31));
  }
  ~Sink() {
    if (compressor_) libdeflate_free_compressor(compressor_);
  }
  std::string buf;
  uint64_t written() const { return flushed_ + buf.size(); }
  void maybe_flush() {
    if (buf.size() >= member_bytes_) flush();
  }
  void flush() {
    if (buf.empty()) return;
    flushed_ += buf.size();
    if (file_) {
      if (gzip_) {
        size_t bound = libdeflate_gzip_compress_bound(compressor_, buf.size());
        if (out_.size() < bound) out_.resize(bound);
        size_t n = libdeflate_gzip_compress(compressor_, buf.data(), buf.size(), out_.data(), out_.size());
        if (n == 0) die("gzip compression failed");
        write(out_.data(), n);
      } else {
        write(buf.data(), buf.size());
      }
    }
    buf.clear();
  }
  [[noreturn]] static void die(const char* what) {
    std::fprintf(stderr, "tracelane_gen: %s\n", what);
    std::exit(1);
  }

 private:
  void write(const char* data, size_t n) {
    if (std::fwrite(data, 1, n, file_) != n) die(std::strerror(errno));
  }
  FILE* file_;
  bool gzip_;
  size_t member_bytes_;
  uint64_t flushed_ = 0;
  libdeflate_compressor* compressor_ = nullptr;
  std::vector<char> out_;
};

// Formatting helpers (append to a std::string).
void put(std::string& s, std::string_view v) { s.append(v); }
void put_int(std::string& s, int64_t v) {
  char tmp[24];
  auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
  s.append(tmp, size_t(r.ptr - tmp));
}
// Kineto writes microseconds with three decimals (exact nanoseconds).
void put_us(std::string& s, int64_t ns) {
  if (ns < 0) {
    s.push_back('-');
    ns = -ns;
  }
  put_int(s, ns / 1000);
  int64_t frac = ns % 1000;
  char tmp[4] = {'.', char('0' + frac / 100), char('0' + frac / 10 % 10), char('0' + frac % 10)};
  s.append(tmp, 4);
}
void put_json_string(std::string& s, std::string_view v) {
  s.push_back('"');
  for (char c : v) {
    if (c == '"' || c == '\\') s.push_back('\\');
    s.push_back(c);
  }
  s.push_back('"');
}

// ---------------------------------------------------------------------------------------
// Kernel catalogue (names and launch args copied from real traces)

struct KernelKind {
  const char* name;
  const char* launch_args;  // "registers per thread" .. "est. achieved occupancy %"
};

const KernelKind kForward[] = {
    {"triton_per_fused__to_copy_add_mean_mul_pow_rsqrt_0",
     "\"registers per thread\": 30, \"shared memory\": 0, \"blocks per SM\": 62.060608, \"warps per SM\": 992.969727, "
     "\"grid\": [8192, 1, 1], \"block\": [512, 1, 1], \"est. achieved occupancy %\": 100"},
    {"nvjet_tst_256x128_64x4_2x1_v_bz_coopA_NTN",
     "\"registers per thread\": 168, \"shared memory\": 213504, \"blocks per SM\": 1.0, \"warps per SM\": 12.0, "
     "\"grid\": [132, 1, 1], \"block\": [384, 1, 1], \"est. achieved occupancy %\": 18"},
    {"triton_poi_fused__to_copy_add_cat_mul_stack_view_1",
     "\"registers per thread\": 26, \"shared memory\": 0, \"blocks per SM\": 248.242424, \"warps per SM\": "
     "1985.939392, \"grid\": [32768, 1, 1], \"block\": [256, 1, 1], \"est. achieved occupancy %\": 100"},
    {"void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, "
     "Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false, false, false, true, false, "
     "false>(pytorch_flash::Flash_fwd_params)",
     "\"registers per thread\": 255, \"shared memory\": 49152, \"blocks per SM\": 7.757576, \"warps per SM\": "
     "31.030304, \"grid\": [16, 32, 2], \"block\": [128, 1, 1], \"est. achieved occupancy %\": 6"},
    {"nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT",
     "\"registers per thread\": 168, \"shared memory\": 213504, \"blocks per SM\": 1.0, \"warps per SM\": 12.0, "
     "\"grid\": [132, 1, 1], \"block\": [384, 1, 1], \"est. achieved occupancy %\": 18"},
    {"triton_per_fused__to_copy_add_mean_mul_pow_rsqrt_2",
     "\"registers per thread\": 30, \"shared memory\": 0, \"blocks per SM\": 62.060608, \"warps per SM\": 992.969727, "
     "\"grid\": [8192, 1, 1], \"block\": [512, 1, 1], \"est. achieved occupancy %\": 100"},
    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_"
     "cublas",
     "\"registers per thread\": 168, \"shared memory\": 205824, \"blocks per SM\": 1.0, \"warps per SM\": 12.0, "
     "\"grid\": [2, 66, 1], \"block\": [384, 1, 1], \"est. achieved occupancy %\": 18"},
    {"triton_poi_fused_mul_silu_3",
     "\"registers per thread\": 22, \"shared memory\": 0, \"blocks per SM\": 1489.454545, \"warps per SM\": "
     "5957.818182, \"grid\": [196608, 1, 1], \"block\": [128, 1, 1], \"est. achieved occupancy %\": 100"},
    {"nvjet_tst_192x192_64x4_2x1_v_bz_coopB_NTN",
     "\"registers per thread\": 168, \"shared memory\": 221184, \"blocks per SM\": 1.0, \"warps per SM\": 12.0, "
     "\"grid\": [132, 1, 1], \"block\": [384, 1, 1], \"est. achieved occupancy %\": 18"},
    {"triton_poi_fused_add_4",
     "\"registers per thread\": 20, \"shared memory\": 0, \"blocks per SM\": 248.242424, \"warps per SM\": "
     "1985.939392, \"grid\": [32768, 1, 1], \"block\": [256, 1, 1], \"est. achieved occupancy %\": 100"},
};

const KernelKind kBackward[] = {
    {"nvjet_tst_192x192_64x4_2x1_v_bz_coopB_NNT",
     "\"registers per thread\": 168, \"shared memory\": 221184, \"blocks per SM\": 1.0, \"warps per SM\": 12.0, "
     "\"grid\": [132, 1, 1], \"block\": [384, 1, 1], \"est. achieved occupancy %\": 18"},
    {"nvjet_tst_256x128_64x4_1x2_h_bz_coopA_TNT",
     "\"registers per thread\": 168, \"shared memory\": 213504, \"blocks per SM\": 1.0, \"warps per SM\": 12.0, "
     "\"grid\": [132, 1, 1], \"block\": [384, 1, 1], \"est. achieved occupancy %\": 18"},
    {"triton_poi_fused_mul_silu_silu_backward_5",
     "\"registers per thread\": 24, \"shared memory\": 0, \"blocks per SM\": 1489.454545, \"warps per SM\": "
     "5957.818182, \"grid\": [196608, 1, 1], \"block\": [128, 1, 1], \"est. achieved occupancy %\": 100"},
    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_"
     "cublas",
     "\"registers per thread\": 168, \"shared memory\": 205824, \"blocks per SM\": 1.0, \"warps per SM\": 12.0, "
     "\"grid\": [2, 66, 1], \"block\": [384, 1, 1], \"est. achieved occupancy %\": 18"},
    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_"
     "cublas",
     "\"registers per thread\": 168, \"shared memory\": 205824, \"blocks per SM\": 1.0, \"warps per SM\": 12.0, "
     "\"grid\": [2, 66, 1], \"block\": [384, 1, 1], \"est. achieved occupancy %\": 18"},
    {"triton_red_fused__to_copy_add_div_mul_pow_sum_6",
     "\"registers per thread\": 40, \"shared memory\": 0, \"blocks per SM\": 62.060608, \"warps per SM\": 496.484848, "
     "\"grid\": [8192, 1, 1], \"block\": [256, 1, 1], \"est. achieved occupancy %\": 92"},
    {"triton_red_fused__to_copy_mul_sum_7",
     "\"registers per thread\": 32, \"shared memory\": 0, \"blocks per SM\": 7.757576, \"warps per SM\": 62.060608, "
     "\"grid\": [1024, 1, 1], \"block\": [256, 1, 1], \"est. achieved occupancy %\": 81"},
    {"void pytorch_flash::flash_bwd_dot_do_o_kernel<true, Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, "
     "false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 8, cutlass::bfloat16_t> > "
     ">(pytorch_flash::Flash_bwd_params)",
     "\"registers per thread\": 40, \"shared memory\": 0, \"blocks per SM\": 15.515152, \"warps per SM\": 124.121216, "
     "\"grid\": [32, 2, 32], \"block\": [256, 1, 1], \"est. achieved occupancy %\": 100"},
    {"void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, "
     "2, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 8, cutlass::bfloat16_t> >, false, false, "
     "false, false, false, true, false, false>(pytorch_flash::Flash_bwd_params)",
     "\"registers per thread\": 255, \"shared memory\": 98304, \"blocks per SM\": 3.878788, \"warps per SM\": "
     "31.030304, \"grid\": [8, 2, 32], \"block\": [256, 1, 1], \"est. achieved occupancy %\": 12"},
    {"void pytorch_flash::flash_bwd_convert_dq_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, "
     "cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 8, cutlass::bfloat16_t> > "
     ">(pytorch_flash::Flash_bwd_params, int)",
     "\"registers per thread\": 30, \"shared memory\": 0, \"blocks per SM\": 15.515152, \"warps per SM\": 62.060608, "
     "\"grid\": [16, 2, 32], \"block\": [128, 1, 1], \"est. achieved occupancy %\": 94"},
    {"triton_poi_fused__to_copy_cat_mul_8",
     "\"registers per thread\": 26, \"shared memory\": 0, \"blocks per SM\": 248.242424, \"warps per SM\": "
     "1985.939392, \"grid\": [32768, 1, 1], \"block\": [256, 1, 1], \"est. achieved occupancy %\": 100"},
    {"nvjet_tst_128x128_64x4_2x1_v_bz_coopB_TNT",
     "\"registers per thread\": 168, \"shared memory\": 196608, \"blocks per SM\": 1.0, \"warps per SM\": 12.0, "
     "\"grid\": [132, 1, 1], \"block\": [384, 1, 1], \"est. achieved occupancy %\": 18"},
};

const char* kNcclArgs =
    "\"registers per thread\": 96, \"shared memory\": 87568, \"blocks per SM\": 0.181818, \"warps per SM\": 2.909091, "
    "\"grid\": [24, 1, 1], \"block\": [512, 1, 1], \"est. achieved occupancy %\": 0";
const char* kSendRecvArgs =
    "\"registers per thread\": 96, \"shared memory\": 41744, \"blocks per SM\": 0.030303, \"warps per SM\": 0.606061, "
    "\"grid\": [4, 1, 1], \"block\": [640, 1, 1], \"est. achieved occupancy %\": 0";
const char* kSplitCopy =
    "void at::native::(anonymous "
    "namespace)::split_with_sizes_copy_out_contiguous_no_cast_kernel<c10::BFloat16>(char**, char*, long const*, long "
    "const*, long, long, long)";
const char* kSplitCopyArgs =
    "\"registers per thread\": 32, \"shared memory\": 0, \"blocks per SM\": 31.030304, \"warps per SM\": 124.121216, "
    "\"grid\": [4096, 1, 1], \"block\": [128, 1, 1], \"est. achieved occupancy %\": 100";
const char* kAdam =
    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
    "namespace)::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, "
    "4, (at::native::ADAM_MODE)1, false>, double*, double, double, double, double, double, bool, float*, "
    "float*>(at::native::(anonymous namespace)::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous "
    "namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, double*, double, double, double, "
    "double, double, bool, float*, float*)";
const char* kAdamArgs =
    "\"registers per thread\": 64, \"shared memory\": 0, \"blocks per SM\": 2.424242, \"warps per SM\": 38.78788, "
    "\"grid\": [320, 1, 1], \"block\": [512, 1, 1], \"est. achieved occupancy %\": 50";
const char* kNormKernel =
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::NormTwoOps<float, float, float>, "
    "unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::NormTwoOps<float, float, float>, unsigned int, "
    "float, 4>)";
const char* kNormArgs =
    "\"registers per thread\": 32, \"shared memory\": 16, \"blocks per SM\": 0.969697, \"warps per SM\": 15.515152, "
    "\"grid\": [128, 1, 1], \"block\": [512, 1, 1], \"est. achieved occupancy %\": 24";

// ---------------------------------------------------------------------------------------
// Configuration

struct Config {
  uint64_t size = 50'000'000;
  uint64_t seed = 1;
  int streams = 256;     // CUDA-graph stream ids spread over the file
  int rank = 0;          // global rank of the file
  int ranks = 4;         // PP degree (= world size here)
  int microbatches = 8;  // per step
  int kernels_f = 14;    // kernels per forward action graph (backward: 2x)
  int level = 6;         // gzip level of the generated file
  size_t member_bytes = size_t(64) << 20;
  std::string out;
  std::string tree;
  int runs = 2, iterations = 2;
  bool quiet = false;
};

// Stream ids: 7 default, 27/31 all-gather, 35 reduce-scatter, 39 all-reduce, 43 copy-out;
// CUDA-graph streams from 64 up.
constexpr int kDefaultStream = 7, kAgStream1 = 27, kAgStream2 = 31, kRsStream = 35, kArStream = 39, kCopyStream = 43,
              kGraphStreamBase = 64;

// Global rank that holds pipeline stage s: a rotation, so that PP order differs from
// global rank order and the merge has to read pg_config (as in real torchtitan layouts).
int global_rank_of_stage(int s, int P) { return P == 1 ? 0 : (s + 1) % P; }
int stage_of_global_rank(int g, int P) { return P == 1 ? 0 : (g + P - 1) % P; }

// ---------------------------------------------------------------------------------------
// The pipeline simulation (identical on every rank: depends on seed and step only)

enum Op { F = 0, B = 1 };

struct Span {
  int64_t start = -1, end = -1;  // global ns
};

struct StepPlan {
  int64_t t0 = 0;  // step start (global ns)
  int64_t unshard_end = 0;
  int64_t step_end = 0;  // global, max over stages (incl. tail)
  // [stage][op][mb]
  std::vector<std::vector<std::vector<Span>>> compute, recv, send;
  std::vector<std::vector<std::pair<Op, int>>> order;  // per stage
  std::vector<int64_t> free_at;                        // per stage: end of its last compute
};

struct Sim {
  const Config& cfg;
  int P, M;
  explicit Sim(const Config& c) : cfg(c), P(c.ranks), M(c.microbatches) {}

  int64_t dur_ns(int step, int s, Op op, int m) const {
    uint64_t h = hash({cfg.seed, 11, uint64_t(step), uint64_t(s), uint64_t(op), uint64_t(m)});
    int64_t base = op == F ? 1'900'000 : 3'800'000;
    return base + hrange(h, -base / 10, base / 10);
  }
  int64_t latency_ns(int step, int s, Op op, int m) const {
    return hrange(hash({cfg.seed, 12, uint64_t(step), uint64_t(s), uint64_t(op), uint64_t(m)}), 30'000, 140'000);
  }

  StepPlan plan(int step, int64_t t0) const {
    StepPlan p;
    p.t0 = t0;
    auto grid = [&] {
      return std::vector<std::vector<std::vector<Span>>>(P, std::vector<std::vector<Span>>(2, std::vector<Span>(M)));
    };
    p.compute = grid();
    p.recv = grid();
    p.send = grid();
    p.order.resize(P);
    for (int s = 0; s < P; ++s) {  // 1F1B
      int warmup = std::min(P - s - 1, M);
      for (int m = 0; m < warmup; ++m) p.order[s].push_back({F, m});
      for (int i = 0; i < M - warmup; ++i) {
        p.order[s].push_back({F, warmup + i});
        p.order[s].push_back({B, i});
      }
      for (int m = M - warmup; m < M; ++m) p.order[s].push_back({B, m});
    }
    p.unshard_end = t0 + 3 * 150'000 + 300'000;
    p.free_at.assign(P, p.unshard_end);
    std::vector<size_t> next(P, 0);
    for (bool progress = true; progress;) {
      progress = false;
      for (int s = 0; s < P; ++s) {
        while (next[s] < p.order[s].size()) {
          auto [op, m] = p.order[s][next[s]];
          int src = op == F ? s - 1 : s + 1;  // stage the input comes from
          bool has_recv = op == F ? s > 0 : s < P - 1;
          int64_t dep;
          if (has_recv) {
            if (p.compute[src][op][m].end < 0) break;
            dep = p.compute[src][op][m].end;
          } else {
            dep = op == B ? p.compute[s][F][m].end : p.free_at[s];
          }
          int64_t posted = p.free_at[s];
          int64_t start;
          if (has_recv) {
            int64_t arrival = dep + 2'000 + latency_ns(step, src, op, m);
            Span& r = p.recv[s][op][m];
            r.start = posted;
            r.end = std::max(posted + 8'000, arrival);
            start = r.end + 4'000;
          } else {
            start = std::max(posted, dep) + 3'000;
          }
          Span& c = p.compute[s][op][m];
          c.start = start;
          c.end = start + dur_ns(step, s, op, m);
          p.free_at[s] = c.end;
          ++next[s];
          progress = true;
        }
      }
    }
    // Sends: start just after the producing compute, end after the matching receive ends.
    for (int s = 0; s < P; ++s)
      for (int op = 0; op < 2; ++op) {
        int dst = op == F ? s + 1 : s - 1;
        if (dst < 0 || dst >= P) continue;
        for (int m = 0; m < M; ++m) {
          Span& snd = p.send[s][op][m];
          snd.start = p.compute[s][op][m].end + 2'000;
          snd.end = std::max(snd.start + 6'000, p.recv[dst][op][m].end + 1'000);
        }
      }
    int64_t end = 0;
    for (int s = 0; s < P; ++s) end = std::max(end, p.free_at[s] + kTailNs);
    for (int s = 0; s < P; ++s)
      for (int op = 0; op < 2; ++op)
        for (int m = 0; m < M; ++m) end = std::max(end, p.send[s][op][m].end);
    p.step_end = end + 150'000;
    return p;
  }
  static constexpr int64_t kTailNs = 2'600'000;  // reduce-scatter, all-reduce, optimizer
};

// ---------------------------------------------------------------------------------------
// One rank file

struct Annotation {
  std::string name;
  int tid;
  int64_t start, end;  // local ns
  int64_t external_id;
};

class RankWriter {
 public:
  RankWriter(const Config& cfg, Sink& sink, int global_rank)
      : cfg_(cfg),
        sim_(cfg),
        sink_(sink),
        s_(sink.buf),
        rank_(global_rank),
        stage_(stage_of_global_rank(global_rank, cfg.ranks)),
        gpu_pid_(global_rank % 8),
        cpu_pid_(1872713 + 17 * global_rank),
        rng_(hash({cfg.seed, 99, uint64_t(global_rank)})) {
    // Clock: the trace's ts = global - offset; baseTimeNanoseconds = common + offset.
    offset_ns_ = hrange(hash({cfg.seed, 5, uint64_t(global_rank)}), 0, 900) + 2'371 * global_rank;
    t_origin_ = 3'304'166'932'324'545 + int64_t(hash({cfg.seed, 6}) % 1'000'000'000ULL);
  }

  // Bytes one step of this rank takes (a dry run into a scratch buffer).
  static uint64_t step_bytes(const Config& cfg, int global_rank) {
    Sink scratch(nullptr, false, 0, size_t(1) << 40);
    RankWriter w(cfg, scratch, global_rank);
    StepPlan plan = w.sim_.plan(0, w.t_origin_ + 1'000'000);
    w.write_step(0, plan);
    return scratch.written();
  }

  void write_file(int steps) {
    write_header();
    int64_t t = t_origin_ + 900'000;
    for (int step = 0; step < steps; ++step) {
      StepPlan plan = sim_.plan(step, t);
      write_step(step, plan);
      t = plan.step_end;
      sink_.maybe_flush();
    }
    trace_end_ = t;
    write_metadata_and_footer();
    sink_.flush();
  }

 private:
  int64_t local(int64_t global_ns) const { return global_ns - offset_ns_; }

  // --- event writers ------------------------------------------------------------------
  void begin_x(const char* cat, std::string_view name, int64_t pid, int64_t tid, int64_t ts, int64_t dur) {
    put(s_, "{\"ph\": \"X\", \"cat\": \"");
    put(s_, cat);
    put(s_, "\", \"name\": ");
    put_json_string(s_, name);
    put(s_, ", \"pid\": ");
    put_int(s_, pid);
    put(s_, ", \"tid\": ");
    put_int(s_, tid);
    put(s_, ", \"ts\": ");
    put_us(s_, ts);
    put(s_, ", \"dur\": ");
    put_us(s_, dur);
    put(s_, ", \"args\": {");
  }
  void sep() { put(s_, ",\n"); }

  void user_annotation(std::string_view name, int64_t ts, int64_t dur, int64_t ext) {
    begin_x("user_annotation", name, cpu_pid_, cpu_pid_, ts, dur);
    put(s_, "\"External id\": ");
    put_int(s_, ext);
    put(s_, ", \"Record function id\": 0, \"Ev Idx\": ");
    put_int(s_, ev_idx_++);
    put(s_, "}}");
    sep();
  }
  void cpu_op(std::string_view name, int64_t ts, int64_t dur, int64_t ext, std::string_view extra = {}) {
    begin_x("cpu_op", name, cpu_pid_, cpu_pid_, ts, dur);
    put(s_, "\"External id\": ");
    put_int(s_, ext);
    put(s_, ", \"Record function id\": 0, \"Ev Idx\": ");
    put_int(s_, ev_idx_++);
    put(s_, extra);
    put(s_, "}}");
    sep();
  }
  // A cuda_runtime event; with a flow start when correlation >= 0 and flow is true.
  void runtime(const char* name, int cbid, int64_t ts, int64_t dur, int64_t ext, int64_t corr, bool flow) {
    begin_x("cuda_runtime", name, cpu_pid_, cpu_pid_, ts, dur);
    put(s_, "\"External id\": ");
    put_int(s_, ext);
    put(s_, ", \"cbid\": ");
    put_int(s_, cbid);
    put(s_, ", \"correlation\": ");
    put_int(s_, corr);
    put(s_, "}}");
    sep();
    if (flow) {
      put(s_, "{\"ph\": \"s\", \"id\": ");
      put_int(s_, corr);
      put(s_, ", \"pid\": ");
      put_int(s_, cpu_pid_);
      put(s_, ", \"tid\": ");
      put_int(s_, cpu_pid_);
      put(s_, ", \"ts\": ");
      put_us(s_, ts);
      put(s_, ", \"cat\": \"ac2g\", \"name\": \"ac2g\"}");
      sep();
    }
  }
  void flow_end(int stream, int64_t ts, int64_t corr) {
    put(s_, "{\"ph\": \"f\", \"id\": ");
    put_int(s_, corr);
    put(s_, ", \"pid\": ");
    put_int(s_, gpu_pid_);
    put(s_, ", \"tid\": ");
    put_int(s_, stream);
    put(s_, ", \"ts\": ");
    put_us(s_, ts);
    put(s_, ", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}");
    sep();
  }
  void gpu_common_args(int stream, int64_t ext, int64_t corr) {
    put(s_, "\"External id\": ");
    put_int(s_, ext);
    put(s_, ", \"queued\": 0, \"device\": ");
    put_int(s_, gpu_pid_);
    put(s_, ", \"context\": 1, \"stream\": ");
    put_int(s_, stream);
    put(s_, ", \"correlation\": ");
    put_int(s_, corr);
  }
  // A kernel; graph_id >= 0 marks a CUDA-graph kernel (graph ids and args.name).
  void kernel(std::string_view name, const char* launch_args, int stream, int64_t ts, int64_t dur, int64_t ext,
              int64_t corr, int64_t graph_id, int64_t node, std::string_view annotation, std::string_view extra = {}) {
    begin_x("kernel", name, gpu_pid_, stream, ts, dur);
    gpu_common_args(stream, ext, corr);
    put(s_, ", ");
    put(s_, launch_args);
    put(s_, extra);
    if (graph_id >= 0) {
      put(s_, ", \"graph id\": ");
      put_int(s_, graph_id);
      put(s_, ", \"graph node id\": ");
      put_int(s_, node);
    }
    if (!annotation.empty()) {
      put(s_, ", \"name\": ");
      put_json_string(s_, annotation);
    }
    put(s_, "}}");
    sep();
    flow_end(stream, ts, corr);
    ++kernels_;
  }
  void memop(bool memcpy, int stream, int64_t ts, int64_t dur, int64_t ext, int64_t corr, int64_t bytes,
             const char* name) {
    begin_x(memcpy ? "gpu_memcpy" : "gpu_memset", name, gpu_pid_, stream, ts, dur);
    gpu_common_args(stream, ext, corr);
    put(s_, ", \"bytes\": ");
    put_int(s_, bytes);
    put(s_, ", \"memory bandwidth (GB/s)\": ");
    double gbps = dur > 0 ? double(bytes) / double(dur) : 0.0;
    char tmp[32];
    int n = std::snprintf(tmp, sizeof tmp, "%.15g", gbps);
    s_.append(tmp, size_t(n));
    put(s_, "}}");
    sep();
    flow_end(stream, ts, corr);
  }
  std::string nccl_args(const char* collective, int64_t in, int64_t out, const char* dtype, bool pp_group) {
    std::string a = ", \"Collective name\": \"";
    a += collective;
    a += "\", \"In msg nelems\": " + std::to_string(in) + ", \"Out msg nelems\": " + std::to_string(out) +
         ", \"Group size\": " + std::to_string(pp_group ? cfg_.ranks : 1) + ", \"dtype\": \"" + dtype +
         "\", \"In split size\": \"[]\", \"Out split size\": \"[]\", \"Process Group Name\": \"" +
         (pp_group ? kPpPgName : kDpPgName) + "\", \"Process Group Description\": \"" +
         (pp_group ? "mesh_pp" : "mesh_dp") + "\", \"Process Group Ranks\": \"" +
         (pp_group ? pp_ranks_text() : "[" + std::to_string(rank_) + "]") + "\"";
    return a;
  }
  std::string pp_ranks_text() const {
    std::string t = "[";
    for (int s = 0; s < cfg_.ranks; ++s) {
      if (s) t += ", ";
      t += std::to_string(global_rank_of_stage(s, cfg_.ranks));
    }
    return t + "]";
  }
  void annotate(std::string name, int tid, int64_t start, int64_t end, int64_t ext) {
    annotations_.push_back({std::move(name), tid, start, end, ext});
  }
  void flush_annotations() {
    for (const Annotation& a : annotations_) {
      begin_x("gpu_user_annotation", a.name, gpu_pid_, a.tid, a.start, a.end - a.start);
      put(s_, "\"External id\": ");
      put_int(s_, a.external_id);
      put(s_, "}}");
      sep();
    }
    annotations_.clear();
  }
  int64_t cpu_lag() { return rng_.range(25'000, 160'000); }

  // --- a CUDA-graph action ------------------------------------------------------------
  // Streams of graph instance g: W + 1 consecutive ids from the pool (the last one is the
  // side stream whose kernels overlap the main chain).
  int graph_stream(int64_t g, int j) const { return kGraphStreamBase + int((g * 9 + j) % cfg_.streams); }

  // Compute action (F/B): memcpy on stream 7, then the graph's kernels.
  void compute_action(int step, Op op, int m, Span span_g) {
    std::string label = "PP:" + std::to_string(stage_) + (op == F ? "F" : "B") + std::to_string(m);
    int64_t start = local(span_g.start), end = local(span_g.end);
    int64_t launch = start - cpu_lag();
    int64_t ext = ext_++;
    user_annotation(label, launch - 9'000, 40'000, ext);
    // Activation copy on the default stream at the start of the action.
    int64_t mc_corr = corr_++, mc_dur = rng_.range(30'000, 50'000);
    cpu_op("aten::copy_", launch - 8'000, 20'000, ext_);
    runtime("cudaMemcpyAsync", 41, launch - 6'000, 15'512, ext_++, mc_corr, true);
    memop(true, kDefaultStream, start, mc_dur, ext_ - 1, mc_corr, 67108864, "Memcpy DtoD (Device -> Device)");
    annotate(label, kDefaultStream, start, start + mc_dur, ext);
    runtime("cudaStreamWaitEvent", 147, launch - 1'000, 4'442, ext, corr_++, false);
    int64_t corr = corr_++;
    int64_t graph_instance = int64_t(step) * (4 * cfg_.microbatches) + int64_t(op) * cfg_.microbatches + m;
    int64_t graph_id = 1 + int64_t(op) * cfg_.microbatches + m;
    runtime("cudaGraphLaunch", 311, launch, rng_.range(15'000, 30'000), ext, corr, true);
    runtime("cudaEventRecord", 135, launch + 32'000, 3'252, ext, corr_++, false);

    const int W = op == F ? 6 : 8;
    const int K = op == F ? cfg_.kernels_f : 2 * cfg_.kernels_f;
    const KernelKind* kinds = op == F ? kForward : kBackward;
    const int nkinds = op == F ? int(std::size(kForward)) : int(std::size(kBackward));
    int64_t t = start + mc_dur + 2'000;
    int64_t total = end - t;
    // Per-stream span of the kernels for the projected annotations.
    std::vector<Span> stream_span(W + 1);
    std::vector<int> streams(W + 1);
    for (int j = 0; j <= W; ++j) streams[j] = graph_stream(graph_instance, j);
    int64_t side_free = t;
    for (int i = 0; i < K; ++i) {
      int64_t remaining = end - t;
      int64_t share =
          i == K - 1 ? remaining : std::max<int64_t>(2'000, total / K + rng_.range(-total / (3 * K), total / (3 * K)));
      share = std::min(share, remaining);
      int64_t gap = std::min<int64_t>(rng_.range(600, 2'500), share / 4);
      int64_t ks = t + gap, kd = share - gap;
      int j = int(int64_t(i) * W / K);
      const KernelKind& kk = kinds[(i + m) % nkinds];
      kernel(kk.name, kk.launch_args, streams[j], ks, kd, ext, corr, graph_id, graph_id * 100000 + i, label);
      Span& sp = stream_span[j];
      if (sp.start < 0) sp.start = ks;
      sp.end = ks + kd;
      // Every third kernel has a concurrent helper on the side stream.
      if (i % 3 == 1 && kd > 20'000) {
        int64_t hs = std::max(side_free, ks + kd / 5), hd = kd / 3;
        const KernelKind& hk = kinds[(i + m + 3) % nkinds];
        kernel(hk.name, hk.launch_args, streams[W], hs, hd, ext, corr, graph_id, graph_id * 100000 + 5000 + i, label);
        Span& ss = stream_span[W];
        if (ss.start < 0) ss.start = hs;
        ss.end = hs + hd;
        side_free = hs + hd + 1'000;
      }
      t = ks + kd;
    }
    for (int j = 0; j <= W; ++j)
      if (stream_span[j].start >= 0) annotate(label, streams[j], stream_span[j].start, stream_span[j].end, ext);
  }

  // SEND/RECV action: one NCCL SendRecv kernel in its own graph on its own stream.
  void comm_action(int step, const char* what, Op op, int m, Span span_g, int slot) {
    std::string label = "PP:" + std::to_string(stage_) + what + std::to_string(m);
    int64_t start = local(span_g.start), end = local(span_g.end);
    int64_t launch = start - cpu_lag();
    int64_t ext = ext_++, corr = corr_++;
    int64_t graph_instance = int64_t(step) * (4 * cfg_.microbatches) + (2 + slot) * cfg_.microbatches + m;
    int64_t graph_id = 1 + (2 + slot + 2 * int64_t(op)) * cfg_.microbatches + m;
    int stream = graph_stream(graph_instance, 4);
    user_annotation(label, launch - 6'000, 30'000, ext);
    runtime("cudaGraphLaunch", 311, launch, rng_.range(12'000, 26'000), ext, corr, true);
    kernel("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", kSendRecvArgs, stream, start, end - start, ext,
           corr, graph_id, graph_id * 100000, label);
    annotate(label, stream, start, end, ext);
  }

  // A non-graph kernel launched with cudaLaunchKernel (+ its cpu_op).
  void launched_kernel(const char* op_name, std::string_view kname, const char* launch_args, int stream, int64_t ts,
                       int64_t dur, std::string_view extra = {}, std::string_view op_extra = {}) {
    int64_t launch = ts - cpu_lag();
    int64_t ext = ext_++, corr = corr_++;
    cpu_op(op_name, launch - 7'000, 16'723, ext, op_extra);
    runtime("cudaLaunchKernel", 211, launch, 4'909, ext, corr, true);
    kernel(kname, launch_args, stream, ts, dur, ext, corr, -1, 0, {}, extra);
  }

  void write_step(int step, const StepPlan& plan) {
    const int P = cfg_.ranks, M = cfg_.microbatches, s = stage_;
    int64_t t0 = local(plan.t0);
    int64_t step_ext = ext_++;
    user_annotation("ProfilerStep#" + std::to_string(40 + step), t0 - 80'000, local(plan.step_end) - t0, step_ext);
    // Zero the grads.
    {
      int64_t corr = corr_++;
      cpu_op("aten::zero_", t0 - 60'000, 21'169, ext_);
      runtime("cudaMemsetAsync", 51, t0 - 55'000, 9'411, ext_, corr, true);
      memop(false, kDefaultStream, t0 + 1'000, 2'149, ext_++, corr, 16384, "Memset (Device)");
    }
    // FSDP unshard: three all-gathers alternating between two overlapping streams.
    {
      std::string unshard = "PP:" + std::to_string(s) + "UNSHARD";
      int64_t ext = ext_++;
      user_annotation(unshard, t0 - 40'000, 400'000, ext);
      Span ag[2], cp;
      std::string ag_extra = nccl_args("allgather", 72704000, 72704000, "BFloat16", false);
      for (int i = 0; i < 3; ++i) {
        int stream = i % 2 ? kAgStream2 : kAgStream1;
        int64_t ks = t0 + 5'000 + i * 150'000, kd = rng_.range(240'000, 300'000);
        int64_t fsdp_ext = ext_++;
        user_annotation("FSDP::all_gather", ks - 70'000, 30'000, fsdp_ext);
        launched_kernel("record_param_comms", "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                        kNcclArgs, stream, ks, kd, ag_extra, ", \"Collective name\": \"allgather\"");
        annotate("FSDP::all_gather", stream, ks, ks + kd, fsdp_ext);
        annotate("nccl:_all_gather_base", stream, ks, ks + kd, ext_ - 1);
        Span& a = ag[i % 2];
        if (a.start < 0) a.start = ks;
        a.end = ks + kd;
        int64_t cs = ks + kd + 2'000, cd = rng_.range(40'000, 60'000);
        cs = std::max(cs, cp.end + 1'000);
        launched_kernel("fsdp::split_with_sizes_copy", kSplitCopy, kSplitCopyArgs, kCopyStream, cs, cd);
        annotate("FSDP::all_gather_copy_out", kCopyStream, cs, cs + cd, fsdp_ext);
        if (cp.start < 0) cp.start = cs;
        cp.end = cs + cd;
      }
      annotate(unshard, kAgStream1, ag[0].start, ag[0].end, ext);
      annotate(unshard, kAgStream2, ag[1].start, ag[1].end, ext);
      annotate(unshard, kCopyStream, cp.start, cp.end, ext);
    }
    // The 1F1B schedule of this stage.
    for (auto [op, m] : plan.order[s]) {
      bool has_recv = op == F ? s > 0 : s < P - 1;
      bool has_send = op == F ? s < P - 1 : s > 0;
      if (has_recv) comm_action(step, op == F ? "RECV_F" : "RECV_B", op, m, plan.recv[s][op][m], 0);
      compute_action(step, op, m, plan.compute[s][op][m]);
      if (has_send) comm_action(step, op == F ? "SEND_F" : "SEND_B", op, m, plan.send[s][op][m], 1);
      sink_.maybe_flush();
    }
    (void)M;
    // Tail: reduce-scatter (overlapping the last backward), grad-norm all-reduce, AdamW.
    int64_t last = local(plan.free_at[s]);
    {
      std::string rs_extra = nccl_args("reduce_scatter", 290816000, 72704000, "BFloat16", false);
      for (int i = 0; i < 3; ++i) {
        int64_t ks = last - 900'000 + i * 450'000, kd = rng_.range(380'000, 440'000);
        int64_t ext = ext_++;
        user_annotation("FSDP::post_backward_reduce", ks - 60'000, 25'000, ext);
        launched_kernel("record_param_comms",
                        "ncclDevKernel_ReduceScatter_RING_LL_Sum_bf16(ncclDevKernelArgsStorage<4096ul>)", kNcclArgs,
                        kRsStream, ks, kd, rs_extra, ", \"Collective name\": \"reduce_scatter\"");
        annotate("nccl:_reduce_scatter_base", kRsStream, ks, ks + kd, ext);
        annotate("FSDP::post_backward_reduce", kRsStream, ks, ks + kd, ext);
      }
      int64_t ns = last + 500'000;
      launched_kernel("aten::linalg_vector_norm", kNormKernel, kNormArgs, kDefaultStream, ns, 18'000);
      std::string ar_extra = nccl_args("allreduce", 1, 1, "Float", true);
      int64_t as = ns + 25'000, ad = rng_.range(600'000, 1'200'000);
      launched_kernel("record_param_comms",
                      "ncclDevKernel_AllReduce_RING_LL_Sum_float(ncclDevKernelArgsStorage<4096ul>)", kNcclArgs,
                      kArStream, as, ad, ar_extra, ", \"Collective name\": \"allreduce\"");
      annotate("nccl:all_reduce", kArStream, as, as + ad, ext_ - 1);
      int64_t os = as + ad + 10'000;
      for (int i = 0; i < 8; ++i) {
        launched_kernel("aten::_fused_adamw_", kAdam, kAdamArgs, kDefaultStream, os, 60'705);
        os += 62'000;
      }
      int64_t corr = corr_++;
      runtime("cudaMemcpyAsync", 41, os - 30'000, 12'000, ext_, corr, true);
      memop(true, kDefaultStream, os + 2'000, 1'800, ext_++, corr, 4, "Memcpy DtoH (Device -> Pinned)");
      runtime("cudaStreamSynchronize", 131, os - 15'000, 20'000, ext_, corr_++, false);
    }
    flush_annotations();
  }

  // --- file frame ---------------------------------------------------------------------
  static constexpr const char* kPpPgName = "1db14bce8e97010f43760ace76e2a4d87d5e0ecd";
  static constexpr const char* kDpPgName = "79b6da6f09ca489d6c51917fe6d51102ba404551";

  void write_header() {
    const int P = cfg_.ranks;
    std::string all = "[";
    for (int r = 0; r < P; ++r) all += (r ? ", " : "") + std::to_string(r);
    all += "]";
    put(s_, "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n");
    for (int d = 0; d < 8; ++d) {
      put(s_, "    {\"id\": ");
      put_int(s_, d);
      put(s_,
          ", \"name\": \"NVIDIA H100 80GB HBM3\", \"totalGlobalMem\": 85018279936, \"computeMajor\": 9, "
          "\"computeMinor\": 0, "
          "\"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": 2048, \"regsPerBlock\": 65536, \"warpSize\": "
          "32, "
          "\"sharedMemPerBlock\": 49152, \"numSms\": 132, \"regsPerMultiprocessor\": 65536, "
          "\"sharedMemPerBlockOptin\": 232448, "
          "\"sharedMemPerMultiprocessor\": 233472}");
      put(s_, d < 7 ? ",\n" : "\n");
    }
    put(s_, "  ],\n  \"cupti_version\": 24,\n  \"cuda_runtime_version\": 12080,\n  \"cuda_driver_version\": 12080,\n");
    put(s_, "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": ");
    put_int(s_, rank_);
    put(s_, ", \"world_size\": ");
    put_int(s_, P);
    put(s_,
        ", \"pg_count\": 4, \"pg_config\": [{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", \"backend_config\": "
        "\"cuda:nccl\", \"pg_size\": ");
    put_int(s_, P);
    put(s_, ", \"ranks\": " + all +
                "}, {\"pg_name\": \"1\", \"pg_desc\": \"undefined\", \"backend_config\": \"cpu:gloo,cuda:gloo\", "
                "\"pg_size\": ");
    put_int(s_, P);
    put(s_, ", \"ranks\": " + all + "}, {\"pg_name\": \"" + std::string(kPpPgName) +
                "\", \"pg_desc\": \"mesh_pp\", \"backend_config\": \"cuda:nccl\", \"pg_size\": ");
    put_int(s_, P);
    put(s_, ", \"ranks\": " + pp_ranks_text() + "}, {\"pg_name\": \"" + std::string(kDpPgName) +
                "\", \"pg_desc\": \"mesh_dp\", \"backend_config\": \"cuda:nccl\", \"pg_size\": 1, \"ranks\": [" +
                std::to_string(rank_) + "]}], \"nccl_version\": \"2.27.5\"},\n");
    put(s_, "  \"record_shapes\": 0,\n  \"trace_id\": \"");
    char id[40];
    std::snprintf(id, sizeof id, "%016" PRIX64 "%016" PRIX64, hash({cfg_.seed, 7, uint64_t(rank_)}),
                  hash({cfg_.seed, 8}));
    put(s_, id);
    put(s_, "\",\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": ");
    put_int(s_, 1777162491000000000LL + int64_t(hash({cfg_.seed, 9}) % 1'000'000'000ULL) + offset_ns_);
    put(s_, ",\n  \"traceEvents\": [\n");
    trace_start_ = local(t_origin_);
  }

  void write_metadata_and_footer() {
    int64_t ts = trace_start_;
    auto meta = [&](const char* name, std::string_view pid, int64_t tid, std::string_view args) {
      put(s_, "{\"name\": \"");
      put(s_, name);
      put(s_, "\", \"ph\": \"M\", \"ts\": ");
      put_us(s_, ts);
      put(s_, ", \"pid\": ");
      put(s_, pid);
      put(s_, ", \"tid\": ");
      put_int(s_, tid);
      put(s_, ", \"args\": {");
      put(s_, args);
      put(s_, "}}");
      sep();
    };
    std::string cpu = std::to_string(cpu_pid_);
    meta("process_name", cpu, 0, "\"name\": \"python3.12\"");
    meta("process_labels", cpu, 0, "\"labels\": \"CPU\"");
    meta("process_sort_index", cpu, 0, "\"sort_index\": " + cpu);
    for (int d = 0; d < 8; ++d) {
      std::string pid = std::to_string(d);
      meta("process_name", pid, 0, "\"name\": \"python3.12\"");
      meta("process_labels", pid, 0, "\"labels\": \"GPU " + pid + "\"");
      meta("process_sort_index", pid, 0, "\"sort_index\": " + std::to_string(5000000 + d));
    }
    std::string gpu = std::to_string(gpu_pid_);
    std::vector<int> streams = {kDefaultStream, kAgStream1, kAgStream2, kRsStream, kArStream, kCopyStream};
    for (int i = 0; i < cfg_.streams; ++i) streams.push_back(kGraphStreamBase + i);
    for (int st : streams) {
      meta("thread_name", gpu, st, "\"name\": \"stream " + std::to_string(st) + " \"");
      meta("thread_sort_index", gpu, st, "\"sort_index\": " + std::to_string(st));
    }
    meta("thread_name", cpu, cpu_pid_, "\"name\": \"thread " + cpu + " (pt_main_thread)\"");
    meta("thread_sort_index", cpu, cpu_pid_, "\"sort_index\": " + cpu);
    put(s_, "{\"ph\": \"X\", \"cat\": \"Trace\", \"ts\": ");
    put_us(s_, ts);
    put(s_, ", \"dur\": ");
    put_us(s_, local(trace_end_) - ts);
    put(s_,
        ", \"pid\": \"Spans\", \"tid\": \"PyTorch Profiler\", \"name\": \"PyTorch Profiler (0)\", \"args\": {\"Op "
        "count\": 0}}");
    sep();
    put(s_, "{\"name\": \"process_sort_index\", \"ph\": \"M\", \"ts\": ");
    put_us(s_, ts);
    put(s_, ", \"pid\": \"Spans\", \"tid\": 0, \"args\": {\"sort_index\": 536870912}}");
    sep();
    put(s_,
        "{\"name\": \"Iteration Start: PyTorch Profiler\", \"ph\": \"i\", \"s\": \"g\", \"pid\": \"Traces\", \"tid\": "
        "\"Trace PyTorch Profiler\", \"ts\": ");
    put_us(s_, ts);
    put(s_,
        "},\n{\"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\", \"pid\": \"\", \"tid\": \"\", \"ts\": ");
    put_us(s_, local(trace_end_) + 1'000);
    put(s_, "}\n  ],\n  \"traceName\": ");
    put_json_string(s_, trace_name_);
    put(s_, "\n}\n");
  }

 public:
  std::string trace_name_;
  uint64_t kernels_ = 0;

 private:
  const Config& cfg_;
  Sim sim_;
  Sink& sink_;
  std::string& s_;
  int rank_, stage_, gpu_pid_;
  int64_t cpu_pid_;
  Rng rng_;
  int64_t offset_ns_ = 0, t_origin_ = 0, trace_start_ = 0, trace_end_ = 0;
  int64_t ext_ = 30, corr_ = 8210, ev_idx_ = 0;
  std::vector<Annotation> annotations_;
};

// Steps needed for cfg.size (the same for every rank of a layout, so rank files line up).
int steps_for(const Config& cfg) {
  uint64_t per_step = 0;
  for (int s = 0; s < cfg.ranks; ++s) per_step += RankWriter::step_bytes(cfg, global_rank_of_stage(s, cfg.ranks));
  per_step /= uint64_t(cfg.ranks);
  uint64_t fixed = 6000 + uint64_t(cfg.streams) * 260;
  uint64_t body = cfg.size > fixed ? cfg.size - fixed : 0;
  return int(std::max<uint64_t>(1, (body + per_step / 2) / per_step));
}

void write_one(const Config& cfg, int global_rank, int steps, const std::string& path, const std::string& trace_name) {
  bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) {
    std::fprintf(stderr, "tracelane_gen: %s: %s\n", tmp.c_str(), std::strerror(errno));
    std::exit(1);
  }
  static std::vector<char> iobuf(size_t(4) << 20);
  std::setvbuf(f, iobuf.data(), _IOFBF, iobuf.size());
  uint64_t bytes = 0, kernels = 0;
  {
    Sink sink(f, gz, cfg.level, cfg.member_bytes);
    RankWriter w(cfg, sink, global_rank);
    w.trace_name_ = trace_name;
    w.write_file(steps);
    bytes = sink.written();
    kernels = w.kernels_;
  }
  if (std::fclose(f) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::fprintf(stderr, "tracelane_gen: %s: %s\n", path.c_str(), std::strerror(errno));
    std::exit(1);
  }
  if (!cfg.quiet)
    std::fprintf(stderr, "tracelane_gen: %s: rank %d, %d steps, %" PRIu64 " kernels, %" PRIu64 " bytes uncompressed\n",
                 path.c_str(), global_rank, steps, kernels, bytes);
}

bool parse_size(const char* text, uint64_t* out) {
  char* end = nullptr;
  double v = std::strtod(text, &end);
  if (end == text || v < 0) return false;
  double mult = 1;
  switch (*end) {
    case 'k':
    case 'K':
      mult = 1e3;
      ++end;
      break;
    case 'm':
    case 'M':
      mult = 1e6;
      ++end;
      break;
    case 'g':
    case 'G':
      mult = 1e9;
      ++end;
      break;
    default:
      break;
  }
  if (*end == 'B' || *end == 'b') ++end;
  if (*end) return false;
  *out = uint64_t(v * mult);
  return true;
}

const char* kUsage =
    "usage: tracelane_gen --out FILE [--size BYTES] [--seed N] [--streams N] [--rank R --ranks P]\n"
    "       tracelane_gen --tree DIR [--runs A] [--iterations B] [--ranks P] [--size BYTES] [--seed N]\n"
    "options: --microbatches M (8)  --kernels K (14 per forward action, 2K backward)\n"
    "         --level N (gzip level of .gz outputs, 6)  --member-bytes BYTES (64M: gzip member size)\n"
    "         --quiet\n"
    "BYTES takes K/M/G (decimal). FILE ending in .gz is gzip (multi-member above --member-bytes).\n";

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  bool ranks_given = false, size_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "tracelane_gen: %s needs a value\n%s", a.c_str(), kUsage);
        std::exit(2);
      }
      return argv[++i];
    };
    auto integer = [&](int lo, int hi) {
      const char* v = value();
      char* end = nullptr;
      long n = std::strtol(v, &end, 10);
      if (*end || n < lo || n > hi) {
        std::fprintf(stderr, "tracelane_gen: bad %s %s (%d..%d)\n", a.c_str(), v, lo, hi);
        std::exit(2);
      }
      return int(n);
    };
    if (a == "--size" || a == "--member-bytes") {
      uint64_t n = 0;
      const char* v = value();
      if (!parse_size(v, &n) || n == 0) {
        std::fprintf(stderr, "tracelane_gen: bad %s %s\n", a.c_str(), v);
        return 2;
      }
      if (a == "--size") {
        cfg.size = n;
        size_given = true;
      } else {
        cfg.member_bytes = size_t(n);
      }
    } else if (a == "--seed") {
      cfg.seed = std::strtoull(value(), nullptr, 10);
    } else if (a == "--streams") {
      cfg.streams = integer(16, 100000);
    } else if (a == "--rank") {
      cfg.rank = integer(0, 1 << 20);
    } else if (a == "--ranks") {
      cfg.ranks = integer(1, 1024);
      ranks_given = true;
    } else if (a == "--microbatches") {
      cfg.microbatches = integer(1, 1024);
    } else if (a == "--kernels") {
      cfg.kernels_f = integer(2, 10000);
    } else if (a == "--level") {
      cfg.level = integer(0, 12);
    } else if (a == "--out" || a == "-o") {
      cfg.out = value();
    } else if (a == "--tree") {
      cfg.tree = value();
    } else if (a == "--runs") {
      cfg.runs = integer(1, 100000);
    } else if (a == "--iterations") {
      cfg.iterations = integer(1, 100000);
    } else if (a == "--quiet") {
      cfg.quiet = true;
    } else if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else {
      std::fprintf(stderr, "tracelane_gen: unknown option %s\n%s", a.c_str(), kUsage);
      return 2;
    }
  }
  if (cfg.out.empty() == cfg.tree.empty()) {
    std::fprintf(stderr, "tracelane_gen: give exactly one of --out and --tree\n%s", kUsage);
    return 2;
  }
  if (!cfg.out.empty()) {
    if (!ranks_given && cfg.rank >= cfg.ranks) cfg.ranks = cfg.rank + 1;
    if (cfg.rank >= cfg.ranks) {
      std::fprintf(stderr, "tracelane_gen: --rank %d is not below --ranks %d\n", cfg.rank, cfg.ranks);
      return 2;
    }
    int steps = steps_for(cfg);
    std::string name = std::filesystem::path(cfg.out).filename().string();
    if (name.size() > 3 && name.compare(name.size() - 3, 3, ".gz") == 0) name.resize(name.size() - 3);
    write_one(cfg, cfg.rank, steps, cfg.out, name);
    return 0;
  }
  // Outputs tree: DIR/<run>/profile_trace/iteration_<k>/rank<r>_trace.json.gz.
  if (!ranks_given) cfg.ranks = 4;
  if (!size_given) cfg.size = 4'000'000;  // default per file in a tree
  for (int run = 0; run < cfg.runs; ++run) {
    char run_name[64];
    std::snprintf(run_name, sizeof run_name, "llama3_pp%d_run%d", cfg.ranks, run);
    for (int it = 0; it < cfg.iterations; ++it) {
      Config c = cfg;
      c.seed = hash({cfg.seed, 1000, uint64_t(run), uint64_t(it)}) & 0xffffffffffffULL;
      int steps = steps_for(c);
      int iteration = 10 * (it + 1);
      std::filesystem::path dir =
          std::filesystem::path(cfg.tree) / run_name / "profile_trace" / ("iteration_" + std::to_string(iteration));
      std::error_code ec;
      std::filesystem::create_directories(dir, ec);
      if (ec) {
        std::fprintf(stderr, "tracelane_gen: %s: %s\n", dir.c_str(), ec.message().c_str());
        return 1;
      }
      for (int r = 0; r < cfg.ranks; ++r) {
        std::string file = "rank" + std::to_string(r) + "_trace.json.gz";
        std::string trace_name = std::string("outputs/") + run_name + "/profile_trace/iteration_" +
                                 std::to_string(iteration) + "/rank" + std::to_string(r) + "_trace.json";
        write_one(c, r, steps, (dir / file).string(), trace_name);
      }
    }
  }
  return 0;
}
