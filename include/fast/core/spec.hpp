#pragma once
// The one grammar of FAST's spec strings — codecs ("topk:ratio=0.1"), topologies ("torus2d:2x4"),
// schedules ("cycle:ring;star"), aggregation rules ("multi-krum:1:3") and datasets
// ("synthetic:classes=4") — and the declarations of their keys.
//
//   SPEC := NAME | NAME ':' ARGS
//
// A SpecFamily ("codec") holds its forms; a SpecForm is one NAME with its keys, each a
// core::Setting (type, default, range or values, help), so that every spec key is declared once
// and checked, reported and documented (`fast config-doc`) the same way. ARGS is read by the
// family's syntax:
//   keyed       ARGS = KEY=VALUE[,KEY=VALUE...], each KEY and VALUE non-empty (so "topk:" and a
//               trailing ',' are refused); a key at most once; any order.
//   positional  ARGS = the values of the form's keys in their declared order. A form of one key
//               takes the whole of ARGS (a path, or a nested list such as cycle's); a form of
//               several splits ARGS at its separator ('x' in torus2d:RxC, ':' in multi-krum:F:M).
//               A form without keys refuses any ARGS ("ring:3"), one with keys an empty one ("star:").
// The first `required` keys of a form must be given; the others take their declared default.
//
// Errors: InvalidArgument, without source location, starting with "WHAT spec 'TEXT': " (WHAT the
// family, TEXT the spec as given), then:
//   unknown name 'N', expected one of: A, B, ...
//   unknown key 'K' of N, expected one of: ...          (keyed)
//   item 'I' is not KEY=VALUE                            (keyed)
//   key 'K' given twice                                  (keyed)
//   N takes no parameters, got 'ARGS'
//   N expects values after ':' (USAGE)                   (positional, "star:")
//   N takes at most C values (USAGE), got 'ARGS'         (positional)
//   N needs K (USAGE)                                     (a required key missing)
//   key 'K' expects ACCEPTS, got 'VALUE'                 (ACCEPTS: Setting::expected())
// A check() of a key that refuses a value of the right form adds its reason after a ';'.
// Thread-safety: a family is immutable; parse() may run on any thread.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fast/core/setting.hpp"

namespace fast::core {

enum class SpecSyntax : std::uint8_t { keyed, positional };

struct SpecForm {
  std::string name;
  std::string help;           // a sentence for the docs
  std::vector<Setting> keys;  // in positional order
  std::size_t required = 0;   // the first `required` keys must be given
  char separator = ':';       // positional forms of several keys: between the values
  // Properties the family declares of this form, for the code that picks among its forms by them
  // instead of by name (topology: "directed", a graph directed for every n).
  std::vector<std::string> traits;
  bool has_trait(std::string_view trait) const;
};

// A spec as read: its form and the values given (checked against their declarations).
class ParsedSpec {
 public:
  ParsedSpec(std::string text, const SpecForm& form) : text_(std::move(text)), form_(&form) {}

  const std::string& text() const { return text_; }  // the spec as given
  const std::string& name() const { return form_->name; }
  const SpecForm& form() const { return *form_; }
  bool has(std::string_view key) const { return given_.find(key) != given_.end(); }
  // The value of a declared key: as given, else its declared default. InvalidUsage for a key the
  // form does not declare, or a getter of another type.
  std::int64_t integer(std::string_view key) const;
  double number(std::string_view key) const;
  const std::string& string(std::string_view key) const;
  bool boolean(std::string_view key) const;
  // The given value as text ("" if not given).
  const std::string& raw(std::string_view key) const;
  // Records a checked value (SpecFamily::parse).
  void set(const std::string& key, SettingValue value, std::string raw_text);

 private:
  const SettingValue& value(std::string_view key) const;

  std::string text_;
  const SpecForm* form_;
  std::map<std::string, SettingValue, std::less<>> given_;
  std::map<std::string, std::string, std::less<>> raw_;
};

class SpecFamily {
 public:
  // what: the family's word in messages and docs ("codec"). Forms in documentation order.
  SpecFamily(std::string what, SpecSyntax syntax, std::vector<SpecForm> forms);

  // Reads `text` (InvalidArgument as above). The result refers to this family's form: the family
  // must outlive it.
  ParsedSpec parse(const std::string& text) const;

  const std::string& what() const { return what_; }
  SpecSyntax syntax() const { return syntax_; }
  const std::vector<SpecForm>& forms() const { return forms_; }
  const SpecForm* find(std::string_view name) const;  // nullptr if none
  std::vector<std::string> names() const;
  // How a form is written, from its declaration: "int8[:levels=LEVELS,bucket=BUCKET]",
  // "threshold:value=VALUE", "torus2d[:ROWS[xCOLS]]", "multi-krum:F[:M]", "ring".
  std::string usage(const SpecForm& form) const;
  // Every form's usage, joined by ", " (for help texts).
  std::string usages() const;
  // A spec of `form` with `key` set to `value` and every other required key set to its default,
  // written in this family's syntax (the declarations' tests build their probes with it).
  std::string compose(const SpecForm& form, const std::string& key, const std::string& value) const;

 private:
  [[noreturn]] void fail(const std::string& text, const std::string& message) const;
  void parse_keyed(ParsedSpec& spec, std::string_view args) const;
  void parse_positional(ParsedSpec& spec, std::string_view args) const;
  // `position`: the value's index in a positional spec (its errors name it by placeholder and
  // position, "M (value 2 of multi-krum:F[:M])"); a keyed spec's errors name the key.
  void set_value(ParsedSpec& spec, const Setting& key, const std::string& value, std::size_t position = 0) const;

  std::string what_;
  SpecSyntax syntax_;
  std::vector<SpecForm> forms_;
};

// The NAME of a spec's text: what comes before its first ':' (all of it where there is none).
std::string_view spec_name(std::string_view text);

// A value that is out of range or ill-typed for `key`, for the declarations' tests: a number just
// outside an integer or number range (or text that is not a number where there is no bound), a
// word outside a choice or boolean, "!" for a string key of a declared form (accepts()); nullopt
// for a free string key, which has no invalid value.
std::optional<std::string> invalid_text(const Setting& key);

}  // namespace fast::core
