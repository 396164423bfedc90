// `report --combine`: the partial reports of `sweep --shard K/N` joined into the report a
// single node would have written. Rows are the union, sorted by their own values; totals
// are recomputed; whatever is missing or inconsistent (unreadable reports, missing or
// repeated shards, another root) becomes a failed problem row, so that the combined report
// is failed in itself, not only in the exit status.
#include <map>

#include "report_cells.hpp"

namespace tracelane::cli {

Combined combine_reports(const std::vector<Report>& partials, const std::vector<std::string>& unreadable) {
  Combined combined;
  combined.problems = unreadable;
  std::map<int, std::string> shard_source;  // one entry per partial report, never per shard of N
  const Report* first = nullptr;
  for (const Report& partial : partials) {
    std::string name = partial.source.empty() ? std::string("a partial report") : partial.source;
    if (!first) {
      first = &partial;
      combined.report.root = partial.root;
    } else if (partial.root != first->root) {
      combined.problems.push_back(name + ": a report of root " + partial.root + ", not of " + first->root);
    }
    if (partial.shard) {
      auto [index, count] = *partial.shard;
      if (!combined.shard_count) combined.shard_count = count;
      // Rows of another partition of the tree, or a second report of one shard, would
      // repeat rows: they are left out, and the combined report says so.
      if (count != *combined.shard_count) {
        combined.problems.push_back(name + ": shard " + shard_label(*partial.shard) + " is not one of the " +
                                    std::to_string(*combined.shard_count) + " shards of the first report; left out");
        continue;
      }
      auto [it, inserted] = shard_source.emplace(index, name);
      if (!inserted) {
        combined.problems.push_back(name + ": shard " + shard_label(*partial.shard) + " given twice (also " +
                                    it->second + "); left out");
        continue;
      }
    }
    combined.report.runs.insert(combined.report.runs.end(), partial.runs.begin(), partial.runs.end());
    combined.report.rows.insert(combined.report.rows.end(), partial.rows.begin(), partial.rows.end());
  }
  if (combined.shard_count) {
    // Counted, not listed: N is at most kMaxShards, and only the first few are kept.
    std::vector<std::string> first_missing;
    for (int k = 0; k < *combined.shard_count; ++k) {
      if (shard_source.count(k)) continue;
      if (combined.missing_shards.size() < kListLimit) {
        combined.missing_shards.push_back(k);
        first_missing.push_back(std::to_string(k));
      }
      combined.missing_shard_count++;
    }
    if (combined.missing_shard_count)
      combined.problems.push_back("missing shards: " + summarise_list(first_missing, combined.missing_shard_count) +
                                  " (of " + std::to_string(*combined.shard_count) + ")");
  }
  // Each partial report's sums fit; all of them together may not: say so, never wrap.
  for (const std::string& column : compute_totals(combined.report.rows).overflowed)
    combined.problems.push_back("the sum of " + column + " over all reports is beyond int64 (or not finite); its total is null");
  for (const std::string& problem : combined.problems) {
    Row row(RowKind::problem);
    row.set("dir", std::string(".")).set("status", std::string("failed")).set("error", problem);
    combined.report.rows.push_back(std::move(row));
  }
  sort_rows(combined.report.rows);
  return combined;
}

}  // namespace tracelane::cli
