#include "compare_table.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "config.hpp"

namespace fast::cli {

namespace {

using nlohmann::json;

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Full precision for CSV: integers without a point, others in the shortest text that reads back
// to the same double.
std::string full_text(double v) {
  if (!std::isfinite(v)) return "";
  if (v == std::floor(v) && std::fabs(v) < 9e15) return fmt::format("{}", static_cast<long long>(v));
  return fmt::format("{}", v);
}

std::string json_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  if (v.is_number_float()) return full_text(v.get<double>());
  return v.dump();
}

Cell same(std::string text) { return {text, text}; }

Cell setting_cell(const Column& c, const RunResult& r) {
  // A strategy option that the run's strategy does not read (topology under allreduce) changed
  // nothing in that run: "-", as fast train warns.
  const settings::ConfigKey* key = settings::find_config_key(c.field);
  if (key != nullptr && key->strategy_option &&
      !settings::unread_strategy_options(r.options.worker.strategy.name, {key->name}).empty())
    return same("-");
  const json& first = r.summaries.front();
  if (first.contains(c.field) && (first[c.field].is_string() || first[c.field].is_number())) {
    const std::string text = json_text(first[c.field]);
    return same(text.empty() ? "-" : text);
  }
  if (key == nullptr) return same("-");
  const std::string text = key->get(r.options);
  return same(text.empty() ? "-" : text);
}

Cell median_cell(const Column& c, const RunResult& r) {
  std::vector<double> values;
  for (const json& s : r.summaries) {
    if (!s.contains(c.field)) return same("-");
    const json& v = s[c.field];
    if (v.is_null()) {
      values.push_back(kInfinity);
    } else if (v.is_number()) {
      values.push_back(v.get<double>());
    } else {
      return same("-");
    }
  }
  const double m = median(values);
  if (!std::isfinite(m)) return same("");
  return {full_text(m), fmt::format(fmt::runtime(c.md_format), m * c.md_scale)};
}

Cell cell(const Column& c, const RunResult& r) {
  switch (c.source) {
    case ColumnSource::label: return same(r.label);
    case ColumnSource::setting: return setting_cell(c, r);
    case ColumnSource::text: {
      const json& first = r.summaries.front();
      return same(first.contains(c.field) ? json_text(first[c.field]) : "-");
    }
    case ColumnSource::median: return median_cell(c, r);
    case ColumnSource::count: {
      long long n = 0;
      for (const json& s : r.summaries) n += s.contains(c.field) && !s[c.field].is_null();
      return same(fmt::format("{}", n));
    }
    case ColumnSource::repeats: return same(fmt::format("{}", r.summaries.size()));
    case ColumnSource::flag: {
      std::size_t n = 0;
      for (const json& s : r.summaries) {
        if (!s.contains(c.field) || !s[c.field].is_boolean()) return same("-");
        n += s[c.field].get<bool>() ? 1 : 0;
      }
      const std::string md = n == 0                    ? "no"
                             : n == r.summaries.size() ? "yes"
                                                       : fmt::format("{} of {}", n, r.summaries.size());
      return {fmt::format("{}", n), md};
    }
  }
  return same("-");
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string quoted = "\"";
  for (char ch : s) {
    if (ch == '"') quoted += '"';
    quoted += ch;
  }
  return quoted + "\"";
}

std::string md_field(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|') out += '\\';
    out += ch == '\n' ? ' ' : ch;
  }
  return out;
}

}  // namespace

const std::vector<Column>& compare_columns() {
  static const std::vector<Column> columns{
      {"run", "run", ColumnSource::label, "", ""},
      {"strategy", "strategy", ColumnSource::text, "strategy", ""},
      {"topology", "topology", ColumnSource::setting, "topology", ""},
      {"codec", "codec", ColumnSource::setting, "compress", ""},
      {"cluster", "cluster", ColumnSource::setting, "cluster", ""},
      {"runtime", "runtime", ColumnSource::text, "runtime", ""},
      {"workers", "workers", ColumnSource::text, "workers", ""},
      {"final_accuracy", "final accuracy", ColumnSource::median, "final_accuracy", "{:.4f}"},
      {"diverged", "diverged", ColumnSource::flag, "diverged", ""},
      {"time_to_target_seconds", "time to target s", ColumnSource::median, "time_to_target_seconds", "{:.2f}"},
      {"target_reached", "reached", ColumnSource::count, "time_to_target_seconds", ""},
      {"bytes_sent", "bytes sent MB", ColumnSource::median, "bytes_sent", "{:.1f}", 1e-6},
      {"staleness_mean", "staleness mean", ColumnSource::median, "staleness_mean", "{:.2f}"},
      {"staleness_max", "staleness max", ColumnSource::median, "staleness_max", "{:.0f}"},
      {"consensus_distance", "consensus distance", ColumnSource::median, "consensus_distance", "{:.3g}"},
      {"wall_seconds", "wall s", ColumnSource::median, "wall_seconds", "{:.1f}"},
      {"repeats", "repeats", ColumnSource::repeats, "", ""},
  };
  return columns;
}

double median(std::vector<double> values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  if (n % 2 == 1) return values[n / 2];
  const double a = values[n / 2 - 1], b = values[n / 2];
  return std::isinf(a) || std::isinf(b) ? kInfinity : (a + b) / 2;
}

CompareTable build_table(const std::vector<RunResult>& results) {
  CompareTable table;
  for (const Column& c : compare_columns()) table.columns.push_back(&c);
  for (const RunResult& r : results) {
    if (r.summaries.empty()) continue;  // not run yet
    std::vector<Cell> row;
    for (const Column* c : table.columns) row.push_back(cell(*c, r));
    table.rows.push_back(std::move(row));
  }
  return table;
}

std::string to_markdown(const CompareTable& table) {
  std::string head = "|", rule = "|";
  for (const Column* c : table.columns) {
    head += fmt::format(" {} |", c->label);
    rule += " --- |";
  }
  std::string md = head + "\n" + rule + "\n";
  for (const auto& row : table.rows) {
    md += "|";
    for (const Cell& cell : row) md += fmt::format(" {} |", md_field(cell.md));
    md += "\n";
  }
  return md;
}

std::string to_csv(const CompareTable& table) {
  std::string csv;
  for (std::size_t j = 0; j < table.columns.size(); ++j) {
    if (j > 0) csv += ',';
    csv += csv_field(std::string(table.columns[j]->name));
  }
  csv += '\n';
  for (const auto& row : table.rows) {
    for (std::size_t j = 0; j < row.size(); ++j) {
      if (j > 0) csv += ',';
      csv += csv_field(row[j].csv);
    }
    csv += '\n';
  }
  return csv;
}

}  // namespace fast::cli
