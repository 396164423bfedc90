#include "files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <random>
#include <string_view>

#include "tracelane/gzip.hpp"
#include "tracelane/trace.hpp"

namespace tracelane::cli {

std::string read_file(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path.string() + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw Error(path.string() + ": is a directory, not a trace file");
  }
  std::string bytes;
  bytes.reserve(size_t(st.st_size) + 64);  // simdjson's padding fits without a copy
  bytes.resize(size_t(st.st_size));
  size_t got = 0;
  for (;;) {
    if (got == bytes.size()) bytes.resize(std::max<size_t>(bytes.size() * 2, 1 << 16));  // file grew
    ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      throw Error(path.string() + ": read error: " + std::strerror(e));
    }
    if (n == 0) break;
    got += size_t(n);
  }
  ::close(fd);
  bytes.resize(got);
  return bytes;
}

std::string read_trace_bytes(const fs::path& path) {
  std::string bytes = read_file(path);
  if (path.extension() == ".gz" && bytes.empty()) throw Error(path.string() + ": empty gzip file");
  if (is_gzip(bytes)) return gunzip(bytes, path.string());
  return bytes;
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
  if (!fs::is_directory(dir, ec)) throw Error(dir_or_file.string() + ": no such directory");
  std::vector<std::pair<long long, fs::path>> found;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    long long rank;
    std::string name = it->path().filename().string();
    if (is_rank_trace_name(name, &rank)) found.push_back({rank, it->path()});
  }
  if (ec) throw Error(dir.string() + ": cannot list directory: " + ec.message());
  std::sort(found.begin(), found.end());
  if (found.size() < 2)
    throw Error(dir.string() + ": merge needs at least two rank<N>_trace.json[.gz] files, found " +
                std::to_string(found.size()));
  std::vector<fs::path> paths;
  for (auto& [rank, path] : found) paths.push_back(path);
  return paths;
}

void write_atomically(const fs::path& path, const std::string& bytes, bool overwrite, std::string_view record) {
  fs::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  std::random_device device;
  std::string tmp_name = "." + path.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
                         std::to_string(device() % 1000000);
  fs::path tmp = dir / tmp_name;
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(path.string() + ": cannot create output: " + std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int e = n < 0 ? errno : ENOSPC;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw Error(path.string() + ": cannot write output: " + std::strerror(e));
    }
    done += size_t(n);
  }
  // ENOTSUP (no user xattrs here), ENOSPC or E2BIG (no room beside the inode): the output
  // is still complete; a later sweep that skips it reports it without its numbers.
  if (!record.empty()) (void)::fsetxattr(fd, kRecordAttribute, record.data(), record.size(), 0);
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    throw Error(path.string() + ": cannot write output: " + std::strerror(e));
  }
  if (overwrite) {
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      int e = errno;
      ::unlink(tmp.c_str());
      throw Error(path.string() + ": cannot move output into place: " + std::strerror(e));
    }
  } else {
    // link() fails if the name exists: no window where another writer's file is replaced.
    if (::link(tmp.c_str(), path.c_str()) != 0) {
      int e = errno;
      ::unlink(tmp.c_str());
      if (e == EEXIST) throw Error(path.string() + ": output exists (use --overwrite to replace it)");
      throw Error(path.string() + ": cannot move output into place: " + std::strerror(e));
    }
    ::unlink(tmp.c_str());
  }
}

std::optional<std::string> read_record(const fs::path& path) {
  std::string value(4096, '\0');
  for (int attempt = 0; attempt < 2; ++attempt) {
    ssize_t n = ::getxattr(path.c_str(), kRecordAttribute, value.data(), value.size());
    if (n >= 0) {
      value.resize(size_t(n));
      return value;
    }
    if (errno != ERANGE) return std::nullopt;
    n = ::getxattr(path.c_str(), kRecordAttribute, nullptr, 0);  // its size
    if (n <= 0 || n > (1 << 20)) return std::nullopt;
    value.assign(size_t(n), '\0');
  }
  return std::nullopt;
}

std::string encode_for(const fs::path& path, std::string json, int level) {
  if (path.extension() == ".gz") return gzip_compress(json, level);
  return json;
}

}  // namespace tracelane::cli
