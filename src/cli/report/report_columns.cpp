// The report's columns and rows: the column table (one name per quantity: a column that
// `compact`'s or `merge`'s summary also gives has the summary's key), the cells' text forms
// (JSON, CSV), the sort order that makes a combined report equal a single-node one, and
// the totals, always recomputed from the rows.
#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <tuple>

#include "printable.hpp"
#include "report_cells.hpp"

namespace tracelane::cli {

namespace {

constexpr unsigned F = 1u << unsigned(RowKind::file);
constexpr unsigned M = 1u << unsigned(RowKind::merge);
constexpr unsigned P = 1u << unsigned(RowKind::problem);
constexpr auto T = ColumnType::text;
constexpr auto I = ColumnType::integer;
constexpr auto R = ColumnType::real;

constexpr std::array<Column, kColumnCount> kColumns = {{
    // id, name, type, kinds, summed, timing, decimals
    {ColumnId::kind, "kind", T, F | M | P, false, false},
    {ColumnId::dir, "dir", T, F | M | P, false, false},
    {ColumnId::file, "file", T, F, false, false},
    {ColumnId::run, "run", T, F | M, false, false},
    {ColumnId::iteration, "iteration", T, F | M, false, false},
    {ColumnId::rank, "rank", I, F, false, false},
    {ColumnId::pp_rank, "pp_rank", I, F, false, false},
    {ColumnId::ranks, "ranks", I, M, false, false},
    {ColumnId::pp_order, "pp_order", T, M, false, false},
    {ColumnId::pp_order_source, "pp_order_source", T, M, false, false},
    {ColumnId::time_alignment, "time_alignment", T, M, false, false},
    {ColumnId::input_bytes, "input_bytes", I, F | M, true, false},
    {ColumnId::output_bytes, "output_bytes", I, F | M, true, false},
    {ColumnId::events, "events", I, F, true, false},
    {ColumnId::measured_slices, "measured_slices", I, F, true, false},
    {ColumnId::original_streams, "original_streams", I, F, true, false},
    {ColumnId::compacted_lanes, "compacted_lanes", I, F, true, false},
    {ColumnId::compaction_ratio, "compaction_ratio", R, F, false, false, 4},
    {ColumnId::gpu_flow_endpoints_mapped, "gpu_flow_endpoints_mapped", I, F, true, false},
    {ColumnId::gpu_flow_endpoints_unmapped, "gpu_flow_endpoints_unmapped", I, F, true, false},
    {ColumnId::gpu_annotations_mapped, "gpu_annotations_mapped", I, F, true, false},
    {ColumnId::gpu_annotations_coalesced, "gpu_annotations_coalesced", I, F, true, false},
    {ColumnId::cuda_graph_launches, "cuda_graph_launches", I, F, true, false},
    {ColumnId::pp_send_recv_pairs, "pp_send_recv_pairs", I, M, true, false},
    {ColumnId::pp_send_recv_unmatched, "pp_send_recv_unmatched", I, M, true, false},
    {ColumnId::pp_compute_dependency_pairs, "pp_compute_dependency_pairs", I, M, true, false},
    {ColumnId::pp_compute_dependency_unmatched, "pp_compute_dependency_unmatched", I, M, true, false},
    {ColumnId::pp_unshard_compute_pairs, "pp_unshard_compute_pairs", I, M, true, false},
    {ColumnId::pp_unshard_compute_unmatched, "pp_unshard_compute_unmatched", I, M, true, false},
    {ColumnId::output, "output", T, F | M, false, false},
    {ColumnId::seconds, "seconds", R, F | M, true, true, 3},
    {ColumnId::status, "status", T, F | M | P, false, false},
    {ColumnId::error, "error", T, F | M | P, false, false},
    // sweep --remove-originals: "removed" or "kept: <reason>"; empty without the flag.
    {ColumnId::original, "original", T, F, false, false},
}};

// The table is in ColumnId's order: column `id` is kColumns[size_t(id)].
constexpr bool in_id_order() {
  for (size_t c = 0; c < kColumns.size(); ++c)
    if (size_t(kColumns[c].id) != c) return false;
  return true;
}
static_assert(in_id_order(), "kColumns must list the columns in ColumnId's order");

// The statuses' names, as reports write them, and the kinds of rows that may have each.
struct StatusName {
  RowStatus status;
  const char* name;
  unsigned kinds;
};
constexpr StatusName kStatusNames[] = {
    {RowStatus::ok, "ok", F | M},
    {RowStatus::skipped, "skipped", F | M},
    {RowStatus::already_laned, "already laned", F | M},
    {RowStatus::failed, "failed", F | M | P},
    {RowStatus::warning, "warning", P},
};

}  // namespace

JsonValue real_json(double value) {
  char buffer[64];
  auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
  if (error != std::errc()) return JsonValue::null();
  return JsonValue::raw_number(std::string(buffer, end));
}

std::string format_real(double value, int decimals) {
  if (!std::isfinite(value)) return "";
  char buffer[400];
  // A sum of many reals may pass kMaxReal: the exponent form, which every reader takes.
  if (std::fabs(value) >= kMaxReal)
    std::snprintf(buffer, sizeof buffer, "%.17g", value);
  else
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

double real_as_written(double value, int decimals) {
  std::string text = format_real(value, decimals);
  return text.empty() ? value : std::strtod(text.c_str(), nullptr);
}

JsonValue cell_json(const Cell& cell, const Column& column) {
  if (std::holds_alternative<int64_t>(cell)) return JsonValue::integer(std::get<int64_t>(cell));
  if (std::holds_alternative<double>(cell)) {
    std::string text = format_real(std::get<double>(cell), column.decimals);
    return text.empty() ? JsonValue::null() : JsonValue::raw_number(text);
  }
  if (std::holds_alternative<std::string>(cell))
    return JsonValue::string(printable(std::get<std::string>(cell), Backslash::escape));
  return JsonValue::null();
}

const char* status_name(RowStatus status) {
  for (const StatusName& entry : kStatusNames)
    if (entry.status == status) return entry.name;
  return "?";
}

std::optional<RowStatus> status_named(std::string_view name) {
  for (const StatusName& entry : kStatusNames)
    if (name == entry.name) return entry.status;
  return std::nullopt;
}

bool status_allowed(RowKind kind, RowStatus status) {
  for (const StatusName& entry : kStatusNames)
    if (entry.status == status) return entry.kinds & (1u << unsigned(kind));
  return false;
}

void RowCells::set(ColumnId column, Cell value, size_t room) {
  uint64_t bit = uint64_t(1) << size_t(column);
  auto at = cells_.begin() + std::popcount(present_ & (bit - 1));
  if (present_ & bit) {
    *at = std::move(value);
    return;
  }
  if (cells_.size() == cells_.capacity()) {
    // Room for the kind's columns at once: not a vector's doubling, which a copied row (its
    // capacity its size) would otherwise get on its next cell and keep.
    size_t offset = size_t(at - cells_.begin());
    cells_.reserve(std::max(room, cells_.size() + 1));
    at = cells_.begin() + ptrdiff_t(offset);
  }
  cells_.insert(at, std::move(value));
  present_ |= bit;
}

Row& Row::set(ColumnId column, Cell value) {
  // The number of columns of each kind, counted once from the table.
  static const std::array<size_t, 3> columns_of_kind = [] {
    std::array<size_t, 3> counts{};
    for (const Column& c : kColumns)
      for (size_t k = 0; k < counts.size(); ++k) counts[k] += (c.kinds >> k) & 1;
    return counts;
  }();
  cells_.set(column, std::move(value), columns_of_kind.at(size_t(kind)));
  return *this;
}

std::string Row::text(ColumnId column) const {
  const Cell& cell = get(column);
  return std::holds_alternative<std::string>(cell) ? std::get<std::string>(cell) : std::string();
}

std::optional<RowStatus> Row::status() const {
  const Cell& cell = get(ColumnId::status);
  if (!std::holds_alternative<std::string>(cell)) return std::nullopt;
  return status_named(std::get<std::string>(cell));
}

// File columns are summed over file rows, merge-only columns over merge rows, so that
// input_bytes counts every rank file once.
Totals compute_totals(const std::vector<Row>& rows) {
  Totals totals;
  for (RowKind kind : {RowKind::file, RowKind::merge, RowKind::problem}) {
    std::string plural = std::string(kind_name(kind)) + "s";
    totals.counts[plural] = 0;
    for (RowStatus status : {RowStatus::ok, RowStatus::skipped, RowStatus::failed})
      if (kind != RowKind::problem || status != RowStatus::ok) totals.counts[plural + "_" + status_name(status)] = 0;
    if (kind == RowKind::problem) totals.counts[plural + "_" + status_name(RowStatus::warning)] = 0;
  }
  for (const Row& row : rows) {
    std::string plural = std::string(kind_name(row.kind)) + "s";
    totals.counts[plural]++;
    // A row without a status (never written so) counts under "<kind>s_".
    std::optional<RowStatus> status = row.status();
    totals.counts[plural + "_" + (status ? status_name(*status) : row.text(ColumnId::status))]++;
    for (size_t c = 0; c < kColumns.size(); ++c) {
      const Column& column = kColumns[c];
      if (!column.summed) continue;
      RowKind summed_kind = (column.kinds & F) ? RowKind::file : RowKind::merge;
      if (row.kind != summed_kind) continue;
      const Cell& cell = row.get(c);
      Cell& sum = totals.sums[c];
      if (std::holds_alternative<int64_t>(cell)) {
        int64_t before = std::holds_alternative<int64_t>(sum) ? std::get<int64_t>(sum) : 0, after;
        if (__builtin_add_overflow(before, std::get<int64_t>(cell), &after)) {
          totals.overflowed.insert(column.name);
          after = before;
        }
        sum = after;
      } else if (std::holds_alternative<double>(cell)) {
        sum = (std::holds_alternative<double>(sum) ? std::get<double>(sum) : 0.0) + std::get<double>(cell);
      }
    }
  }
  for (size_t c = 0; c < kColumns.size(); ++c) {
    bool infinite = std::holds_alternative<double>(totals.sums[c]) && !std::isfinite(std::get<double>(totals.sums[c]));
    if (infinite) totals.overflowed.insert(kColumns[c].name);
  }
  for (size_t c = 0; c < kColumns.size(); ++c)
    if (totals.overflowed.count(kColumns[c].name)) totals.sums[c] = std::monostate();
  return totals;
}

// The totals object of report_json().
JsonValue totals_json(const std::vector<Row>& rows) {
  Totals totals = compute_totals(rows);
  JsonValue out = JsonValue::object();
  for (const auto& [key, value] : totals.counts) out.set(key, JsonValue::integer(value));
  for (size_t c = 0; c < kColumns.size(); ++c)
    if (kColumns[c].summed) out.set(kColumns[c].name, cell_json(totals.sums[c], kColumns[c]));
  JsonValue unmatched = JsonValue::array();
  for (const auto& [dir, count] : unmatched_iterations(rows))
    unmatched.push(JsonValue::string(printable(dir, Backslash::escape)));
  out.set("iterations_with_unmatched_send_recv", unmatched);
  return out;
}

const char* kind_name(RowKind kind) {
  switch (kind) {
    case RowKind::file:
      return "file";
    case RowKind::merge:
      return "merge";
    case RowKind::problem:
      return "problem";
  }
  return "?";
}

const std::array<Column, kColumnCount>& report_columns() { return kColumns; }

std::string_view column_name_in_schema(std::string_view name, int version) {
  if (version < 3)
    for (const RenamedColumn& renamed : kRenamedColumns)
      if (name == renamed.name) return renamed.schema2;
  return name;
}

void sort_rows(std::vector<Row>& rows) {
  auto number = [](const Row& row, ColumnId column) {
    const Cell& cell = row.get(column);
    return std::holds_alternative<int64_t>(cell) ? std::get<int64_t>(cell) : int64_t(0);
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    auto key = [&](const Row& row) {
      return std::make_tuple(row.text(ColumnId::dir), int(row.kind), number(row, ColumnId::rank),
                             row.text(ColumnId::file), row.text(ColumnId::error));
    };
    return key(a) < key(b);
  });
}

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string cell_text(const Cell& cell, const Column& column) {
  if (std::holds_alternative<int64_t>(cell)) return std::to_string(std::get<int64_t>(cell));
  if (std::holds_alternative<double>(cell)) return format_real(std::get<double>(cell), column.decimals);
  if (!std::holds_alternative<std::string>(cell)) return "";
  // CSV injection (OWASP): a spreadsheet runs a cell that starts with = + - @ (or tab, CR)
  // as a formula, so a directory named "=HYPERLINK(...)" would be live in the report.
  // Such text cells get a leading ', and so do cells that already start with ', which
  // keeps the rule reversible: strip one leading ' from a text cell. Numbers are never
  // prefixed (a count is written as digits only). printable() has already escaped tab and
  // CR; they are in the list for whatever reaches here.
  std::string text = printable(std::get<std::string>(cell), Backslash::escape);
  if (!text.empty() && std::string_view("=+-@\t\r'").find(text[0]) != std::string_view::npos) text.insert(0, 1, '\'');
  return text;
}

std::optional<std::string> name_from_report(std::string_view text) {
  std::string bytes;
  bytes.reserve(text.size());
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;  // printable() writes lower case only
  };
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') {
      bytes += text[i];
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '\\') {
      bytes += '\\';
      i += 1;
    } else if (i + 3 < text.size() && text[i + 1] == 'x' && hex(text[i + 2]) >= 0 && hex(text[i + 3]) >= 0) {
      bytes += char(hex(text[i + 2]) << 4 | hex(text[i + 3]));
      i += 3;
    } else {
      return std::nullopt;
    }
  }
  // Only the form printable() writes: "\x41" or a raw control character would decode to
  // bytes whose escaped form is another text, and a report must read back as it was written.
  if (printable(bytes, Backslash::escape) != text) return std::nullopt;
  return bytes;
}

std::string summarise_list(const std::vector<std::string>& first, int64_t total) {
  std::string out;
  for (size_t i = 0; i < first.size() && i < kListLimit; ++i) out += (i ? " " : "") + first[i];
  int64_t shown = int64_t(std::min(first.size(), kListLimit));
  if (total > shown) out += " ... and " + std::to_string(total - shown) + " more";
  return out;
}

std::vector<std::pair<std::string, int64_t>> unmatched_iterations(const std::vector<Row>& rows) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const Row& row : rows) {
    if (row.kind != RowKind::merge) continue;
    const Cell& cell = row.get(ColumnId::pp_send_recv_unmatched);
    if (std::holds_alternative<int64_t>(cell) && std::get<int64_t>(cell) > 0)
      out.push_back({row.text(ColumnId::dir), std::get<int64_t>(cell)});
  }
  return out;
}

bool has_failures(const std::vector<Row>& rows) {
  for (const Row& row : rows) {
    if (row.status() == RowStatus::failed) return true;
    // A compacted copy that does not give its original back (sweep --remove-originals).
    if (row.text(ColumnId::original).rfind(kOriginalUnfaithful, 0) == 0) return true;
  }
  return false;
}

}  // namespace tracelane::cli
