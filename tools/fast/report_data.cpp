// report_data(), report_html() and write_report() of report.hpp: from the records of each run to
// the series the page draws.

#include <algorithm>

#include <fmt/format.h>

#include "fast/core/error.hpp"
#include "fast/metrics/records.hpp"
#include "report.hpp"
#include "text_file.hpp"

namespace fast::cli {

std::string_view embedded_file(std::string_view name);  // report_assets.cpp (generated)

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

double number(const json& r, const char* field) {
  const auto it = r.find(field);
  return it != r.end() && it->is_number() ? it->get<double>() : 0.0;
}

// A null (NaN written by the metrics writer) stays null, so the page shows the gap.
json number_or_null(const json& r, const char* field) {
  const auto it = r.find(field);
  return it != r.end() && it->is_number() ? *it : json(nullptr);
}

// The workers of an elastic synchronous run from each step on: its `membership` records with
// `step` and `workers` (the group after the change). `changes` is empty when it has none (every
// run else, asynchronous elastic runs included, whose records carry no step).
struct GroupChange {
  double step = 0;
  int workers = 0;  // from `step` on
};

struct Groups {
  std::vector<GroupChange> changes;
  int first_workers = 0;  // the workers that started the run

  bool elastic() const { return !changes.empty(); }

  // Samples all workers had processed after `step` steps per worker: step x batch x workers,
  // with the workers of each stretch between group changes (an elastic loss or join).
  double samples_at(double step, double batch) const {
    double samples = 0, from = 0;
    int group = first_workers;
    for (const GroupChange& c : changes) {
      if (c.step >= step) break;
      samples += (c.step - from) * batch * group;
      from = c.step;
      group = c.workers;
    }
    return samples + (step - from) * batch * group;
  }
};

// The workers that started the run: `workers` of the start record when nothing changed; else,
// from the first change alone, the group after it less the one that joined, or plus the workers
// lost with it (its consecutive `lost` records of the same step and group, one per worker).
int starting_workers(const std::vector<json>& records, const std::vector<GroupChange>& changes, int workers) {
  if (changes.empty()) return workers;
  int lost = 0;
  for (const json& r : records) {
    if (r.value("event", "") != "membership" || !r.contains("step") || !r.contains("workers")) continue;
    const bool same = number(r, "step") == changes.front().step && r.value("workers", 0) == changes.front().workers;
    if (r.value("change", "") != "lost" || !same) break;
    ++lost;
  }
  return lost > 0 ? changes.front().workers + lost : changes.front().workers - 1;
}

Groups read_groups(const std::vector<json>& records, int workers) {
  Groups g;
  for (const json& r : records)
    if (r.value("event", "") == "membership" && r.contains("step") && r.contains("workers"))
      g.changes.push_back({number(r, "step"), static_cast<int>(number(r, "workers"))});
  g.first_workers = starting_workers(records, g.changes, workers);
  return g;
}

// The training records in rounds of one record per worker of the group (the run's workers, or the
// group after the latest elastic change; a change closes the round under way, which holds the
// records the survivors wrote up to the loss), the last round possibly short: the mean loss of the
// round, and the whole run's cumulative samples, bytes sent and mean staleness as of the round's
// last record (each worker's latest figures summed; staleness averaged over the workers that
// applied stale gradients, since a worker reports the lags of the gradients IT applied: under ps
// only the server ranks do). The samples of an elastic lockstep run are those of samples_at() at
// the round's step, as the accuracy's (a process that took a rank back reports the members' step,
// as if it had trained from the start; a lost worker's last steps are in no record).
// A figure that no train record of the run carries (a file from another writer, or an older
// version) is null in every point, so the page draws no line rather than one at zero.
void train_series(const std::vector<json>& records, int workers, double batch, const Groups& groups, json& run) {
  std::vector<double> samples(static_cast<std::size_t>(workers)), bytes(samples.size()), stale(samples.size());
  const auto carried = [&records](const char* field) {
    return std::ranges::any_of(records, [field](const json& r) {
      return r.value("event", "") == "train" && r.contains(field) && r[field].is_number();
    });
  };
  const bool has_samples = carried("samples") || groups.elastic(), has_bytes = carried("bytes_sent"),
             has_stale = carried("staleness_mean");
  const auto or_null = [](bool has, double v) { return has ? json(v) : json(nullptr); };
  json loss = json::array(), sent = json::array(), staleness = json::array();
  double loss_sum = 0;
  int loss_count = 0, in_round = 0;
  int group = groups.first_workers;
  const json* last = nullptr;  // the round's last record
  const auto close_round = [&] {
    double total = 0, all_bytes = 0, stale_sum = 0;
    int stale_workers = 0;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      if (!groups.elastic()) total += samples[i];
      all_bytes += bytes[i];
      if (stale[i] > 0) {
        stale_sum += stale[i];
        ++stale_workers;
      }
    }
    const double mean_stale = stale_workers > 0 ? stale_sum / stale_workers : 0.0;
    const json t = number_or_null(*last, "time");
    if (groups.elastic()) total = groups.samples_at(number(*last, "step"), batch);
    loss.push_back({t, or_null(has_samples, total), loss_count > 0 ? json(loss_sum / loss_count) : json(nullptr)});
    sent.push_back({t, or_null(has_bytes, all_bytes)});
    staleness.push_back({t, or_null(has_stale, mean_stale)});
    loss_sum = 0;
    loss_count = in_round = 0;
  };
  for (const json& r : records) {
    if (r.value("event", "") == "membership" && r.contains("workers")) {
      // The survivors' records up to the loss came before it: they close the old group's round.
      if (in_round > 0) close_round();
      group = std::max(1, r.value("workers", 1));
    }
    if (r.value("event", "") != "train") continue;
    const int w = r.value("worker", 0);
    if (w < 0 || w >= workers) continue;
    const auto wu = static_cast<std::size_t>(w);
    samples[wu] = number(r, "samples");
    bytes[wu] = number(r, "bytes_sent");
    stale[wu] = number(r, "staleness_mean");
    if (r["loss"].is_number()) {
      loss_sum += r["loss"].get<double>();
      ++loss_count;
    }
    last = &r;
    if (++in_round >= group) close_round();
  }
  if (in_round > 0) close_round();  // the records after the last full round: the run's final figures
  run["loss"] = loss;
  run["bytes"] = sent;
  run["staleness"] = staleness;
}

json run_data(const ReportRun& r) {
  const json& start = r.records.front();
  const json& last = r.records.back();
  const json summary = last.value("event", "") == "end" ? last : json::object();
  const int workers = std::max(1, start.value("workers", 1));
  const double batch = number(start, "batch");
  json run{{"label", r.repetition > 1 || r.label.empty() ? fmt::format("{} #{}", r.label, r.repetition) : r.label},
           {"config", r.config.empty() ? start.dump(2) : r.config},
           {"workers", workers},
           {"finished", !summary.empty()}};
  const Groups groups = read_groups(r.records, workers);
  json evals = json::array();
  for (const json& e : r.records)
    if (e.value("event", "") == "eval")
      evals.push_back({number_or_null(e, "time"),
                       e.contains("step") && e["step"].is_number() ? json(groups.samples_at(number(e, "step"), batch))
                                                                   : json(nullptr),
                       number_or_null(e, "accuracy"), number_or_null(e, "consensus_distance")});
  run["evals"] = evals;
  train_series(r.records, workers, batch, groups, run);
  json s = summary;
  for (const char* big : {"bytes_per_link", "idle_seconds", "steps_per_worker", "event", "time"}) s.erase(big);
  run["summary"] = s;
  // What the start record tells of a run without a summary (its table row).
  json begun = json::object();
  for (const char* field : {"strategy", "runtime", "workers"})
    if (start.contains(field)) begun[field] = start[field];
  run["start"] = begun;
  run["idle"] = summary.value("idle_seconds", json::array());
  run["links"] = summary.contains("bytes_per_link") ? summary["bytes_per_link"] : json(nullptr);  // null: not recorded
  return run;
}

// Inside the inlined JSON, "</script" would end its <script> element, and "<!--" followed by
// "<script" would make the HTML parser take the page's own script into it. '<' appears in JSON only
// inside strings, where \u003c is the same character: every one is written so.
std::string script_safe(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == '<')
      out += "\\u003c";
    else
      out += c;
  }
  return out;
}

void replace_once(std::string& page, std::string_view mark, std::string_view with) {
  const std::size_t at = page.find(mark);
  FAST_ENFORCE(at != std::string::npos, "fast report: the page template lacks '{}' (a build problem)", mark);
  page.replace(at, mark.size(), with);
}

}  // namespace

json report_data(const std::vector<ReportRun>& runs, const std::string& title) {
  json data{{"title", title}, {"runs", json::array()}};
  for (const ReportRun& r : runs) data["runs"].push_back(run_data(r));
  return data;
}

std::string report_html(const json& data) {
  std::string page(embedded_file("report.html"));
  FAST_ENFORCE(!page.empty(), "fast report: the page template is missing from this build");
  // The template holds the marks in the order chart, data, script; filling them from the last to
  // the first, each search meets the template's mark before any text inlined after it.
  replace_once(page, "/*FAST_REPORT_SCRIPT*/", embedded_file("report.js"));
  replace_once(page, "/*FAST_REPORT_DATA*/", script_safe(data.dump()));
  replace_once(page, "/*FAST_CHART_JS*/", embedded_file("chart.min.js"));
  return page;
}

fs::path write_report(const fs::path& dir, const fs::path& out) {
  // A folder given where the page's file is expected is a usage mistake, named before anything is read.
  FAST_ENFORCE(out.empty() || (!fs::is_directory(out) && out.has_filename()),
               "fast report: --out '{}' is a folder; expected the page's file (for example {})", out.string(),
               (out / "report.html").lexically_normal().string());
  const std::vector<ReportRun> runs = read_report_runs(dir);
  // A file names a run (report.hpp): its page is RUN.html beside it, RUN without any .rankR.
  const fs::path target = !out.empty()             ? out
                          : !fs::is_directory(dir) ? dir.parent_path() / (metrics::run_metrics_stem(dir) + ".html")
                                                   : dir / "report.html";
  write_report_page(runs, target, fs::absolute(dir).lexically_normal().filename().string());
  return target;
}

void write_report_page(const std::vector<ReportRun>& runs, const fs::path& target, const std::string& title) {
  write_text_file(target, report_html(report_data(runs, title)), "fast report");
}

}  // namespace fast::cli
