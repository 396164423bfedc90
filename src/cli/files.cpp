#include "files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string_view>

#include <iostream>

#include "printable.hpp"
#include "tracelane/gzip.hpp"
#include "tracelane/trace.hpp"
#include "tree_lock.hpp"

namespace tracelane::cli {

FileIdentity identity_of(const struct stat& st) {
  return {st.st_dev,
          st.st_ino,
          uint64_t(st.st_size),
          int64_t(st.st_mtim.tv_sec),
          long(st.st_mtim.tv_nsec),
          mode_t(st.st_mode & 07777)};
}

std::string read_file(const fs::path& path, FileIdentity* identity, const ReadOptions& options) {
  // O_NONBLOCK: opening a FIFO nobody writes to (one planted under a rank file's name in a
  // shared tree) returns at once instead of hanging the sweep; it then reads as empty. A
  // device is never read (opening one is harmless with O_NONBLOCK; reading /dev/zero is
  // not). Regular files and pipes are then read blocking, as usual.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (options.no_follow ? O_NOFOLLOW : 0));
  if (fd < 0) throw FileError(path.string() + ": cannot open: " + std::strerror(errno));
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat before {};
  if (::fstat(fd, &before) != 0) throw FileError(path.string() + ": cannot stat: " + std::strerror(errno));
  if (S_ISDIR(before.st_mode)) throw FileError(path.string() + ": is a directory, not a trace file");
  bool regular = S_ISREG(before.st_mode);
  if (options.regular_only && !regular) throw FileError(path.string() + ": not a regular file (not read)");
  if (!regular && !S_ISFIFO(before.st_mode))
    throw FileError(path.string() + ": not a regular file (a device or socket)");
  if (::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
    throw FileError(path.string() + ": cannot read: " + std::strerror(errno));
  if (regular && uint64_t(before.st_size) > options.max_bytes)
    throw LargerThanAdmitted(
        path.string() + ": holds more than the " + std::to_string(options.max_bytes) + " bytes admitted",
        uint64_t(before.st_size));
  std::string bytes;
  bytes.reserve(size_t(before.st_size) + 64);  // simdjson's padding fits without a copy
  bytes.resize(size_t(before.st_size));
  size_t got = 0;
  char probe[4096];
  for (;;) {
    // At the size fstat gave, the file has most likely ended: ask with a small read before
    // growing, for growing copies and zero-fills the whole buffer (it did so for every
    // file: a 1 GB input held 3 GB at once and kept 2 GB).
    const bool at_end = got == bytes.size();
    ssize_t n = at_end ? ::read(fd, probe, sizeof probe) : ::read(fd, bytes.data() + got, bytes.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw FileError(path.string() + ": read error: " + std::strerror(errno));
    }
    if (n == 0) break;
    if (at_end) {  // the file grew (or is a pipe): never beyond what was admitted
      if (uint64_t(got) + uint64_t(n) > options.max_bytes)
        throw LargerThanAdmitted(
            path.string() + ": holds more than the " + std::to_string(options.max_bytes) + " bytes admitted",
            std::max<uint64_t>(uint64_t(got) * 2, options.max_bytes + 1));
      size_t grown = std::max({bytes.size() * 2, size_t(1) << 16, got + size_t(n)});
      bytes.resize(size_t(std::min<uint64_t>(grown, options.max_bytes)));
      std::memcpy(bytes.data() + got, probe, size_t(n));
    }
    got += size_t(n);
  }
  bytes.resize(got);
  if (regular) {
    // The descriptor keeps the inode, so a file renamed over the name while we read
    // changes nothing here (and the identity recorded is the file read); a writer
    // appending or rewriting in place changes the size or mtime.
    struct stat after {};
    if (::fstat(fd, &after) != 0) throw FileError(path.string() + ": cannot stat: " + std::strerror(errno));
    if (!(identity_of(before) == identity_of(after)) || uint64_t(got) != uint64_t(after.st_size))
      throw InputChanged(path.string() + ": changed while it was read (is a job still writing it?)");
    if (identity) *identity = identity_of(after);
  }
  return bytes;
}

namespace {

// read_trace_bytes and read_trace_text: `decompress` is gunzip or gunzip_text.
template <class Text>
Text read_decompressed(const fs::path& path, FileIdentity* identity, const ReadOptions& options,
                       std::optional<uint32_t>* crc32,
                       Text (*decompress)(std::string_view, std::string_view, uint64_t, std::optional<uint32_t>*)) {
  if (crc32) crc32->reset();
  ReadOptions raw = options;
  if (options.max_bytes != UINT64_MAX) {
    // A gzip file is no larger than its contents plus headers; the limit applies to what
    // it decompresses to.
    raw.max_bytes = options.max_bytes + options.max_bytes / 8 + (1 << 16);
  }
  std::string bytes = read_file(path, identity, raw);
  if (path.extension() == ".gz" && bytes.empty()) throw Error(path.string() + ": empty gzip file");
  if (is_gzip(bytes)) return decompress(bytes, path.string(), options.max_bytes, crc32);
  if (bytes.size() > options.max_bytes)
    throw LargerThanAdmitted(
        path.string() + ": holds more than the " + std::to_string(options.max_bytes) + " bytes admitted", bytes.size());
  return Text(std::move(bytes));
}

}  // namespace

std::string read_trace_bytes(const fs::path& path, FileIdentity* identity, const ReadOptions& options,
                             std::optional<uint32_t>* crc32) {
  return read_decompressed<std::string>(path, identity, options, crc32, gunzip);
}

TextBuffer read_trace_text(const fs::path& path, FileIdentity* identity, const ReadOptions& options,
                           std::optional<uint32_t>* crc32) {
  return read_decompressed<TextBuffer>(path, identity, options, crc32, gunzip_text);
}

fs::path default_compact_output(const fs::path& input) {
  std::string name = input.filename().string();
  auto ends = [&](const std::string& suffix) {
    return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  std::string out;
  if (ends(".json.gz"))
    out = name.substr(0, name.size() - 8) + "_compacted.json.gz";
  else if (ends(".json"))
    out = name.substr(0, name.size() - 5) + "_compacted.json";
  else
    out = name + "_compacted.json.gz";
  return input.parent_path() / out;
}

// `rank<digits>_trace.json` or `rank<digits>_trace.json.gz`, exactly, read by hand: a
// directory entry's name is anyone's bytes, and a regex engine that recurses per character
// (std::regex) is no tool for them. The name matches whatever the digits, but when the rank
// is asked for, one that does not fit a long long makes it no rank file (as std::stoll
// refused it before).
bool is_rank_trace_name(const std::string& filename, long long* rank) {
  std::string_view name = filename;
  constexpr std::string_view kPrefix = "rank";
  if (name.substr(0, kPrefix.size()) != kPrefix) return false;
  name.remove_prefix(kPrefix.size());
  size_t digits = 0;
  long long value = 0;
  bool overflow = false;
  for (; digits < name.size() && name[digits] >= '0' && name[digits] <= '9'; ++digits) {
    int digit = name[digits] - '0';
    if (value > (std::numeric_limits<long long>::max() - digit) / 10) overflow = true;
    if (!overflow) value = value * 10 + digit;
  }
  if (digits == 0) return false;
  name.remove_prefix(digits);
  if (name != "_trace.json" && name != "_trace.json.gz") return false;
  if (rank) {
    if (overflow) return false;
    *rank = value;
  }
  return true;
}

bool is_our_output_name(const std::string& filename) {
  return filename == kMergedName || filename.find("_compacted.json") != std::string::npos;
}

std::vector<fs::path> find_rank_files(const fs::path& dir_or_file) {
  boost::system::error_code ec;
  fs::path dir = fs::is_directory(dir_or_file, ec) ? dir_or_file : dir_or_file.parent_path();
  if (dir.empty()) dir = ".";
  if (!fs::is_directory(dir, ec)) throw FileError(dir_or_file.string() + ": no such directory");
  std::vector<std::pair<long long, fs::path>> found;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    long long rank;
    std::string name = it->path().filename().string();
    if (is_rank_trace_name(name, &rank)) found.push_back({rank, it->path()});
  }
  if (ec) throw FileError(dir.string() + ": cannot list directory: " + ec.message());
  std::sort(found.begin(), found.end());
  if (found.size() < 2)
    throw UsageError(dir.string() + ": merge needs at least two rank<N>_trace.json[.gz] files, found " +
                     std::to_string(found.size()));
  std::vector<fs::path> paths;
  for (auto& [rank, path] : found) paths.push_back(path);
  return paths;
}

namespace {

struct FileId {
  dev_t dev;
  ino_t ino;
  bool operator==(const FileId& other) const { return dev == other.dev && ino == other.ino; }
};

std::optional<FileId> file_id(const fs::path& path, bool follow) {
  struct stat st {};
  int rc = follow ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st);
  if (rc != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino};
}

// ".", ".tmp.", a pid (at most 7 digits on Linux), ".", a number below 10^6.
constexpr size_t kTemporaryNameExtra = 1 + 5 + 7 + 1 + 6;

fs::path directory_of(const fs::path& path) {
  fs::path dir = path.parent_path();
  return dir.empty() ? fs::path(".") : dir;
}

}  // namespace

void guard_output(const fs::path& output, const std::vector<fs::path>& inputs, bool overwrite, RankName rank_name) {
  const std::string name = output.string();
  const std::string filename = output.filename().string();
  auto refuse = [&](const std::string& reason) { throw OutputRefused(name + ": " + reason); };
  if (name.empty()) throw OutputRefused("tracelane: empty output name");
  // boost names the last element of "d/" ".", so "d/", "d/." and "d/.." all land here.
  if (name.back() == '/' || filename == "." || filename == "..") refuse("names a directory, not an output file");
  struct stat st {};
  const fs::path dir = directory_of(output);
  if (::stat(dir.c_str(), &st) != 0) {
    int e = errno;
    refuse("output directory " + dir.string() + ": " + std::strerror(e));
  }
  if (!S_ISDIR(st.st_mode)) refuse("output directory " + dir.string() + ": Not a directory");
  // write_atomically's temporary is ".<name>.tmp.<pid>.<random>": it must fit too.
  long name_max = ::pathconf(dir.c_str(), _PC_NAME_MAX);
  if (name_max <= 0) name_max = 255;
  if (filename.size() + kTemporaryNameExtra > size_t(name_max))
    refuse("name too long (" + std::to_string(filename.size()) + " bytes; at most " +
           std::to_string(name_max - long(kTemporaryNameExtra)) + " here, for the temporary beside it)");
  if (rank_name == RankName::refused && is_rank_trace_name(filename) && !is_our_output_name(filename))
    refuse(
        "is named like a rank trace (rank<N>_trace.json[.gz]), which tracelane reads as an input; "
        "choose another -o");
  // Identity, links followed: a link or another name for an input is that input.
  const std::optional<FileId> out_id = file_id(output, true);
  const std::optional<FileId> out_dir_id = file_id(dir, true);
  for (const auto& input : inputs) {
    bool same = out_id && out_id == file_id(input, true);
    // Or the same directory entry (same directory, same name), whether or not it exists.
    same = same ||
           (input.filename() == output.filename() && out_dir_id && out_dir_id == file_id(directory_of(input), true));
    if (same) refuse("output would replace the input " + input.string() + "; choose another -o");
  }
  bool exists = ::lstat(output.c_str(), &st) == 0;
  if (exists) {
    struct stat target {};
    if (::stat(output.c_str(), &target) == 0 && S_ISDIR(target.st_mode)) refuse("is a directory, not an output file");
    if (!overwrite) throw OutputExists(name + ": output exists (use --overwrite to replace it)");
  }
}

void require_output_option_unless_regular(const fs::path& input) {
  struct stat st {};
  if (::stat(input.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return;  // a missing input: reading it says so
  const char* what = S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a pipe" : "a device or socket";
  throw OutputRefused(input.string() + ": not a regular file (" + what + "): give the output with -o");
}

void print_error(std::string_view line) {
  std::string text = printable(line, Backslash::keep);
  text += '\n';
  std::cerr << text << std::flush;
}

namespace {

// The temporaries this process has made and not yet renamed or removed, for the handler of
// SIGTERM, SIGINT and SIGHUP: a fixed table (a handler may not allocate), each slot's
// state an atomic the handler reads (lock-free, so async-signal-safe).
constexpr size_t kTemporarySlots = 256;
enum SlotState : int { kSlotFree, kSlotFilling, kSlotLive };
struct TemporarySlot {
  std::atomic<int> state{kSlotFree};
  char path[PATH_MAX];
};
TemporarySlot temporary_slots[kTemporarySlots];

// A slot for `path`, or kNoSlot when all are taken (more than 256 outputs at once) or the
// path is too long: that temporary is then left by a signal, as before, for the next
// sweep of its directory to remove.
size_t remember_temporary(const std::string& path) {
  if (path.size() >= PATH_MAX) return AtomicOutput::kNoSlot;
  for (size_t i = 0; i < kTemporarySlots; ++i) {
    int expected = kSlotFree;
    if (!temporary_slots[i].state.compare_exchange_strong(expected, kSlotFilling)) continue;
    std::memcpy(temporary_slots[i].path, path.c_str(), path.size() + 1);
    temporary_slots[i].state.store(kSlotLive, std::memory_order_release);
    return i;
  }
  return AtomicOutput::kNoSlot;
}

void forget_temporary(size_t slot) {
  if (slot != AtomicOutput::kNoSlot) temporary_slots[slot].state.store(kSlotFree, std::memory_order_release);
}

extern "C" void remove_temporaries_and_end(int signal_number) {
  const int saved = errno;
  for (TemporarySlot& slot : temporary_slots)
    if (slot.state.load(std::memory_order_acquire) == kSlotLive) ::unlink(slot.path);
  errno = saved;
  // SA_RESETHAND put the default action back: the process ends by the signal, so its
  // parent (a shell: 128 + the signal; Slurm) sees why.
  ::raise(signal_number);
}

constexpr int kEndingSignals[] = {SIGTERM, SIGINT, SIGHUP};

// Handles every ending signal the caller does not ignore (nohup, a shell's background
// job's SIGINT: those stay ignored) with `handler`; `flags` as sigaction's.
void handle_ending_signals(void (*handler)(int), int flags) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = flags;
  for (int signal_number : kEndingSignals) {
    struct sigaction before {};
    if (::sigaction(signal_number, nullptr, &before) == 0 && before.sa_handler == SIG_IGN) continue;
    ::sigaction(signal_number, &action, nullptr);
  }
}

std::atomic<int> stop_signal{0};

// The first ending signal of a sweep: noted; the next one ends the process.
extern "C" void note_stop_request(int signal_number) {
  const int saved = errno;
  stop_signal.store(signal_number, std::memory_order_relaxed);
  handle_ending_signals(remove_temporaries_and_end, SA_RESETHAND);  // sigaction is async-signal-safe
  errno = saved;
}

}  // namespace

void remove_temporaries_on_signals() {
  static_assert(std::atomic<int>::is_always_lock_free);
  handle_ending_signals(remove_temporaries_and_end, SA_RESETHAND);
}

void stop_gracefully_on_signals() { handle_ending_signals(note_stop_request, 0); }

int stop_requested() { return stop_signal.load(std::memory_order_relaxed); }

AtomicOutput::AtomicOutput(const fs::path& path, const std::vector<NamedIdentity>& inputs)
    : path_(path), inputs_(inputs) {
  fs::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  std::random_device device;
  tmp_ = dir / ("." + path.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
                std::to_string(device() % 1000000));
  // Never more readable than the inputs it was made from: a private trace read through a
  // link must not become a world-readable copy in a shared directory.
  mode_t mode = 0644;
  for (const NamedIdentity& input : inputs)
    if (input.identity.mode != 0) mode &= input.identity.mode | 0600;
  // O_EXCL never opens an existing file, nor follows a symlink planted under the name.
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd_ < 0) throw FileError(path.string() + ": cannot create output: " + std::strerror(errno));
  signal_slot_ = remember_temporary(tmp_.string());
}

AtomicOutput::~AtomicOutput() {
  if (fd_ >= 0) ::close(fd_);
  // Written, or sealed and never published (another member of its set failed).
  if (fd_ >= 0 || sealed_) ::unlink(tmp_.c_str());
  // Only now: the name is gone (renamed or removed) on every way out of commit() and
  // fail(), and a signal before this line removes a name that no longer exists.
  forget_temporary(signal_slot_);
}

void AtomicOutput::fail(const std::string& what, int error) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(tmp_.c_str());
  throw FileError(path_.string() + ": " + what + ": " + std::strerror(error));
}

void AtomicOutput::write(std::string_view bytes) {
  if (fd_ < 0) throw Error(path_.string() + ": internal: write after the output was closed");
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("cannot write output", n < 0 ? errno : ENOSPC);
    done += size_t(n);
  }
}

void AtomicOutput::seal(std::string_view record, std::string_view recipe, std::string_view figures) {
  if (fd_ < 0) throw Error(path_.string() + ": internal: commit after the output was closed");
  // ENOTSUP (no user xattrs here), ENOSPC or E2BIG (no room beside the inode): the output
  // is still complete; a later sweep that skips it reports it without its numbers.
  // Both attributes go on the descriptor of the file we just created, so they can only
  // ever land on our own temporary. Without kInputsAttribute a sweep redoes the output.
  if (!record.empty()) (void)::fsetxattr(fd_, kRecordAttribute, record.data(), record.size(), 0);
  if (!inputs_.empty()) {
    struct stat st {};
    if (::fstat(fd_, &st) == 0) {
      std::string text = inputs_record(inputs_, st.st_dev, recipe);
      (void)::fsetxattr(fd_, kInputsAttribute, text.data(), text.size(), 0);
    }
  }
  // Last: the figures are the largest and the least needed, so they never take the room
  // of the two above (E2BIG, ENOSPC: the output is reported without its figures).
  if (!figures.empty()) (void)::fsetxattr(fd_, kFiguresAttribute, figures.data(), figures.size(), 0);
  // Both, always: a failed fsync must not leak the descriptor.
  int synced = ::fsync(fd_), sync_error = errno;
  int closed = ::close(fd_), close_error = errno;
  fd_ = -1;
  if (synced != 0 || closed != 0) {
    ::unlink(tmp_.c_str());
    throw FileError(path_.string() + ": cannot write output: " + std::strerror(synced != 0 ? sync_error : close_error));
  }
  sealed_ = true;
}

void AtomicOutput::publish(bool overwrite) {
  if (!sealed_) throw Error(path_.string() + ": internal: published before it was sealed");
  sealed_ = false;  // the temporary is renamed or removed below, on every way out
  for (const NamedIdentity& input : inputs_) {
    if (input.path.empty() || input.identity == FileIdentity{}) continue;
    struct stat now {};
    if (::stat(input.path.c_str(), &now) != 0 || !(identity_of(now) == input.identity)) {
      ::unlink(tmp_.c_str());
      throw InputChanged(path_.string() + ": not written: its input " + input.path.string() +
                         " was removed or changed since it was read");
    }
  }
  if (overwrite) {
    if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
      int e = errno;
      ::unlink(tmp_.c_str());
      throw FileError(path_.string() + ": cannot move output into place: " + std::strerror(e));
    }
  } else {
    // link() fails if the name exists: no window where another writer's file is replaced.
    if (::link(tmp_.c_str(), path_.c_str()) != 0) {
      int e = errno;
      ::unlink(tmp_.c_str());
      if (e == EEXIST) throw OutputExists(path_.string() + ": output exists (use --overwrite to replace it)");
      throw FileError(path_.string() + ": cannot move output into place: " + std::strerror(e));
    }
    ::unlink(tmp_.c_str());
  }
}

void AtomicOutput::commit(bool overwrite, std::string_view record, std::string_view recipe, std::string_view figures) {
  seal(record, recipe, figures);
  fs::path dir = path_.parent_path();
  DirectoryLock lock;
  std::string why_unlocked;
  (void)lock.take(dir.empty() ? fs::path(".") : dir, why_unlocked);  // unlocked: publish's check still holds
  publish(overwrite);
}

void write_set_atomically(const fs::path& dir, const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<SetMember> members;
  for (const auto& [name, bytes] : files)
    members.push_back({name, [&bytes = bytes](const ByteSink& sink) { sink(bytes); }});
  write_set_atomically(dir, members);
}

void write_set_atomically(const fs::path& dir, const std::vector<SetMember>& files) {
  // Every temporary written and synced before any name is replaced: a full disk or a
  // failed write leaves the set that was there whole.
  std::vector<std::unique_ptr<AtomicOutput>> outputs;
  for (const SetMember& member : files) {
    outputs.push_back(std::make_unique<AtomicOutput>(dir / member.name, std::vector<NamedIdentity>{}));
    AtomicOutput& output = *outputs.back();
    member.write([&output](std::string_view piece) { output.write(piece); });
    outputs.back()->seal();
  }
  DirectoryLock lock;
  std::string why_unlocked;
  (void)lock.take(dir, why_unlocked);
  for (size_t i = 0; i < outputs.size(); ++i) {
    try {
      outputs[i]->publish(true);
    } catch (const Error& error) {
      if (i == 0) throw;
      // Half the set replaced: the members not yet replaced are the previous run's, which
      // no longer belong with the new ones. Removed, so that no page or table of another
      // run is read as this one's; the message says which are gone.
      std::string removed;
      for (size_t j = i; j < outputs.size(); ++j) {
        fs::path stale = dir / files[j].name;
        if (::unlink(stale.c_str()) == 0) removed += (removed.empty() ? "" : ", ") + stale.string();
      }
      throw Error(std::string(error.what()) + "; the set is incomplete" +
                  (removed.empty() ? std::string() : ": removed the previous " + removed));
    }
  }
}

void write_atomically(const fs::path& path, const std::string& bytes, bool overwrite, std::string_view record,
                      const std::vector<NamedIdentity>& inputs, std::string_view recipe, std::string_view figures) {
  AtomicOutput output(path, inputs);
  output.write(bytes);
  output.commit(overwrite, record, recipe, figures);
}

std::string format_inputs(const std::vector<NamedIdentity>& inputs, dev_t output_device) {
  std::string out;
  for (const NamedIdentity& input : inputs) {
    const FileIdentity& id = input.identity;
    char nanos[16];
    std::snprintf(nanos, sizeof nanos, "%09ld", id.mtime_ns);
    out += input.name + "\t" + (id.device == output_device ? std::string("=") : std::to_string(uint64_t(id.device))) +
           "\t" + std::to_string(uint64_t(id.inode)) + "\t" + std::to_string(id.size) + "\t" +
           std::to_string(id.mtime_s) + "." + nanos + "\n";
  }
  return out;
}

namespace {
// FNV-1a 64 in two lanes from different bases: a digest against accidents, not against
// someone who can set our attributes anyway.
std::string digest_hex(std::string_view text) {
  uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
  for (unsigned char c : text) {
    a = (a ^ c) * 0x100000001b3ull;
    b = (b ^ c) * 0x100000001b3ull;
    b ^= b >> 29;
  }
  char hex[40];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(a),
                static_cast<unsigned long long>(b));
  return hex;
}
}  // namespace

std::string output_recipe(std::string_view rules_text, bool restore_data, bool pp_flows) {
  return "made by\ttracelane output format " + std::to_string(kOutputFormat) + ", rules " +
         (rules_text.empty() ? std::string("built-in") : digest_hex(rules_text)) +
         (restore_data ? ", restore data" : ", no restore data") + (pp_flows ? ", pp arrows" : ", no pp arrows") + "\n";
}

std::string inputs_record(const std::vector<NamedIdentity>& inputs, dev_t output_device, std::string_view recipe) {
  std::string text = std::string(recipe) + format_inputs(inputs, output_device);
  if (text.size() <= kInputsRecordTextMax) return text;
  // A changed rank among hundreds changes the digest.
  return "digest " + digest_hex(text) + " of " + std::to_string(inputs.size()) + " inputs\n";
}

std::optional<std::string> read_attribute(const fs::path& path, const char* name, size_t max_bytes) {
  std::string value(std::min<size_t>(4096, max_bytes), '\0');
  for (int attempt = 0; attempt < 2; ++attempt) {
    // lgetxattr: a link planted where an output was is not followed to another file.
    ssize_t n = ::lgetxattr(path.c_str(), name, value.data(), value.size());
    if (n >= 0) {
      value.resize(size_t(n));
      return value;
    }
    if (errno != ERANGE) return std::nullopt;
    n = ::lgetxattr(path.c_str(), name, nullptr, 0);  // its size
    if (n <= 0 || size_t(n) > max_bytes) return std::nullopt;
    value.assign(size_t(n), '\0');
  }
  return std::nullopt;
}

std::string encode_for(const fs::path& path, std::string json, int level, size_t member_bytes) {
  if (path.extension() != ".gz") return json;
  return member_bytes ? gzip_compress_members(json, level, member_bytes) : gzip_compress(json, level);
}

}  // namespace tracelane::cli
