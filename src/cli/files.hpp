// File-system side of the command line: reading traces, naming outputs, finding rank
// files, and writing outputs so that no half-written file is ever visible.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <boost/filesystem.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tracelane/gzip.hpp"
#include "tracelane/trace.hpp"

namespace tracelane::cli {

namespace fs = boost::filesystem;

// What identifies the contents of a file we read: "newer than" is not "made from", so an
// output records the identity of every input it was made from (kInputsAttribute).
struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  uint64_t size = 0;
  int64_t mtime_s = 0;
  long mtime_ns = 0;
  // Not part of the identity (a chmod changes no byte): the permission bits, so that an
  // output is never more readable than what it was made from.
  mode_t mode = 0;
  bool operator==(const FileIdentity& other) const {
    return device == other.device && inode == other.inode && size == other.size && mtime_s == other.mtime_s &&
           mtime_ns == other.mtime_ns;
  }
};
FileIdentity identity_of(const struct stat& st);

// Thrown when a file's identity (size, mtime) changed between the start and the end of
// reading it: a writer was at work, so the bytes read may be a mix of two versions.
class InputChanged : public Error {
 public:
  using Error::Error;
};
struct ReadOptions {
  // Refuse anything but a regular file (a FIFO planted under a rank name must not hang us;
  // it is opened non-blocking and refused).
  bool regular_only = false;
  // LargerThanAdmitted (gzip.hpp) beyond this many bytes, the decompressed size for gzip:
  // no more than that is ever held.
  uint64_t max_bytes = UINT64_MAX;
  // O_NOFOLLOW: the name was a regular file when it was found; a symlink swapped in since
  // is refused, not followed.
  bool no_follow = false;
};

// Reads a whole file. With `identity`, it is the identity of the file read (taken from the
// open descriptor, before and after reading; InputChanged when they differ). A regular
// file is always checked so; anything else (a pipe) has no identity and `identity` stays
// default.
std::string read_file(const fs::path& path, FileIdentity* identity = nullptr, const ReadOptions& options = {});
// A file that could not be opened, examined, read, written or moved into place, with the
// system's reason ("<path>: cannot open: No such file or directory"). The command line
// treats it as any other failure; the Python module raises it as an OSError.
class FileError : public Error {
 public:
  using Error::Error;
};
// A usage error found once the command line is parsed (exit status 2): a value out of range,
// a choice left to make ("name one with --rank"), a directory with too few rank files.
class UsageError : public Error {
 public:
  using Error::Error;
};
// A usage error found on the file system (exit status 2 wherever the README documents one
// for usage errors): an output path the guard refuses.
class OutputRefused : public Error {
 public:
  using Error::Error;
};
// The output exists and --overwrite was not given: seen by the guard, or appearing
// between the guard's check and write_atomically's link() (another process won the race);
// without --overwrite it is never replaced. Also a usage error.
class OutputExists : public OutputRefused {
 public:
  using OutputRefused::OutputRefused;
};

// The one guard every command that writes a file calls before it reads any input. Throws
// OutputRefused ("<output>: reason") when `output`
//  - names a directory (an existing one, or a path ending in '/', '.' or '..'),
//  - is in a directory that does not exist (or is not a directory),
//  - is, links followed, the same file (device and inode) as any of `inputs`, or names
//    the same directory entry as one of them (same directory, same name),
//  - has a name tracelane reads as an input (rank<N>_trace.json[.gz]): writing it would
//    add a rank to the directory, and every later merge or sweep of it would read it,
//  - exists and `overwrite` is false.
// Checking early is for the user's sake (a usage error after reading 1 GiB is late); the
// final word on "exists" is write_atomically's atomic link().
// `RankName::allowed` is for `restore` alone: what it writes is an original, and giving
// it back under its rank<N>_trace name is the point.
enum class RankName { refused, allowed };
void guard_output(const fs::path& output, const std::vector<fs::path>& inputs, bool overwrite,
                  RankName rank_name = RankName::refused);

// Without -o, an output is named after its input and put beside it; that is only right for
// a regular file. Throws OutputRefused ("<input>: not a regular file ...: give the output
// with -o") when `input` exists and, links followed, is anything else: `/dev/stdin`, a
// pipe or a device would otherwise get a file created beside it (in /dev, as root).
void require_output_option_unless_regular(const fs::path& input);

// One error or warning line on stderr, through printable() (Backslash::keep): names read
// from a shared tree may hold terminal escape sequences or invalid UTF-8. The line is one
// line: an embedded newline is written \x0a.
void print_error(std::string_view line);

// Reads and, when the bytes start with the gzip magic, decompresses. `crc32`, when given,
// gets the text's CRC-32 when the file is gzip (from its trailers: gunzip).
std::string read_trace_bytes(const fs::path& path, FileIdentity* identity = nullptr, const ReadOptions& options = {},
                             std::optional<uint32_t>* crc32 = nullptr);
// The same into a TextBuffer (gunzip_text): for the document a trace is parsed from.
TextBuffer read_trace_text(const fs::path& path, FileIdentity* identity = nullptr, const ReadOptions& options = {},
                           std::optional<uint32_t>* crc32 = nullptr);

fs::path default_compact_output(const fs::path& input);
inline const char* kMergedName = "pp_traces_merged_compacted.json.gz";

bool is_rank_trace_name(const std::string& filename, long long* rank = nullptr);
bool is_our_output_name(const std::string& filename);
// rank<N>_trace.json[.gz] files of a directory (or of the directory of one such file),
// sorted by N. Throws Error when fewer than two.
std::vector<fs::path> find_rank_files(const fs::path& dir_or_file);

// Writes `bytes` to a temporary file beside `path`, then renames it into place. Without
// `overwrite`, an existing `path` is never replaced (checked atomically; OutputExists).
// Throws Error.
// A non-empty `record` is stored with the file as the extended attribute kRecordAttribute,
// set before the rename, so the file never appears without it; where the file system has
// no user extended attributes, the file is written without it.
// Non-empty `inputs` (name, identity as read) are stored the same way as kInputsAttribute
// (format_inputs), so a later sweep can tell whether the output was made from the inputs
// it now sees.
// A non-empty `figures` (figures_record()) is stored as kFiguresAttribute, last and best
// effort: where the file system has no room left for it beside the other two (ext4 gives
// all of an inode's attributes about 4 KiB), the file is written without it.
struct NamedIdentity {
  std::string name;  // the input's file name (rank<N>_trace.json[.gz])
  FileIdentity identity;
  // Where it was read: AtomicOutput::commit checks, under the output directory's lock,
  // that the file there is still the one read before it puts the output in place (empty,
  // or no identity: not checked).
  fs::path path = {};
};
// `recipe` (output_recipe) goes into that record too.
void write_atomically(const fs::path& path, const std::string& bytes, bool overwrite, std::string_view record = {},
                      const std::vector<NamedIdentity>& inputs = {}, std::string_view recipe = {},
                      std::string_view figures = {});

// write_atomically piece by piece, for an output written as it is made: the temporary is
// created at once (O_EXCL, never more readable than `inputs`), each write() appends to it,
// and commit() stores the attributes, syncs and puts it in place exactly as
// write_atomically does. Destroyed without a commit (an exception on the way), it removes
// the temporary: no output is ever half-written under its name.
// commit() takes the output directory's DirectoryLock (tree_lock.hpp) and, under it, checks
// that every input with a path is still the file read (device, inode, size, mtime): one
// removed or rewritten since (another sweep verified its copy and removed it, a job wrote
// it again) is InputChanged, and the output already there is left as it is.
class AtomicOutput {
 public:
  AtomicOutput(const fs::path& path, const std::vector<NamedIdentity>& inputs);
  ~AtomicOutput();
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;
  void write(std::string_view bytes);
  void commit(bool overwrite, std::string_view record = {}, std::string_view recipe = {},
              std::string_view figures = {});
  // commit() in two steps, for a caller that puts several outputs in place together
  // (write_set_atomically): seal() stores the attributes and syncs and closes the
  // temporary; publish() checks the inputs and renames it into place. The caller holds the
  // directory's lock around publish().
  void seal(std::string_view record = {}, std::string_view recipe = {}, std::string_view figures = {});
  void publish(bool overwrite);
  const fs::path& temporary() const { return tmp_; }
  static constexpr size_t kNoSlot = SIZE_MAX;

 private:
  void fail(const std::string& what, int error);  // removes the temporary, throws Error
  fs::path path_, tmp_;
  std::vector<NamedIdentity> inputs_;
  int fd_ = -1;
  bool sealed_ = false;           // seal()ed, its temporary not yet renamed or removed
  size_t signal_slot_ = kNoSlot;  // remove_temporaries_on_signals()
};

// Files that belong together (a report's CSV, JSON and page), each (name in `dir`, bytes),
// replacing what is there: every temporary is written and synced first, so that a failure
// to write any of them (a full disk) leaves the previous set whole; then they are renamed
// in the given order under the directory's lock. Should a rename fail after the first,
// the members not yet replaced are removed (they belong to another run), and the Error
// says the set is incomplete and what was removed.
void write_set_atomically(const fs::path& dir, const std::vector<std::pair<std::string, std::string>>& files);
// Where a member of a set is written, piece by piece.
using ByteSink = std::function<void(std::string_view)>;
// The same, each member's bytes made only when it is written, and handed on a piece at a
// time (`write` calls the sink with each): a set of large files (a report of a million
// rows) costs the memory of a piece, not of a file.
struct SetMember {
  std::string name;
  std::function<void(const ByteSink&)> write;
};
void write_set_atomically(const fs::path& dir, const std::vector<SetMember>& members);

// SIGTERM, SIGINT and SIGHUP (Slurm's scancel and time limit, Ctrl-C, a closed terminal)
// remove every temporary an AtomicOutput of this process holds, then end the process by
// the same signal (exit status 128 + the signal in a shell). main() installs it; a signal
// the caller ignores stays ignored.
void remove_temporaries_on_signals();
// For `sweep`: the first of those signals (Slurm's SIGTERM before the time limit) only asks
// the process to stop, stop_requested() says which from then on, and the sweep writes the
// report of what it did; the next signal ends it as remove_temporaries_on_signals() does.
void stop_gracefully_on_signals();
int stop_requested();  // the signal that asked to stop, or 0

// What decides an output's bytes besides its inputs: tracelane's output format (raised
// whenever outputs change: 2 = lane tids aligned across ranks and restore data; 3 = slices
// keep their recorded args.stream, lane metadata has a ts), the rules
// (a digest of their text, or "built-in"), and whether restore data and single-trace PP
// arrows are written. It heads the inputs record, so an output made another way (by an
// older tracelane, with other rules, --no-restore-data or --no-pp-flows) is not up to date.
inline constexpr int kOutputFormat = 3;
std::string output_recipe(std::string_view rules_text, bool restore_data, bool pp_flows);
inline const char* kRecordAttribute = "user.tracelane.report_row";
inline const char* kInputsAttribute = "user.tracelane.inputs";
inline const char* kFiguresAttribute = "user.tracelane.figures";
// One line per input: "name<TAB>device<TAB>inode<TAB>size<TAB>mtime_s.mtime_ns". The device
// is written "=" when it is the output's own device: an NFS client numbers devices per
// mount, so a raw number would make every rerun on another node redo everything.
std::string format_inputs(const std::vector<NamedIdentity>& inputs, dev_t output_device);
// What is stored as kInputsAttribute: format_inputs' text while it is at most
// kInputsRecordTextMax bytes (a person can read it with getfattr), else a 128-bit digest of
// that text ("digest <hex> of <n> inputs"). A merge of hundreds of ranks would otherwise
// not fit beside the report row in the ~4 KiB of attributes ext4 and Lustre give an inode,
// and a record that was never stored makes every later sweep redo the merge.
inline constexpr size_t kInputsRecordTextMax = 2048;
std::string inputs_record(const std::vector<NamedIdentity>& inputs, dev_t output_device, std::string_view recipe = {});
// The attribute `name` of `path` itself (never of a symlink's target), or nothing (no
// such attribute, none readable, or larger than `max_bytes`).
std::optional<std::string> read_attribute(const fs::path& path, const char* name, size_t max_bytes = size_t(1) << 20);
inline std::optional<std::string> read_record(const fs::path& path) { return read_attribute(path, kRecordAttribute); }
// The record stored with `path`, or nothing (no such attribute, or none readable, or
// `path` is a symbolic link: the attribute is read from the file tracelane wrote, which a
// link is not).
std::optional<std::string> read_record(const fs::path& path);

// gzip-compress when the name ends in .gz: consecutive members of `member_bytes` of JSON
// each, compressed concurrently in the caller's TBB arena (gzip.hpp
// gzip_compress_members), or one member when `member_bytes` is 0.
std::string encode_for(const fs::path& path, std::string json, int level, size_t member_bytes = 0);

}  // namespace tracelane::cli
