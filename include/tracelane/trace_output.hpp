// Writing a compacted or merged trace: its text made and compressed in blocks of events
// concurrently, handed on in order as each block is ready, so that no whole-output buffer
// is ever held (issue 11). The text is the same for every number of threads; so are the
// compressed bytes.
//
//   head + block_0 + block_1 + ... + block_n-1 + tail (+ the restore member inside it)
//
// Each block is a run of events of about `member_bytes` of text, serialised and, for a .gz
// output, compressed into one gzip member of its own (RFC 1952 2.2: a reader decompresses
// every member, today's Perfetto included); a serial in-order stage hashes the text for
// the restore data and hands the bytes to the sink. The restore records (SPEC 9.12) are
// walked while the blocks are written; the tail, with them in it, is last.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tracelane/gzip.hpp"
#include "tracelane/restore.hpp"
#include "tracelane/trace.hpp"

namespace tracelane {

class Timings;

// How an output's bytes are made from its text.
struct OutputEncoding {
  bool gzip = false;
  int level = 6;  // libdeflate's scale, 0-12
  // Text bytes per block, one gzip member each; 0 (gzip only): one member for the whole
  // output, which then is made in memory first (for readers that stop after one member).
  size_t member_bytes = kGzipMemberBytes;
};

// Events written one after another, with `prefix` put in front of args.name where an
// event asks for it (merge's "PP rank <p> | "). Dropped events are not written.
struct EventRun {
  const std::vector<Event>* events = nullptr;
  std::string_view prefix;
};

// What a written trace is made of.
struct TraceText {
  const Trace* top = nullptr;  // whose top-level keys, around traceEvents
  std::vector<EventRun> runs;  // traceEvents, in order
  bool restore_data = false;
  // With restore data: one per source trace, first_output_index set (written_before()).
  std::vector<RestoreSource> sources;
};

// How many of `events` are written (not dropped): a RestoreSource's first_output_index is
// the sum of this over the runs before it.
size_t written_count(const std::vector<Event>& events);

// Hands the output's bytes to `sink` in order, piece by piece (a block's member at a time
// for .gz), and returns how many bytes it handed on. An exception from a block, the
// restore data or `sink` stops the rest and is rethrown: the caller's temporary output
// must then be removed. With `timings`, the CPU time the blocks spent serialising and
// compressing are phases there (their wall time is the caller's phase around this).
uint64_t write_trace_text(const TraceText& text, const OutputEncoding& encoding,
                          const std::function<void(std::string_view bytes)>& sink, Timings* timings = nullptr);

// The whole text, uncompressed, in memory (tests, and the one-member output).
std::string trace_text(const TraceText& text);

}  // namespace tracelane
