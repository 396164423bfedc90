// Restore data (SPEC 9.12): what a compacted or merged output carries so that the original
// trace it was made from can be written back byte for byte (after decompression).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tracelane/trace.hpp"

namespace tracelane {

// The key, written as the last member of the top-level object
// "cuda_graph_stream_compaction": a JSON array with one base64 string per source trace.
inline constexpr const char* kRestoreKey = "tracelane_restore";

// One source trace of an output, as its events were written.
struct RestoreSource {
  const Trace* trace = nullptr;   // its events in the order they were written
  size_t first_output_index = 0;  // output position of trace->events' first written event
  std::string_view name_prefix;   // merge's args.name prefix ("" for compact)
  Ns offset_ns = 0;               // merge's clock shift of this trace
  int64_t global_rank = -1;       // -1 when not a rank of a merge
};

// Where the written events sit in `text`: [events_begin, events_end), the first event's
// '{' to the last event's '}'; both SIZE_MAX when no event was written.
struct WrittenEvents {
  size_t begin = SIZE_MAX, end = SIZE_MAX;
  size_t count = 0;  // events written
};

// The output's text outside its restore data, as the records describe it: `head` up to the
// first written event (the whole text when none was), `tail` after the last one, the
// whole text's `size` and XXH64, and the number of events written.
struct OutputFrame {
  std::string_view head, tail;
  uint64_t size = 0;
  uint64_t covered = 0;
  size_t events = 0;
};

// The restore data of an output written piece by piece: walk(k) reads only source k's
// trace (so the walks may run, one per thread, while the events are written); member()
// then makes the text that goes at restore_member_position() of the output, once the
// text around the events and its hash are known. member() gives up the walks' columns as
// it joins them: it is called once (a second call throws Error).
class RestoreData {
 public:
  explicit RestoreData(const std::vector<RestoreSource>& sources);
  ~RestoreData();
  RestoreData(const RestoreData&) = delete;
  RestoreData& operator=(const RestoreData&) = delete;
  size_t sources() const;
  void walk(size_t k);
  std::string member(const OutputFrame& frame);

 private:
  struct Encoders;
  std::unique_ptr<Encoders> encoders_;
};

// Where the restore member goes in an output's text (without it): the closing brace of
// the last "cuda_graph_stream_compaction" object. Throws Error when there is none.
size_t restore_member_position(std::string_view text);

// Adds the restore data to a written output. Throws Error naming the source when a
// trace's events do not tile its document (which would mean the parser and this encoder
// disagree).
void append_restore_data(std::string& text, WrittenEvents events, const std::vector<RestoreSource>& sources);

// What a restore record says about itself, read without rebuilding anything.
struct RestoreRecordInfo {
  int64_t global_rank = -1;
  uint64_t original_bytes = 0;
};

// The records of an output, in file order; empty when the output has no restore key.
// Throws Error("<source>: ...") when the key is there but a record cannot be read.
std::vector<RestoreRecordInfo> list_restore_records(std::string_view compacted, std::string_view source);

// Rebuilds the original of record `record` (an index into list_restore_records) from the
// whole compacted text. Never returns a wrong original: every way the output or the
// record may have changed is refused with Error("<source>: ...").
std::string restore_original(std::string compacted, const std::string& source, size_t record);
// The same original handed to `sink` in order, in pieces of a few MiB, as it is rebuilt, so
// that it is never whole in memory. Its length and checksums are known only at the end:
// what `sink` got is the original when this returns; when it throws, drop all of it.
void restore_original_to(std::string compacted, const std::string& source, size_t record,
                         const std::function<void(std::string_view piece)>& sink);

// Checksums kept in a record: CRC-32 (libdeflate) and XXH64, implemented here.
uint64_t xxhash64(std::string_view bytes, uint64_t seed = 0);
// The same hash over bytes given piece by piece: update() with each piece in order, then
// digest() equals xxhash64 of their concatenation.
class Xxhash64 {
 public:
  explicit Xxhash64(uint64_t seed = 0);
  void update(std::string_view bytes);
  uint64_t digest() const;

 private:
  uint64_t v_[4];
  uint64_t seed_, total_ = 0;
  char buffer_[32];
  size_t buffered_ = 0;
};

}  // namespace tracelane
