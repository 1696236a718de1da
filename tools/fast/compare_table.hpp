#pragma once
// The table of `fast compare`: one row per configuration, built from the runs' summary JSON
// (docs/metrics.md) and settings, written as Markdown and CSV. The columns are one table in code,
// compare_columns(); summary fields are read by name, so a new field is one new line there. No
// libtorch.

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "fast/training/train_options.hpp"

namespace fast::cli {

enum class ColumnSource {
  label,    // the run's label
  setting,  // a setting: the summary field of that name if the summary has one, else the settings-table
            // key of that name; "-" when neither exists (a key this build does not have) or it is empty
  text,     // a summary field of the first repetition, as text (strategy, workers)
  median,   // a numeric summary field, median over the repetitions; null counts as +infinity (never
            // reached) and a median of +infinity is an empty cell; "-" when a summary lacks the field
  count,    // how many repetitions have a non-null value of the field (time_to_target_seconds: reached)
  repeats,  // the number of repetitions
  flag,     // a boolean summary field (diverged): how many repetitions have it true; Markdown "no",
            // "yes" (all) or "K of N"; "-" when a summary lacks the field
};

struct Column {
  std::string_view name;   // CSV header
  std::string_view label;  // Markdown header
  ColumnSource source;
  std::string_view field;      // summary field or setting key
  std::string_view md_format;  // fmt spec of numbers in Markdown ("{:.4f}"); CSV has full precision
  double md_scale = 1.0;       // Markdown shows value x scale (bytes -> MB: 1e-6)
};

const std::vector<Column>& compare_columns();

// One configuration's results: its label and settings, and one summary per repetition.
struct RunResult {
  std::string label;
  training::TrainOptions options;
  std::vector<nlohmann::json> summaries;
};

struct Cell {
  std::string csv;  // numbers in full (shortest round-trip) precision; integers without a point
  std::string md;   // numbers formatted with the column's md_format
};

struct CompareTable {
  std::vector<const Column*> columns;
  std::vector<std::vector<Cell>> rows;  // rows[i][j]: result i, column j
};

// The median of values (+infinity allowed); NaN for no values. Even counts: mean of the two middle ones.
double median(std::vector<double> values);

CompareTable build_table(const std::vector<RunResult>& results);
std::string to_markdown(const CompareTable& table);
// RFC 4180: comma-separated, a field with a comma, quote or line break quoted, quotes doubled.
std::string to_csv(const CompareTable& table);

}  // namespace fast::cli
