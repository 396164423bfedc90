#include "tracelane/trace_output.hpp"

#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <optional>

#include "event_writer.hpp"
#include "free_pages.hpp"
#include "in_order_pipeline.hpp"
#include "tracelane/timings.hpp"
#include "tsan_handoff.hpp"

namespace tracelane {
namespace {

// Up to this many threads, the restore records' walks run after the blocks (write_isolated).
constexpr int kMostThreadsToWalkAfter = 2;

// A block of events: from (run, index) `begin` up to `end`, the events written in it,
// and whether an event was written before it (its first one then follows ",\n").
struct Position {
  size_t run = 0, index = 0;
};
struct Block {
  Position begin, end;
  size_t written = 0;
  bool after_an_event = false;
  size_t bound = 0;  // at least the block's text (without the head)
};

// Cuts the runs into blocks of about `block_bytes` of text each (by written_size_bound,
// so a block's text never outgrows what it reserves), at least one block.
std::vector<Block> plan_blocks(const TraceText& text, size_t block_bytes) {
  std::vector<Block> blocks(1);
  size_t written_before = 0;
  for (size_t r = 0; r < text.runs.size(); ++r) {
    const std::vector<Event>& events = *text.runs[r].events;
    size_t prefix = text.runs[r].prefix.size();
    for (size_t i = 0; i < events.size(); ++i) {
      const Event& event = events[i];
      if (event.dropped) continue;
      if (blocks.back().bound >= block_bytes) {
        blocks.back().end = Position{r, i};
        Block next;
        next.begin = Position{r, i};
        next.after_an_event = written_before > 0;
        blocks.push_back(next);
      }
      blocks.back().bound += written_size_bound(event, prefix) + 4;  // + ",\n  "
      ++blocks.back().written;
      ++written_before;
    }
  }
  blocks.back().end = Position{text.runs.size(), 0};
  return blocks;
}

// The block's events as written, after `out`'s bytes.
void write_block(std::string& out, const TraceText& text, const Block& block) {
  bool first = !block.after_an_event;
  for (size_t r = block.begin.run; r < text.runs.size() && r <= block.end.run; ++r) {
    const std::vector<Event>& events = *text.runs[r].events;
    size_t from = r == block.begin.run ? block.begin.index : 0;
    size_t to = r == block.end.run ? block.end.index : events.size();
    for (size_t i = from; i < to; ++i) {
      const Event& event = events[i];
      if (event.dropped) continue;
      out += first ? "  " : ",\n  ";
      first = false;
      append_event(out, event, text.runs[r].prefix);
    }
  }
}

// The text around the events: everything before the first event's indentation, and from
// the newline after the last event on (write_trace_object's own text).
struct Frame {
  std::string head, tail;
};
Frame frame_of(const Trace& top) {
  std::string text;
  text.reserve(top_level_size_bound(top));
  size_t events_at = 0;
  write_trace_object(text, top, {}, [&](std::string& out) { events_at = out.size(); });
  return Frame{text.substr(0, events_at), text.substr(events_at)};
}

double thread_cpu_now() {
  timespec t{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0) return 0;
  return double(t.tv_sec) + double(t.tv_nsec) / 1e9;
}

// Adds the seconds since `start` to `total`, a sum of thread CPU time over many threads.
void add_seconds(std::atomic<double>& total, double start) {
  double spent = thread_cpu_now() - start;
  double seen = total.load(std::memory_order_relaxed);
  while (!total.compare_exchange_weak(seen, seen + spent, std::memory_order_relaxed)) {
  }
}

// What the pipeline's stages hand on: a block's text and, for .gz, its member.
struct Piece {
  std::string text, member;
};

// The pieces handed on, emptied for the blocks still to make: no more than the pipeline
// holds at once (in_order_pipeline). A fresh ~4 MiB text a block cost its pages' faults,
// and at --jobs 2, where a piece is made on one thread and freed on the other, the
// allocator returned them to the kernel most times (gen600: 33-44 thousand page faults
// against 11 thousand at --jobs 1).
class PiecePool {
 public:
  Piece take() {
    std::lock_guard lock(mutex_);
    if (free_.empty()) return {};
    Piece piece = std::move(free_.back());
    free_.pop_back();
    return piece;
  }
  void give_back(Piece piece) {
    piece.text.clear();
    piece.member.clear();
    std::lock_guard lock(mutex_);
    free_.push_back(std::move(piece));
  }

 private:
  std::mutex mutex_;
  std::vector<Piece> free_;
};

// Streams head + blocks (each serialised and, when `compress`, compressed concurrently,
// but for the last block, whose text goes with the tail), in order, to `put(k, piece)`;
// returns the number of events written.
size_t stream_blocks(const TraceText& text, const std::string& head, const std::vector<Block>& blocks,
                     const OutputEncoding& encoding, bool compress, const std::function<void(size_t, Piece&)>& put,
                     std::atomic<double>& serialise_cpu, std::atomic<double>& compress_cpu) {
  std::optional<tbb::enumerable_thread_specific<MemberCompressor>> compressors;
  if (compress) compressors.emplace([level = encoding.level] { return MemberCompressor(level); });
  // At most two pieces a thread are in flight (in_order_pipeline): ~5 MiB each, never more
  // than the whole text the writer held before streaming (what the sweep's memory budget
  // still counts, memory_budget.hpp).
  std::vector<Piece> pieces(blocks.size());
  PiecePool pool;
  // Only with more than one thread: on one, the allocator already gives a freed piece's
  // memory to the next, and the pool held 2-5 MB more at the write's peak (mi300 at
  // --jobs 1: 92-95 MB against 89-91).
  const bool reuse = tbb::this_task_arena::max_concurrency() > 1;
  in_order_pipeline(
      blocks.size(),
      [&](size_t k) {
        double start = thread_cpu_now();
        Piece& piece = pieces[k];
        piece = pool.take();
        piece.text.reserve(blocks[k].bound + (k == 0 ? head.size() : 0));
        if (k == 0) piece.text = head;
        write_block(piece.text, text, blocks[k]);
        add_seconds(serialise_cpu, start);
        if (compress && k + 1 < blocks.size()) {
          start = thread_cpu_now();
          compressors->local().compress_into(piece.text, piece.member);
          add_seconds(compress_cpu, start);
        }
      },
      [&](size_t k) {
        Piece piece = std::move(pieces[k]);
        put(k, piece);
        if (reuse) pool.give_back(std::move(piece));
      });
  size_t written = 0;
  for (const Block& block : blocks) written += block.written;
  return written;
}

// Whether the restore member goes into the tail: its key's last occurrence in the text
// is there (restore_member_position's rfind). Otherwise (a trace whose top level has
// "cuda_graph_stream_compaction" before traceEvents) the member goes before the events,
// and the text is made whole first.
bool restore_member_in_tail(const std::string& tail) {
  return tail.find("\"cuda_graph_stream_compaction\": {") != std::string::npos;
}

}  // namespace

size_t written_count(const std::vector<Event>& events) {
  size_t n = 0;
  for (const Event& event : events) n += event.dropped ? 0 : 1;
  return n;
}

std::string trace_text(const TraceText& text) {
  Frame frame = frame_of(*text.top);
  std::vector<Block> blocks = plan_blocks(text, kGzipMemberBytes);
  size_t bound = frame.head.size() + frame.tail.size();
  for (const Block& block : blocks) bound += block.bound;
  if (text.restore_data) bound += bound / 16 + 4096;  // a small fraction (docs/restore.md)
  std::string out;
  out.reserve(bound);  // pages not written cost no memory; never copied as it grows
  std::atomic<double> unused{0};
  size_t written = stream_blocks(
      text, frame.head, blocks, OutputEncoding{}, false, [&](size_t, Piece& piece) { out += piece.text; }, unused,
      unused);
  WrittenEvents events;
  if (written > 0) {
    events.begin = frame.head.size() + 2;
    events.end = out.size();
  }
  events.count = written;
  out += frame.tail;
  if (text.restore_data) append_restore_data(out, events, text.sources);
  return out;
}

namespace {

// An output made whole in memory first: one gzip member, or restore data before the events.
void write_whole(const TraceText& text, const OutputEncoding& encoding,
                 const std::function<void(std::string_view bytes)>& hand_on) {
  std::string whole = trace_text(text);
  if (!encoding.gzip)
    hand_on(whole);
  else if (encoding.member_bytes == 0)
    hand_on(gzip_compress(whole, encoding.level));
  else
    gzip_compress_members(whole, encoding.level, encoding.member_bytes, hand_on);
}

// Puts the restore data's member into the output's `tail`: it covers the output written
// around the events (`written` of them, `text_size` bytes with the tail, whose XXH64 is
// `covered`).
void insert_restore_member(std::string& tail, const std::string& frame_head, size_t written, uint64_t text_size,
                           uint64_t covered, RestoreData& restore) {
  std::string head = frame_head + "  ";  // the output up to the first event's '{'
  OutputFrame around;
  around.head = written > 0 ? std::string_view(head) : std::string_view();
  around.tail = tail;
  around.size = text_size;
  around.covered = covered;
  around.events = written;
  std::string whole_when_empty;
  if (written == 0) {  // no event: the head is the whole text and the tail empty
    whole_when_empty = frame_head + tail;
    around.head = whole_when_empty;
    around.tail = {};
  }
  tail.insert(restore_member_position(tail), restore.member(around));
}

uint64_t write_isolated(const TraceText& text, const OutputEncoding& encoding,
                        const std::function<void(std::string_view bytes)>& sink, Timings* timings) {
  uint64_t handed = 0;
  auto hand_on = [&](std::string_view bytes) {
    sink(bytes);
    handed += bytes.size();
  };
  Frame frame = frame_of(*text.top);
  bool one_member = encoding.gzip && encoding.member_bytes == 0;
  if (one_member || (text.restore_data && !restore_member_in_tail(frame.tail))) {
    write_whole(text, encoding, hand_on);
    return handed;
  }
  const size_t block_bytes = encoding.member_bytes ? encoding.member_bytes : kGzipMemberBytes;
  std::vector<Block> blocks = plan_blocks(text, block_bytes);
  // What the compaction freed goes back to the kernel before the blocks are made, which
  // other threads allocate (gen600 at --jobs 2: 15 MiB less under the stream).
  give_back_free_pages();

  // The restore records' walks read only the source traces. With more than
  // kMostThreadsToWalkAfter threads they run beside the blocks, on threads the blocks leave
  // idle. With fewer, a walk beside them takes a compressing thread's core for as long, and
  // holds its columns through the whole stream: they run once the blocks are out (gen600
  // at --jobs 2: the peak 859-866 -> 853-860 MB, the same wall). Their hand-offs, for TSan
  // (tsan_handoff.hpp): this thread -> each walk -> back; the walks are made before it,
  // and outlive the task group, which holds only a reference.
  std::vector<char> walked(text.restore_data ? text.sources.size() : 0);
  std::optional<RestoreData> restore;
  auto walk = [&](size_t k) {
    tsan_acquire(&tsan_task_start);
    restore->walk(k);
    tsan_release(&walked[k]);
  };
  auto walk_all = [&] {
    tsan_acquire(&tsan_task_start);
    tbb::parallel_for(size_t(0), restore->sources(), walk);
  };
  tbb::task_group walks;
  struct WaitOnExit {  // the walks read what the caller owns: never leave them running
    tbb::task_group& walks;
    ~WaitOnExit() {
      try {
        walks.wait();
      } catch (...) {  // the exception that left already says what failed
      }
    }
  } wait_on_exit{walks};
  const bool walk_beside = tbb::this_task_arena::max_concurrency() > kMostThreadsToWalkAfter;
  if (text.restore_data) {
    restore.emplace(text.sources);
    tsan_release(&tsan_task_start);
    if (walk_beside) walks.run(std::ref(walk_all));
  }
  Xxhash64 covered;
  uint64_t text_size = 0;
  std::atomic<double> serialise_cpu{0}, compress_cpu{0};
  // The last block's text goes out with the tail, in the same member(s): an output smaller
  // than a block is one gzip member, as it always was.
  std::string last;
  size_t written = stream_blocks(
      text, frame.head, blocks, encoding, encoding.gzip,
      [&](size_t k, Piece& piece) {
        covered.update(piece.text);
        text_size += piece.text.size();
        if (k + 1 == blocks.size())
          last = std::move(piece.text);
        else
          hand_on(encoding.gzip ? piece.member : piece.text);
      },
      serialise_cpu, compress_cpu);
  std::string tail = std::move(frame.tail);
  covered.update(tail);
  text_size += tail.size();
  if (restore) {
    Timings::Scope scope(timings, "restore data");  // what is left of it once the blocks are out
    if (walk_beside)
      walks.wait();
    else
      walk_all();
    for (const char& walked_one : walked) tsan_acquire(&walked_one);
    insert_restore_member(tail, frame.head, written, text_size, covered.digest(), *restore);
  }
  last += tail;
  tail = std::string();
  if (!encoding.gzip) {
    hand_on(last);
  } else {
    double start = thread_cpu_now();
    gzip_compress_members(last, encoding.level, block_bytes, hand_on);
    add_seconds(compress_cpu, start);
  }
  if (timings) {
    timings->add_cpu("serialise (blocks)", serialise_cpu.load());
    if (encoding.gzip) timings->add_cpu("compress (blocks)", compress_cpu.load());
  }
  return handed;
}

}  // namespace

uint64_t write_trace_text(const TraceText& text, const OutputEncoding& encoding,
                          const std::function<void(std::string_view bytes)>& sink, Timings* timings) {
  // Isolated: while it waits for its blocks, the calling thread takes only this output's
  // work, never another file's job from a sweep's graph, which would hold this output
  // (its temporary, its trace in memory) up for a whole file.
  return tbb::this_task_arena::isolate([&] { return write_isolated(text, encoding, sink, timings); });
}

}  // namespace tracelane
