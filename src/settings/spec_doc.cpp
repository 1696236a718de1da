// The "Spec strings" part of docs/config.md, generated from the spec families' declarations.

#include <string>
#include <string_view>

#include <fmt/format.h>

#include "config.hpp"
#include "fast/compress/codec.hpp"
#include "fast/core/spec.hpp"
#include "fast/strategy/aggregate.hpp"
#include "fast/topology/builders.hpp"
#include "fast/topology/schedule.hpp"
#include "fast/training/dataset_spec.hpp"

namespace fast::settings {

std::string markdown_cell(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

namespace {

// One family: a line per form, then a row per key.
std::string family_markdown(const core::SpecFamily& family, std::string_view setting, std::string_view syntax) {
  std::string md = fmt::format("\n#### {}\n\nThe value of {}; {}.\n\n", family.what(), setting, syntax);
  md += "| spec | key | type | default | accepts | description |\n| --- | --- | --- | --- | --- | --- |\n";
  for (const core::SpecForm& form : family.forms()) {
    md += fmt::format("| `{}` | | | | | {}. |\n", markdown_cell(family.usage(form)), markdown_cell(form.help));
    for (std::size_t i = 0; i < form.keys.size(); ++i) {
      const core::Setting& key = form.keys[i];
      const std::string shown = key.default_text();
      md += fmt::format("| | `{}` | {} | {} | {} | {} |\n", key.name(), core::setting_type_name(key.type()),
                        i < form.required ? "required" : fmt::format("`{}`", shown.empty() ? "\"\"" : shown),
                        markdown_cell(key.expected()), markdown_cell(key.help()));
    }
  }
  return md;
}

}  // namespace

std::string spec_markdown() {
  constexpr std::string_view keyed = "NAME or NAME:KEY=VALUE,KEY=VALUE,... (keys in any order, each once)";
  constexpr std::string_view positional = "NAME or NAME:VALUES, the values in the keys' order";
  std::string md =
      "\n### Spec strings\n\nSettings that name a codec, a topology, a schedule, an aggregation rule or a dataset "
      "take a spec, NAME[:...], read by one parser from the declarations below; a key given an unknown name, a "
      "value out of its range or of another type is refused before training starts, naming the spec, the key, "
      "what it accepts and the value given.\n";
  md += family_markdown(compress::codec_family(), "`compress`", keyed);
  md += family_markdown(topology::topology_family(), "`topology`",
                        std::string(positional) + " (torus2d: ROWS or ROWSxCOLS; a one-key form takes the whole rest)");
  md += family_markdown(topology::schedule_family(), "`topology` (gosgd)",
                        std::string(positional) + "; any topology spec is a schedule of period 1");
  md += family_markdown(strategy::aggregate_family(), "`aggregate`", std::string(positional) + " (multi-krum: F:M)");
  md += family_markdown(training::dataset_family(), "`dataset`", keyed);
  return md;
}

}  // namespace fast::settings
