// `report --combine`: the partial reports of `sweep --shard K/N` joined into the report a
// single node would have written. Rows are the union, sorted by their own values; totals
// are recomputed; whatever is missing or inconsistent (unreadable reports, missing or
// repeated shards, another root) becomes a failed problem row, so that the combined report
// is failed in itself, not only in the exit status.
//
// Shards must have split one list of iteration directories (iteration_plan.hpp), and each
// report records the plan it split. A report of another plan than the first report's, or
// of none (an older tracelane's), is left out, as a shard of another count is. Then what
// the reports kept took must be their plan, each iteration once and with a row: every
// iteration taken twice or with no row, every row given twice or of an iteration its
// report did not take is named, and, with every shard present, the iterations taken must
// be the plan's (its count and digest) at their shards' positions.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "report_cells.hpp"

namespace tracelane::cli {

namespace {

// A name from the tree in a problem line: names can be longer than PATH_MAX, and a line
// lists ten of them (a row: its dir and file).
std::string listed(const std::string& name) { return name.size() <= 120 ? name : name.substr(0, 120) + "..."; }

// One summarised problem line: `what`, then the first kListLimit items and a count.
struct ProblemList {
  std::string what;
  std::vector<std::string> first;
  int64_t count = 0;

  void add(const std::string& item) {
    if (count++ < int64_t(kListLimit)) first.push_back(item);
  }
  void report_into(std::vector<std::string>& problems) const {
    if (count) problems.push_back(what + ": " + summarise_list(first, count));
  }
};

std::string plan_label(const IterationPlan& plan) {
  return std::to_string(plan.count) + " iterations, digest " + short_digest(plan.digest);
}

std::string which(const Report& report) {
  return report.shard ? "shard " + report.shard->label() : std::string("an unsharded report");
}

// The reports whose rows are combined, with their names, and the plan they share.
struct Selected {
  std::vector<std::pair<const Report*, std::string>> reports;
  const Report* planned = nullptr;  // the first report with a plan: the plan every report must share
  std::string planned_name;
  std::map<int, std::string> shard_source;  // one entry per partial report, never per shard of N
};

// The reports kept: of one root, with a plan, the first report's plan, one of its N
// shards and each shard once; every other one is a problem line and left out.
Selected select_reports(const std::vector<Report>& partials, Combined& combined) {
  Selected selected;
  const Report* first = nullptr;
  for (const Report& partial : partials) {
    std::string name = partial.source.empty() ? std::string("a partial report") : partial.source;
    if (!first) {
      first = &partial;
      combined.report.root = partial.root;
    } else if (partial.root != first->root) {
      combined.problems.push_back(name + ": a report of root " + partial.root + ", not of " + first->root);
    }
    // Without one plan, positions in two shards' lists name different iterations: some
    // would be combined twice, others by no report, and nothing here could tell.
    if (!partial.plan) {
      combined.problems.push_back(
          name + ": " + which(partial) +
          " records no iteration plan (a report of schema 3 or older, or a combined report that "
          "did not account for its plan), so nothing shows it split the list the others did; "
          "left out (sweep it again)");
      continue;
    }
    if (!selected.planned) {
      selected.planned = &partial;
      selected.planned_name = name;
    } else if (partial.plan->digest != selected.planned->plan->digest ||
               partial.plan->count != selected.planned->plan->count) {
      combined.problems.push_back(name + ": " + which(partial) + " worked from another plan (" +
                                  plan_label(*partial.plan) + ") than " + selected.planned_name + ", " +
                                  which(*selected.planned) + " (" + plan_label(*selected.planned->plan) +
                                  "); left out: the shards of one array must split one list of iterations (sweep "
                                  "ROOT --write-plan FILE once, then every shard with --plan FILE)");
      continue;
    }
    if (partial.shard) {
      auto [index, count] = *partial.shard;
      if (!combined.shard_count) combined.shard_count = count;
      // Rows of another partition of the tree, or a second report of one shard, would
      // repeat rows: they are left out, and the combined report says so.
      if (count != *combined.shard_count) {
        combined.problems.push_back(name + ": shard " + partial.shard->label() + " is not one of the " +
                                    std::to_string(*combined.shard_count) + " shards of the first report; left out");
        continue;
      }
      auto [it, inserted] = selected.shard_source.emplace(index, name);
      if (!inserted) {
        combined.problems.push_back(name + ": shard " + partial.shard->label() + " given twice (also " + it->second +
                                    "); left out");
        continue;
      }
    }
    selected.reports.emplace_back(&partial, name);
  }
  return selected;
}

// The rows of the reports kept, and the iterations each took (returned: iteration -> the
// report that took it). Each iteration of the plan once, with a row; each row once, of an
// iteration its report took; what is not is a problem line.
std::map<std::string, std::string> join_rows(const std::vector<std::pair<const Report*, std::string>>& reports,
                                             Combined& combined) {
  std::map<std::string, std::string> taken_by;
  std::map<std::tuple<RowKind, std::string, std::string>, std::string> row_source;  // (kind, dir, file) -> report
  ProblemList taken_twice{"iterations taken by two reports", {}, 0};
  ProblemList without_row{"iterations of the plan with no row (swept by no shard)", {}, 0};
  ProblemList repeated{"rows given twice (the second left out)", {}, 0};
  ProblemList unplanned{"rows of an iteration their report's plan did not take (left out)", {}, 0};
  for (const auto& [partial, name] : reports) {
    const std::vector<std::string>& taken = partial->plan->iterations;
    std::set<std::string_view> dirs;
    for (const Row& row : partial->rows)
      if (std::holds_alternative<std::string>(row.get(ColumnId::dir)))
        dirs.insert(std::get<std::string>(row.get(ColumnId::dir)));
    for (const std::string& iteration : taken) {
      auto [it, inserted] = taken_by.emplace(iteration, name);
      if (!inserted) taken_twice.add(listed(iteration) + " (" + it->second + ", " + name + ")");
      if (!dirs.count(iteration)) without_row.add(listed(iteration) + " (" + which(*partial) + ")");
    }
    combined.report.runs.insert(combined.report.runs.end(), partial->runs.begin(), partial->runs.end());
    for (const Row& row : partial->rows) {
      if (row.kind != RowKind::problem) {
        std::string dir = row.text(ColumnId::dir);
        std::string label =
            listed(dir) + (row.kind == RowKind::file ? "/" + listed(row.text(ColumnId::file)) : " (merge)");
        if (!std::binary_search(taken.begin(), taken.end(), dir)) {
          unplanned.add(label + " (" + name + ")");
          continue;
        }
        auto key = std::make_tuple(row.kind, dir, row.kind == RowKind::file ? row.text(ColumnId::file) : std::string());
        auto [it, inserted] = row_source.emplace(std::move(key), name);
        if (!inserted) {
          repeated.add(label + " (" + it->second + ", " + name + ")");
          continue;
        }
      }
      combined.report.rows.push_back(row);
    }
  }
  for (const ProblemList* list : {&taken_twice, &without_row, &repeated, &unplanned})
    list->report_into(combined.problems);
  return taken_by;
}

// The shards of N that no report gave, and how much of the plan they held.
void note_missing_shards(const Selected& selected, const std::map<std::string, std::string>& taken_by,
                         Combined& combined) {
  if (!combined.shard_count) return;
  // Counted, not listed: N is at most kMaxShards, and only the first few are kept.
  std::vector<std::string> first_missing;
  for (int k = 0; k < *combined.shard_count; ++k) {
    if (selected.shard_source.count(k)) continue;
    if (combined.missing_shards.size() < kListLimit) {
      combined.missing_shards.push_back(k);
      first_missing.push_back(std::to_string(k));
    }
    combined.missing_shard_count++;
  }
  // How much of the plan they held, when the reports kept do not account for all of it.
  int64_t untaken = selected.planned->plan->count - int64_t(taken_by.size());
  if (combined.missing_shard_count)
    combined.problems.push_back("missing shards: " + summarise_list(first_missing, combined.missing_shard_count) +
                                " (of " + std::to_string(*combined.shard_count) + ")" +
                                (untaken > 0 ? "; " + std::to_string(untaken) + " of the plan's " +
                                                   std::to_string(selected.planned->plan->count) +
                                                   " iterations are in no report given"
                                             : std::string()));
}

// With nothing else amiss, the iterations taken must be the plan, each at a position of
// the shard that took it: a report whose list was cut or edited names other iterations.
// Then the combined report records the whole plan.
void check_the_plan(const Selected& selected, const std::map<std::string, std::string>& taken_by, Combined& combined) {
  if (!selected.planned || !combined.problems.empty()) return;
  std::vector<std::string> all;
  for (const auto& entry : taken_by) all.push_back(entry.first);
  if (int64_t(all.size()) != selected.planned->plan->count || plan_digest(all) != selected.planned->plan->digest) {
    combined.problems.push_back("the iterations the reports took (" + std::to_string(all.size()) + ", digest " +
                                short_digest(plan_digest(all)) + ") are not their plan (" +
                                plan_label(*selected.planned->plan) + ")");
  } else {
    ProblemList misplaced{"iterations at a position of another shard", {}, 0};
    for (const auto& [partial, name] : selected.reports) {
      if (!partial->shard) continue;
      auto [index, count] = *partial->shard;
      for (const std::string& iteration : partial->plan->iterations) {
        size_t position = size_t(std::lower_bound(all.begin(), all.end(), iteration) - all.begin());
        if (position % size_t(count) != size_t(index))
          misplaced.add(listed(iteration) + " (position " + std::to_string(position) + ", in " + name + ", " +
                        which(*partial) + ")");
      }
    }
    misplaced.report_into(combined.problems);
  }
  if (combined.problems.empty())
    combined.report.plan = IterationPlan{selected.planned->plan->digest, selected.planned->plan->count, all};
}

}  // namespace

Combined combine_reports(const std::vector<Report>& partials, const std::vector<std::string>& unreadable) {
  Combined combined;
  combined.problems = unreadable;
  Selected selected = select_reports(partials, combined);
  std::map<std::string, std::string> taken_by = join_rows(selected.reports, combined);
  note_missing_shards(selected, taken_by, combined);
  check_the_plan(selected, taken_by, combined);
  // Each partial report's sums fit; all of them together may not: say so, never wrap.
  for (const std::string& column : compute_totals(combined.report.rows).overflowed)
    combined.problems.push_back("the sum of " + column +
                                " over all reports is beyond int64 (or not finite); its total is null");
  for (const std::string& problem : combined.problems) {
    Row row(RowKind::problem);
    row.set(ColumnId::dir, std::string(".")).set_status(RowStatus::failed).set(ColumnId::error, problem);
    combined.report.rows.push_back(std::move(row));
  }
  sort_rows(combined.report.rows);
  return combined;
}

}  // namespace tracelane::cli
