// tracelane._core: the commands of src/cli as Python functions, for the package beside it
// (src/python/tracelane/). Each calls the very function its command calls
// (trace_commands.hpp, sweep/sweep.hpp) with the GIL released, and returns what the
// command prints, as JSON text for the package to json.loads. Arguments are checked as the
// command line checks them, with its messages. A failure is raised as
// _core.Failure(kind, message, exit_status): `kind` names the exception class the package
// raises (errors.py), `message` is the line the command prints on stderr, `exit_status`
// the status it exits with.
//
// pybind11 because the issue asks for it and Debian 12 ships it (pybind11-dev,
// python3-pybind11 2.10): header-only, nothing to download, and it builds against the
// interpreter it finds.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <new>
#include <optional>
#include <string>
#include <utility>

#include "files.hpp"
#include "memory_budget.hpp"
#include "options.hpp"
#include "sweep/sweep.hpp"
#include "trace_commands.hpp"
#include "trace_job.hpp"

namespace py = pybind11;
using namespace tracelane;
using namespace tracelane::cli;

namespace {

PyObject* failure_type = nullptr;  // _core.Failure

// Paths and messages are bytes (a name in a shared tree need not be UTF-8): Python gets
// them as os.fsdecode() would, and the package gives paths as os.fsencode() bytes.
py::str text(const std::string& bytes) {
  PyObject* decoded = PyUnicode_DecodeUTF8(bytes.data(), Py_ssize_t(bytes.size()), "surrogateescape");
  if (!decoded) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(decoded);
}

// The exception class errors.py raises for the exception being handled, by its C++ type.
const char* kind_of_exception() {
  try {
    throw;
  } catch (const TreeBusy&) {
    return "tree_busy";
  } catch (const UsageError&) {
    return "usage";
  } catch (const BadRules&) {
    return "usage";
  } catch (const OutputExists&) {
    return "output_exists";
  } catch (const OutputRefused&) {
    return "output_refused";
  } catch (const InputChanged&) {
    return "input_changed";
  } catch (const FileError&) {
    return "file";
  } catch (const BadTrace&) {
    return "trace";
  } catch (const RestoreRefused&) {
    return "restore";
  } catch (const std::bad_alloc&) {
    return "memory";
  } catch (...) {
    return "error";
  }
}

struct Failure {
  std::string kind, message;
  int exit_status = kExitFailed;
};

// Runs `work` without the GIL (it touches no Python object), then returns its result or
// raises its failure as _core.Failure. `subject` heads the message of a failure that names
// no file (out of memory); `failed` is the command's exit status for a failure that is no
// usage error (merge: 2).
template <class Work>
auto without_gil(const fs::path& subject, int failed, Work&& work) {
  using Result = decltype(work());
  std::optional<Result> result;
  std::optional<Failure> failure;
  {
    py::gil_scoped_release release;
    try {
      result.emplace(work());
    } catch (...) {
      failure = Failure{kind_of_exception(), describe_exception(subject), exit_status_of_exception(failed)};
    }
  }
  if (failure) {
    py::tuple args = py::make_tuple(failure->kind, text(failure->message), failure->exit_status);
    PyErr_SetObject(failure_type, args.ptr());
    throw py::error_already_set();
  }
  return std::move(*result);
}

std::string optional_text(const std::optional<std::string>& value) { return value.value_or(std::string()); }

// The options compact and merge share, checked in the order and with the messages of the
// command line (check_level, load_rules, --jobs): a UsageError or BadRules.
SharedOptions trace_options(const std::string& command, const std::optional<std::string>& out, bool overwrite,
                            int level, const std::optional<std::string>& rules,
                            const std::optional<std::string>& preview, bool no_restore_data, std::optional<int> jobs,
                            bool single_gzip_member) {
  SharedOptions shared;
  shared.output = optional_text(out);
  shared.overwrite = overwrite;
  shared.level = level;
  shared.rules_file = optional_text(rules);
  shared.preview = optional_text(preview);
  shared.no_restore_data = no_restore_data;
  shared.single_gzip_member = single_gzip_member;
  if (!level_in_range(level)) throw UsageError("tracelane " + command + ": --level must be between 0 and 12");
  read_rules(shared);
  if (jobs) {
    if (*jobs < 1) throw UsageError("tracelane " + command + ": --jobs must be at least 1");
    shared.jobs = *jobs;
  }
  return shared;
}

std::optional<std::string> optional_line(const std::string& line) {
  if (line.empty()) return std::nullopt;
  return line;
}

// compact(): (summary JSON, the already-laned line or None, what became of the original
// or None). `remove_original`: the profiler handler's keep_original=False: once the copy
// is written beside the original, the original is removed only if the copy, read back,
// restores it byte for byte (remove_original(), as sweep --remove-originals verifies).
py::tuple compact(const std::string& input, const std::optional<std::string>& out, bool overwrite, int level,
                  bool no_pp_flows, bool force, const std::optional<std::string>& rules,
                  const std::optional<std::string>& preview, bool no_restore_data, std::optional<int> jobs,
                  bool single_gzip_member, bool remove_original) {
  const fs::path path(input);
  auto [result, removal] = without_gil(path, kExitFailed, [&] {
    SharedOptions shared =
        trace_options("compact", out, overwrite, level, rules, preview, no_restore_data, jobs, single_gzip_member);
    TraceCommandResult done = compact_file(path, shared, !no_pp_flows, force, nullptr);
    std::optional<std::string> verdict;
    if (remove_original && !done.output.empty()) {
      if (done.output.parent_path() != path.parent_path()) {
        verdict = "kept: its compacted copy is not beside it";
      } else {
        OriginalFile file;
        file.dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
        file.name = path.filename().string();
        file.output_name = done.output.filename().string();
        file.identity = done.input;
        file.estimate = done.input_bytes;
        verdict = original_cell(cli::remove_original(file, default_memory_budget()));
      }
    }
    return std::make_pair(std::move(done), std::move(verdict));
  });
  return py::make_tuple(text(result.summary.dump(2)), optional_line(result.already_laned), removal);
}

py::tuple merge(const std::string& input, const std::optional<std::string>& out, bool overwrite, int level, bool force,
                const std::optional<std::string>& rules, const std::optional<std::string>& preview,
                bool no_restore_data, std::optional<int> jobs, bool single_gzip_member) {
  const fs::path path(input);
  TraceCommandResult result = without_gil(path, kExitUsage, [&] {
    SharedOptions shared =
        trace_options("merge", out, overwrite, level, rules, preview, no_restore_data, jobs, single_gzip_member);
    return merge_rank_files(path, shared, force, nullptr);
  });
  return py::make_tuple(text(result.summary.dump(2)), optional_line(result.already_laned));
}

py::str restore(const std::string& input, const std::optional<std::string>& out, std::optional<int64_t> rank,
                bool overwrite, int level) {
  const fs::path path(input);
  std::string summary = without_gil(path, kExitFailed, [&] {
    if (!level_in_range(level)) throw UsageError("tracelane restore: --level must be between 0 and 12");
    SharedOptions shared;
    shared.output = optional_text(out);
    shared.overwrite = overwrite;
    shared.level = level;
    return restore_file(path, shared, rank).dump(2);
  });
  return text(summary);
}

// sweep(): the report's JSON text (tracelane_report.json's), or with dry_run the listing
// the command prints.
py::str sweep(const std::string& root, std::optional<int> jobs, const std::optional<std::string>& memory,
              bool overwrite, bool dry_run, const std::optional<std::string>& shard,
              const std::optional<std::string>& plan, const std::optional<std::string>& report_dir, int level,
              bool force, const std::optional<std::string>& rules, bool quiet, bool no_restore_data,
              bool remove_originals, bool single_gzip_member) {
  const fs::path path(root);
  std::string out = without_gil(path, kExitFailed, [&] {
    SweepOptions options;
    options.overwrite = overwrite;
    options.dry_run = dry_run;
    options.quiet = quiet;
    options.remove_originals = remove_originals;
    SweepArguments arguments;
    arguments.root = root;
    arguments.report_dir = optional_text(report_dir);
    arguments.memory = optional_text(memory);
    arguments.shard = optional_text(shard);
    arguments.plan = optional_text(plan);
    arguments.jobs = jobs;
    arguments.force = force;
    arguments.shared.rules_file = optional_text(rules);
    arguments.shared.level = level;
    arguments.shared.no_restore_data = no_restore_data;
    arguments.shared.single_gzip_member = single_gzip_member;
    // The messages the command prints: "tracelane sweep: " before a usage error's.
    try {
      configure_sweep(std::move(arguments), options);
    } catch (const BadRules&) {
      throw;
    } catch (const UsageError& e) {
      throw UsageError(std::string("tracelane sweep: ") + e.what());
    }
    SweepOutcome outcome;
    try {
      outcome = sweep_tree(options, false);  // Python keeps its own signal handlers
    } catch (const TreeBusy& e) {
      throw TreeBusy(std::string("tracelane sweep: ") + e.what());
    }
    if (dry_run) return outcome.dry_run_listing;
    if (outcome.report_failure) std::rethrow_exception(outcome.report_failure);
    return report_json(outcome.report);
  });
  return text(out);
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "tracelane's C++ core: the commands compact, merge, restore and sweep (use the tracelane package)";
  m.attr("__version__") = TRACELANE_VERSION;
  failure_type = PyErr_NewException("tracelane._core.Failure", PyExc_Exception, nullptr);
  if (!failure_type) throw py::error_already_set();
  m.attr("Failure") = py::handle(failure_type);
  m.def("compact", &compact, py::arg("input"), py::arg("out"), py::arg("overwrite"), py::arg("level"),
        py::arg("no_pp_flows"), py::arg("force"), py::arg("rules"), py::arg("preview"), py::arg("no_restore_data"),
        py::arg("jobs"), py::arg("single_gzip_member"), py::arg("remove_original"));
  m.def("merge", &merge, py::arg("input"), py::arg("out"), py::arg("overwrite"), py::arg("level"), py::arg("force"),
        py::arg("rules"), py::arg("preview"), py::arg("no_restore_data"), py::arg("jobs"),
        py::arg("single_gzip_member"));
  m.def("restore", &restore, py::arg("input"), py::arg("out"), py::arg("rank"), py::arg("overwrite"), py::arg("level"));
  m.def("sweep", &sweep, py::arg("root"), py::arg("jobs"), py::arg("memory"), py::arg("overwrite"), py::arg("dry_run"),
        py::arg("shard"), py::arg("plan"), py::arg("report_dir"), py::arg("level"), py::arg("force"), py::arg("rules"),
        py::arg("quiet"), py::arg("no_restore_data"), py::arg("remove_originals"), py::arg("single_gzip_member"));
}
