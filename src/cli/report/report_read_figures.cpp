// Reading a row's figures (docs/figures.md: gpu_window_us, gpu_busy, bubble_fraction,
// timeline) from a report: strictly, as `report --combine` and a skipped row's figures
// record read them (all of a kind's keys or none, every value in the contract's form, or
// the report is refused), or key by key, as the page reads them (a key not in the
// contract's form is left out and named, the rest still drawn). One set of checks for
// both: the page's notes are the strict reader's errors, caught per key.
#include <cmath>
#include <set>

#include "report_reader.hpp"
#include "tracelane/decimal_time.hpp"

namespace tracelane::cli {

namespace {

// A fraction as figures hold it: a number from 0 to 1, in ten-thousandths.
int read_fraction(const ReportReader& reader, simdjson::dom::element value, const std::string& where) {
  double number;
  if (value.get(number) || !std::isfinite(number) || number < 0 || number > 1)
    reader.fail(where, "expected a number from 0 to 1", excerpt(value));
  return int(std::lround(number * kFractionScale));
}

// The keys of an object in order, each once.
std::vector<std::pair<std::string_view, simdjson::dom::element>> object_items(const ReportReader& reader,
                                                                              simdjson::dom::element value,
                                                                              const std::string& where) {
  simdjson::dom::object object;
  if (value.get(object)) reader.fail(where, "expected an object", excerpt(value));
  std::vector<std::pair<std::string_view, simdjson::dom::element>> out;
  std::set<std::string_view> seen;
  for (auto [key, member] : object) {
    if (!seen.insert(key).second) reader.fail(where + "." + std::string(key), "given twice");
    out.emplace_back(key, member);
  }
  return out;
}

std::optional<int64_t> read_optional_rank(const ReportReader& reader, simdjson::dom::element value,
                                          const std::string& where) {
  if (value.is_null()) return std::nullopt;
  return reader.integer(value, where);
}

// gpu_window_us at `path`: -0 reads as 0, so that it is written back as 0.
double read_window(const ReportReader& reader, simdjson::dom::element value, const std::string& path) {
  double window;
  if (value.get(window) || !std::isfinite(window) || window < 0 || window > kMaxReal)
    reader.fail(path, "expected a finite non-negative number of at most 1e15", excerpt(value));
  return window == 0 ? 0 : window;
}

// gpu_busy at `path`: {group name: fraction}.
std::map<std::string, int> read_busy(const ReportReader& reader, simdjson::dom::element value,
                                     const std::string& path) {
  std::map<std::string, int> busy;
  for (auto [key, item] : object_items(reader, value, path)) {
    std::optional<std::string> name = name_from_report(key);
    if (!name || name->empty())
      reader.fail(path, "a group name is not text as tracelane writes it: " + std::string(key));
    busy[*name] = read_fraction(reader, item, path + "." + std::string(key));
  }
  return busy;
}

// bubble_fraction at `path`: {global rank: fraction}.
std::map<int64_t, int> read_bubble(const ReportReader& reader, simdjson::dom::element value, const std::string& path) {
  std::map<int64_t, int> bubble;
  for (auto [key, item] : object_items(reader, value, path)) {
    int64_t rank;
    if (!parse_json_int(key, rank) || rank < 0 || std::to_string(rank) != key)
      reader.fail(path, "a key is not a global rank (a non-negative integer): " + std::string(key));
    bubble[rank] = read_fraction(reader, item, path + "." + std::string(key));
  }
  return bubble;
}

TimelineStrip read_strip(const ReportReader& reader, simdjson::dom::element item, const std::string& at, int bins) {
  auto fields = reader.members(item, at, {"rank", "pp_rank", "group", "occupancy"});
  TimelineStrip strip;
  strip.rank = read_optional_rank(reader, reader.required(fields, "rank", at), at + ".rank");
  strip.pp_rank = read_optional_rank(reader, reader.required(fields, "pp_rank", at), at + ".pp_rank");
  strip.group = reader.text(reader.required(fields, "group", at), at + ".group");
  if (strip.group.empty()) reader.fail(at + ".group", "empty");
  std::string_view digits;
  simdjson::dom::element occupancy = reader.required(fields, "occupancy", at);
  if (occupancy.get(digits) || digits.size() != size_t(bins) ||
      digits.find_first_not_of("0123456789") != std::string_view::npos)
    reader.fail(at + ".occupancy", "expected " + std::to_string(bins) + " digits", excerpt(occupancy));
  strip.occupancy = std::string(digits);
  return strip;
}

// timeline at `path`: {start_us, end_us, bins, strips: [{rank, pp_rank, group, occupancy}]}.
Timeline read_timeline(const ReportReader& reader, simdjson::dom::element value, const std::string& path) {
  auto fields = reader.members(value, path, {"start_us", "end_us", "bins", "strips"});
  Timeline timeline;
  for (auto [key, target] : {std::pair{"start_us", &timeline.start_us}, std::pair{"end_us", &timeline.end_us}}) {
    simdjson::dom::element time = reader.required(fields, key, path);
    // Times tracelane reads are at most kMaxTimeNs (3e15 us) in size: epoch microseconds pass 1e15.
    if (time.get(*target) || !std::isfinite(*target) || std::fabs(*target) > double(kMaxTimeNs) / 1000)
      reader.fail(path + "." + key, "expected a finite number of at most 3e15 in size", excerpt(time));
    if (*target == 0) *target = 0;  // -0 reads as 0, so that it is written back as 0
  }
  if (timeline.end_us < timeline.start_us) reader.fail(path + ".end_us", "before start_us");
  timeline.bins = int(reader.integer(reader.required(fields, "bins", path), path + ".bins", kMaxTimelineBins));
  if (timeline.bins < 1) reader.fail(path + ".bins", "expected at least 1 bin");
  simdjson::dom::array strips;
  if (reader.required(fields, "strips", path).get(strips)) reader.fail(path + ".strips", "expected an array");
  size_t n = 0;
  for (simdjson::dom::element item : strips)
    timeline.strips.push_back(read_strip(reader, item, path + ".strips[" + std::to_string(n++) + "]", timeline.bins));
  return timeline;
}

}  // namespace

std::optional<GpuFigures> read_figures(const ReportReader& reader, const Members& members, RowKind kind,
                                       RowStatus status, const std::string& where) {
  bool any = false;
  for (std::string_view key : kFigureKeys) any = any || members.count(key);
  if (!any) return std::nullopt;
  if (kind == RowKind::problem || (status != RowStatus::ok && status != RowStatus::skipped))
    reader.fail(where, std::string("GPU figures on a ") + kind_name(kind) + " row with status " + status_name(status) +
                           " (only ok and skipped file and merge rows have them)");
  GpuFigures figures;
  figures.merged = kind == RowKind::merge;
  const char* absent = figures.merged ? "gpu_busy" : "bubble_fraction";
  if (members.count(absent))
    reader.fail(where + "." + absent, std::string("not a key of ") + kind_name(kind) + " rows");
  figures.window_us = read_window(reader, reader.required(members, "gpu_window_us", where), where + ".gpu_window_us");
  if (!figures.merged)
    figures.busy = read_busy(reader, reader.required(members, "gpu_busy", where), where + ".gpu_busy");
  else
    figures.bubble =
        read_bubble(reader, reader.required(members, "bubble_fraction", where), where + ".bubble_fraction");
  figures.timeline = read_timeline(reader, reader.required(members, "timeline", where), where + ".timeline");
  return figures;
}

std::optional<GpuFigures> read_figures_for_page(const ReportReader& reader, const Members& members, RowKind kind,
                                                const std::string& where, FigureKeys& keys,
                                                std::vector<std::string>& notes) {
  GpuFigures figures;
  figures.merged = kind == RowKind::merge;
  // Reads one key (absent or null: not there, no note). The note says what the key must
  // be; inside a timeline, where it is not so.
  auto attempt = [&](const char* key, const char* form, auto read) {
    auto it = members.find(key);
    if (it == members.end() || it->second.is_null()) return false;
    std::string path = where + "." + key;
    try {
      read(it->second, path);
      return true;
    } catch (const FieldError& e) {
      std::string inside = e.where.size() > path.size() ? e.where.substr(path.size() + 1) + ": " : "";
      notes.push_back(path + ": " + (form ? std::string(form) : inside + e.what_is_wrong) + "; not drawn");
      return false;
    }
  };
  const char* fractions = "expected an object of fractions from 0 to 1";
  keys.window =
      attempt("gpu_window_us", "expected a finite non-negative number",
              [&](auto value, const std::string& path) { figures.window_us = read_window(reader, value, path); });
  keys.busy = attempt("gpu_busy", fractions,
                      [&](auto value, const std::string& path) { figures.busy = read_busy(reader, value, path); });
  keys.bubble = attempt("bubble_fraction", fractions, [&](auto value, const std::string& path) {
    figures.bubble = read_bubble(reader, value, path);
  });
  keys.timeline = attempt("timeline", nullptr, [&](auto value, const std::string& path) {
    figures.timeline = read_timeline(reader, value, path);
  });
  if (!keys.window && !keys.busy && !keys.bubble && !keys.timeline) return std::nullopt;
  return figures;
}

}  // namespace tracelane::cli
