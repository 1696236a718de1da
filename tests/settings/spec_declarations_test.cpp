// Every declared spec key of every spec family — codecs, topologies, schedules, aggregation rules
// and datasets — fed a value outside what its declaration accepts (core::invalid_text), through the
// entry point that reads that family (make_codec, make_topology, make_schedule, Aggregate::parse,
// parse_dataset_spec): each must be refused before anything is built or read, with the message
// "WHAT spec 'SPEC': key 'KEY' expects ACCEPTS, got 'VALUE'" (a positional spec: "KEY (value I of
// USAGE) expects ..."). The probes come from the
// declarations, so a key added later is probed too.

#include <gtest/gtest.h>

#include <cctype>
#include <functional>
#include <string>
#include <vector>

#include "config.hpp"
#include "fast/compress/codec.hpp"
#include "fast/core/error.hpp"
#include "fast/core/spec.hpp"
#include "fast/strategy/aggregate.hpp"
#include "fast/topology/builders.hpp"
#include "fast/topology/schedule.hpp"
#include "fast/training/dataset_spec.hpp"

namespace fast {
namespace {

struct Family {
  const core::SpecFamily& family;
  std::function<void(const std::string&)> read;  // the library's entry point for a spec of it
};

std::vector<Family> families() {
  return {
      {compress::codec_family(), [](const std::string& s) { (void)compress::make_codec(s); }},
      {topology::topology_family(), [](const std::string& s) { (void)topology::make_topology(s, 4, 1); }},
      {topology::schedule_family(), [](const std::string& s) { (void)topology::make_schedule(s, 4, 1); }},
      {strategy::aggregate_family(), [](const std::string& s) { (void)strategy::Aggregate::parse(s, 9); }},
      {training::dataset_family(), [](const std::string& s) { (void)training::parse_dataset_spec(s); }},
  };
}

TEST(SpecDeclarations, EveryKeyRefusesAnOutOfRangeValueNamingTheKeyTheRangeAndTheValue) {
  int probed = 0, free_strings = 0;
  for (const Family& f : families()) {
    for (const core::SpecForm& form : f.family.forms()) {
      for (std::size_t at = 0; at < form.keys.size(); ++at) {
        const core::Setting& key = form.keys[at];
        const std::optional<std::string> bad = core::invalid_text(key);
        if (!bad) {  // free text (a path, cycle's list): no value is out of range
          EXPECT_EQ(key.expected(), "a string") << form.name << " " << key.name();
          ++free_strings;
          continue;
        }
        const std::string spec = f.family.compose(form, key.name(), *bad);
        // A keyed spec names the key the user wrote; a positional one names the value by its place in
        // the form's usage ("M (value 2 of multi-krum:F[:M])"), its placeholder being the key in
        // capitals (a key with a check may show its choices there instead: only the place is checked).
        const bool keyed = f.family.syntax() == core::SpecSyntax::keyed;
        const std::string named =
            keyed ? fmt::format("key '{}' ", key.name())
                  : fmt::format("(value {} of {}) ", at + 1, f.family.usage(form));
        const std::string expected_tail = fmt::format("{}expects {}, got '{}'", named, key.expected(), *bad);
        const std::string expected_head = fmt::format("{} spec '{}': ", f.family.what(), spec);
        try {
          f.read(spec);
          ADD_FAILURE() << spec << " was accepted";
        } catch (const core::InvalidArgument& e) {
          // A key with a check of its form may add the check's reason after "; ".
          const std::string what = e.what();
          EXPECT_EQ(what.substr(0, expected_head.size()), expected_head) << what;
          if (keyed)  // the key named at once after the spec
            EXPECT_EQ(what.find(expected_tail, expected_head.size()), expected_head.size()) << what;
          else
            EXPECT_NE(what.find(expected_tail, expected_head.size()), std::string::npos) << what;
          if (!keyed && key.type() != core::SettingType::boolean && key.type() != core::SettingType::choice) {
            std::string capitals = key.name();
            for (char& c : capitals) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
            EXPECT_EQ(what.find(capitals + " (value", expected_head.size()), expected_head.size()) << what;
          }
        }
        ++probed;
      }
    }
  }
  // Today: codecs 10 keys (int8 2, topk 3, randk 2, threshold 1, powersgd 2), topologies 4 (torus2d 2,
  // star 1, random-regular 1), aggregation rules 4 (f of three rules, multi-krum's m), datasets 6
  // (synthetic's); the free strings: file's path, cycle's items, npz's 2 and npy's 4 files. A key
  // declared later changes these counts (update them) and is probed like the others.
  EXPECT_EQ(probed, 24);
  EXPECT_EQ(free_strings, 8);
}

TEST(SpecDeclarations, EveryDeclaredDefaultIsAccepted) {
  for (const Family& f : families())
    for (const core::SpecForm& form : f.family.forms())
      for (std::size_t i = form.required; i < form.keys.size(); ++i)  // required keys have no default
        EXPECT_NO_THROW(form.keys[i].validate(form.keys[i].default_value()))
            << f.family.what() << " " << form.name << " " << form.keys[i].name();
}

// docs/config.md (`fast config-doc`) has a row per declared key with what it accepts, under a line
// per form with its usage.
TEST(SpecDeclarations, TheSettingsTableListsEveryFormAndKeyWithWhatItAccepts) {
  const std::string doc = settings::config_markdown();
  const auto escaped = [](std::string text) {
    for (std::size_t at = text.find('|'); at != std::string::npos; at = text.find('|', at + 2)) text.insert(at, "\\");
    return text;
  };
  for (const Family& f : families()) {
    EXPECT_NE(doc.find(fmt::format("\n#### {}\n", f.family.what())), std::string::npos) << f.family.what();
    for (const core::SpecForm& form : f.family.forms()) {
      EXPECT_NE(doc.find(fmt::format("| `{}` | | | | | ", escaped(f.family.usage(form)))), std::string::npos)
          << form.name;
      for (std::size_t i = 0; i < form.keys.size(); ++i) {
        const core::Setting& key = form.keys[i];
        const std::string def = i < form.required ? "required" : fmt::format("`{}`", key.default_text());
        const std::string row = fmt::format("| | `{}` | {} | {} | {} | ", key.name(),
                                            core::setting_type_name(key.type()), def, escaped(key.expected()));
        EXPECT_NE(doc.find(row), std::string::npos) << row;
      }
    }
  }
}

}  // namespace
}  // namespace fast
