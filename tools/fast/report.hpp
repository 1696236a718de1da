#pragma once
// `fast report DIR`: one self-contained HTML page (docs/compare.md "The report") from the metrics of
// one run or of a `fast compare` output folder. The page inlines its data (JSON), its script and
// Chart.js (Debian's libjs-chart.js, embedded in the command when it is built), so it opens
// offline and makes no network request (its Content-Security-Policy forbids any).
//
// What DIR may be:
//   - a `fast compare` output folder: NN-SLUG/K/metrics.jsonl per configuration and repetition,
//     NN-SLUG/config.toml; compare.csv gives the table (rebuilt from the summaries otherwise);
//   - a folder of runs' metrics files (*.jsonl): one run per NAME.jsonl, or per set of NAME.rankR.jsonl
//     files of a run of several processes (merged), in name order;
//   - a metrics file itself; or the --metrics path NAME.jsonl of a run of several processes, which
//     they write as NAME.rankR.jsonl, or one of those rank files: every NAME.rankR.jsonl beside it.
// Errors (IoError, InvalidArgument) name the path and what was expected there, before anything
// is written.

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fast::cli {

// One repetition of one configuration, as read from its metrics file(s).
struct ReportRun {
  std::string label;                    // the configuration's label (config.toml's "# run: LABEL", else the
                                        // "NN-SLUG" folder's name, or the metrics file's stem)
  int repetition = 1;                   // 1-based
  std::string config;                   // the configuration's config.toml text ("" when there is none)
  std::vector<nlohmann::json> records;  // every record of its metrics file(s), start first, end last
};

// Finds and reads the runs of DIR (see above), in folder order; throws when there are none.
std::vector<ReportRun> read_report_runs(const std::filesystem::path& dir);
// The runs of a `fast compare` output folder that have metrics files (none yet: empty).
std::vector<ReportRun> read_compare_runs(const std::filesystem::path& dir);

// The data the page draws: per run its curves (evaluations, training loss, cumulative bytes,
// staleness), its summary, idle seconds per worker, bytes per link; plus the table.
nlohmann::json report_data(const std::vector<ReportRun>& runs, const std::string& title);

// The whole page: the template with Chart.js, the page script and `data` inlined.
std::string report_html(const nlohmann::json& data);

// Reads DIR, writes the page to `out` (default: DIR/report.html, or NAME.html beside a run's
// metrics file) and returns its path.
std::filesystem::path write_report(const std::filesystem::path& dir, const std::filesystem::path& out = {});
// Writes the page of `runs` to `out`, titled `title`.
void write_report_page(const std::vector<ReportRun>& runs, const std::filesystem::path& out, const std::string& title);

}  // namespace fast::cli
