// Dataset specs: the declarations of their keys and the checks that need no data.

#include "fast/training/dataset_spec.hpp"

#include <filesystem>
#include <limits>
#include <system_error>

#include <fmt/format.h>

#include "fast/core/error.hpp"
#include "fast/core/file_status.hpp"
#include "fast/core/parse.hpp"
#include "fast/core/spec.hpp"

namespace fast::training {

namespace {

using core::Setting;

// "1x28x28": 1 to 4 dimensions of 1 to 1000000, at most 1e8 features.
std::vector<std::int64_t> parse_shape(const std::string& v) {
  std::vector<std::int64_t> shape;
  std::int64_t features = 1;
  for (std::size_t start = 0; start <= v.size();) {
    const std::size_t x = std::min(v.find('x', start), v.size());
    const auto d = core::parse_int<std::int64_t>(v.substr(start, x - start), "shape", 1, 1'000'000);
    shape.push_back(d);
    features *= d;
    FAST_ENFORCE(features <= 100'000'000, "shape: expected at most 1e8 features per sample, got '{}'", v);
    start = x + 1;
  }
  FAST_ENFORCE(shape.size() <= 4, "shape: expected 1 to 4 dimensions, got '{}'", v);
  return shape;
}

Setting file_key(const char* name, const char* help) { return Setting::string(name, "", help); }

}  // namespace

const core::SpecFamily& dataset_family() {
  static const core::SpecFamily family(
      "dataset", core::SpecSyntax::keyed,
      {{"fashion-mnist", "the IDX files of data_dir"},
       {"npz",
        "two .npz archives, each with arrays x and y",
        {file_key("train", "the training set's .npz file."), file_key("test", "the test set's .npz file.")},
        2},
       {"npy",
        "four .npy files",
        {file_key("train_x", "the training features."), file_key("train_y", "the training labels."),
         file_key("test_x", "the test features."), file_key("test_y", "the test labels.")},
        4},
       {"synthetic",
        "Gaussian classes around random centres (docs/data.md)",
        {Setting::string("shape", "1x28x28", "the shape of one sample.")
             .accepts("1 to 4 dimensions of 1 to 1000000 joined by 'x', at most 1e8 features")
             .check([](const core::SettingValue& v) { (void)parse_shape(std::get<std::string>(v)); }),
         Setting::integer("classes", 10, "number of classes.").at_least(2).at_most(static_cast<double>(kMaxClasses)),
         Setting::integer("train", 60000, "training samples.").at_least(1).at_most(1e8),
         Setting::integer("test", 10000, "test samples.").at_least(1).at_most(1e8),
         Setting::number("noise", 0.25, "noise standard deviation per feature, times sqrt(features).")
             .at_least(0)
             .at_most(1e6),
         Setting::integer("seed", 1, "seed of the centres and samples.").at_least(0)}}});
  return family;
}

std::vector<std::string> dataset_kinds() { return dataset_family().names(); }

SyntheticSpec synthetic_spec(const DatasetSpec& spec) {
  const core::ParsedSpec p = dataset_family().parse(spec.text);
  SyntheticSpec s;
  s.shape = parse_shape(p.string("shape"));
  for (const std::int64_t d : s.shape) s.features *= d;
  s.classes = p.integer("classes");
  s.n_train = p.integer("train");
  s.n_test = p.integer("test");
  s.noise = p.number("noise");
  s.seed = static_cast<std::uint64_t>(p.integer("seed"));
  FAST_ENFORCE((s.n_train + s.n_test + s.classes) * s.features <= 2'000'000'000,
               "dataset '{}': {} samples of {} features: expected at most 2e9 values in all (8 GB)", spec.text,
               s.n_train + s.n_test, s.features);
  return s;
}

bool reads_data_dir(const DatasetSpec& spec) { return spec.kind == dataset_kinds().front(); }

bool is_generated(const DatasetSpec& spec) { return spec.kind == dataset_kinds().back(); }

DatasetSpec parse_dataset_spec(const std::string& text) {
  const core::ParsedSpec p = dataset_family().parse(text);
  DatasetSpec spec;
  spec.text = text;
  spec.kind = p.name();
  const core::SpecForm& form = p.form();
  for (const Setting& key : form.keys)
    spec.args[key.name()] = p.has(key.name()) ? p.raw(key.name()) : key.text(key.default_value());
  for (std::size_t i = 0; i < form.required; ++i) {
    const std::string& file = spec.args[form.keys[i].name()];
    const std::filesystem::file_status status = core::file_status_of(file, "dataset");
    FAST_ENFORCE(!std::filesystem::is_directory(status), "dataset '{}': {}: '{}' is a folder; expected a file", text,
                 form.keys[i].name(), file);
    FAST_ENFORCE_AS(IoError, std::filesystem::is_regular_file(status), "dataset '{}': {}: '{}' {}{}", text,
                    form.keys[i].name(), file,
                    std::filesystem::exists(status) ? "is not a regular file" : "does not exist",
                    core::relative_to_note(file));
  }
  if (spec.kind == "synthetic") (void)synthetic_spec(spec);  // the numbers, before anything is read
  return spec;
}

}  // namespace fast::training
