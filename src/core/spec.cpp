#include "fast/core/spec.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fast/core/error.hpp"
#include "fast/core/suggest.hpp"

namespace fast::core {

namespace {

std::string placeholder(const Setting& key) {
  switch (key.type()) {
    case SettingType::boolean: return "true|false";
    case SettingType::choice: return fmt::format("{}", fmt::join(key.allowed(), "|"));
    default: {
      std::string upper = key.name();
      for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      return upper;
    }
  }
}

std::vector<std::string> key_names(const SpecForm& form) {
  std::vector<std::string> names;
  for (const Setting& k : form.keys) names.push_back(k.name());
  return names;
}

}  // namespace

const SettingValue& ParsedSpec::value(std::string_view key) const {
  if (const auto it = given_.find(key); it != given_.end()) return it->second;
  for (const Setting& k : form_->keys)
    if (k.name() == key) return k.default_value();
  FAST_THROW(InvalidUsage, "spec '{}': {} declares no key '{}'", text_, form_->name, key);
}

std::int64_t ParsedSpec::integer(std::string_view key) const {
  const auto* v = std::get_if<std::int64_t>(&value(key));
  if (v == nullptr) FAST_THROW(InvalidUsage, "spec '{}': key '{}' is not an integer", text_, key);
  return *v;
}

double ParsedSpec::number(std::string_view key) const {
  const auto* v = std::get_if<double>(&value(key));
  if (v == nullptr) FAST_THROW(InvalidUsage, "spec '{}': key '{}' is not a number", text_, key);
  return *v;
}

const std::string& ParsedSpec::string(std::string_view key) const {
  const auto* v = std::get_if<std::string>(&value(key));
  if (v == nullptr) FAST_THROW(InvalidUsage, "spec '{}': key '{}' is not a string", text_, key);
  return *v;
}

bool ParsedSpec::boolean(std::string_view key) const {
  const auto* v = std::get_if<bool>(&value(key));
  if (v == nullptr) FAST_THROW(InvalidUsage, "spec '{}': key '{}' is not a boolean", text_, key);
  return *v;
}

const std::string& ParsedSpec::raw(std::string_view key) const {
  static const std::string none;
  const auto it = raw_.find(key);
  return it == raw_.end() ? none : it->second;
}

void ParsedSpec::set(const std::string& key, SettingValue value, std::string raw_text) {
  given_.insert_or_assign(key, std::move(value));
  raw_.insert_or_assign(key, std::move(raw_text));
}

SpecFamily::SpecFamily(std::string what, SpecSyntax syntax, std::vector<SpecForm> forms)
    : what_(std::move(what)), syntax_(syntax), forms_(std::move(forms)) {
  for (const SpecForm& f : forms_)
    FAST_ENFORCE_AS(InvalidUsage, f.required <= f.keys.size(), "{} spec {}: {} required keys of {}", what_, f.name,
                    f.required, f.keys.size());
}

const SpecForm* SpecFamily::find(std::string_view name) const {
  for (const SpecForm& f : forms_)
    if (f.name == name) return &f;
  return nullptr;
}

std::vector<std::string> SpecFamily::names() const {
  std::vector<std::string> names;
  for (const SpecForm& f : forms_) names.push_back(f.name);
  return names;
}

void SpecFamily::fail(const std::string& text, const std::string& message) const {
  FAST_THROW(InvalidArgument, "{} spec '{}': {}", what_, text, message);
}

std::string SpecFamily::usage(const SpecForm& form) const {
  const auto item = [&](const Setting& k) {
    return syntax_ == SpecSyntax::keyed ? fmt::format("{}={}", k.name(), placeholder(k)) : placeholder(k);
  };
  const char sep = syntax_ == SpecSyntax::keyed ? ',' : form.separator;
  std::string out = form.name;
  for (std::size_t i = 0; i < form.required; ++i) out += (i == 0 ? ':' : sep) + item(form.keys[i]);
  if (form.keys.size() == form.required) return out;
  // The optional keys: the first after ':' (after ',' when it follows required keys of a keyed form).
  const char first_lead = form.required == 0 || syntax_ == SpecSyntax::positional ? ':' : sep;
  if (syntax_ == SpecSyntax::keyed) {  // any subset, in any order: one bracket ("[:a=A,b=B]")
    std::string optional(1, first_lead);
    for (std::size_t i = form.required; i < form.keys.size(); ++i)
      optional += (i > form.required ? std::string(1, sep) : "") + item(form.keys[i]);
    return out + "[" + optional + "]";
  }
  // Positional: each value needs the ones before it, so each opens a bracket ("[:ROWS[xCOLS]]").
  std::string closing;
  for (std::size_t i = form.required; i < form.keys.size(); ++i) {
    out += "[" + std::string(1, i == form.required ? first_lead : sep) + item(form.keys[i]);
    closing += "]";
  }
  return out + closing;
}

std::string SpecFamily::usages() const {
  std::vector<std::string> all;
  for (const SpecForm& f : forms_) all.push_back(usage(f));
  return fmt::format("{}", fmt::join(all, ", "));
}

std::string SpecFamily::compose(const SpecForm& form, const std::string& key, const std::string& value) const {
  const auto probed =
      std::find_if(form.keys.begin(), form.keys.end(), [&](const Setting& k) { return k.name() == key; });
  const auto probed_at = static_cast<std::size_t>(probed - form.keys.begin());
  std::vector<std::string> items;
  if (syntax_ == SpecSyntax::keyed) {
    // The probed key first, so that its value is read before any other.
    if (probed != form.keys.end()) items.push_back(fmt::format("{}={}", key, value));
    for (std::size_t i = 0; i < form.required; ++i)
      if (i != probed_at)
        items.push_back(fmt::format("{}={}", form.keys[i].name(), form.keys[i].text(form.keys[i].default_value())));
  } else {
    // Positional: the keys before the probed one (and the required ones) take their defaults.
    const std::size_t count = std::max(form.required, probed == form.keys.end() ? 0 : probed_at + 1);
    for (std::size_t i = 0; i < count; ++i)
      items.push_back(i == probed_at ? value : form.keys[i].text(form.keys[i].default_value()));
  }
  if (items.empty()) return form.name;
  return fmt::format("{}:{}", form.name,
                     fmt::join(items, std::string(1, syntax_ == SpecSyntax::keyed ? ',' : form.separator)));
}

void SpecFamily::set_value(ParsedSpec& spec, const Setting& key, const std::string& value,
                           std::size_t position) const {
  try {
    spec.set(key.name(), key.parse(value), value);
  } catch (const InvalidArgument& e) {
    // The declaration's own message says "NAME: expected X, got Y"; a check() of the form may say
    // more than expected() does: keep its reason. A positional value is named as the usage names
    // it (the user wrote no key).
    const std::string message = user_message(e);
    const bool plain =
        message.rfind(key.name() + ": expected", 0) == 0 || message.rfind(key.name() + ": unknown value", 0) == 0;
    const std::string named =
        syntax_ == SpecSyntax::keyed
            ? fmt::format("key '{}'", key.name())
            : fmt::format("{} (value {} of {})", placeholder(key), position + 1, usage(spec.form()));
    fail(spec.text(), plain ? fmt::format("{} expects {}, got '{}'", named, key.expected(), value)
                            : fmt::format("{} expects {}, got '{}'; {}", named, key.expected(), value,
                                          message.substr(std::min(message.size(), key.name().size() + 2))));
  }
}

void SpecFamily::parse_keyed(ParsedSpec& spec, std::string_view args) const {
  const SpecForm& form = spec.form();
  for (std::size_t at = 0; at <= args.size();) {
    const std::size_t comma = std::min(args.find(',', at), args.size());
    const std::string item(args.substr(at, comma - at));
    at = comma + 1;
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      fail(spec.text(), fmt::format("item '{}' is not KEY=VALUE", item));
    const std::string key = item.substr(0, eq);
    const auto declared =
        std::find_if(form.keys.begin(), form.keys.end(), [&](const Setting& k) { return k.name() == key; });
    if (declared == form.keys.end())
      fail(spec.text(), form.keys.empty()
                            ? fmt::format("unknown key '{}': {} takes no keys", key, form.name)
                            : fmt::format("unknown key '{}' of {}{}, expected one of: {}", key, form.name,
                                          did_you_mean(key, key_names(form)), fmt::join(key_names(form), ", ")));
    if (spec.has(key)) fail(spec.text(), fmt::format("key '{}' given twice", key));
    set_value(spec, *declared, item.substr(eq + 1));
  }
}

void SpecFamily::parse_positional(ParsedSpec& spec, std::string_view args) const {
  const SpecForm& form = spec.form();
  if (form.keys.empty()) fail(spec.text(), fmt::format("{} takes no parameters, got '{}'", form.name, args));
  if (args.empty()) fail(spec.text(), fmt::format("{} expects values after ':' ({})", form.name, usage(form)));
  std::vector<std::string> values;
  if (form.keys.size() == 1) {
    values.emplace_back(args);
  } else {
    for (std::size_t at = 0; at <= args.size();) {
      const std::size_t end = std::min(args.find(form.separator, at), args.size());
      values.emplace_back(args.substr(at, end - at));
      at = end + 1;
    }
  }
  if (values.size() > form.keys.size())
    fail(spec.text(),
         fmt::format("{} takes at most {} values ({}), got '{}'", form.name, form.keys.size(), usage(form), args));
  for (std::size_t i = 0; i < values.size(); ++i) set_value(spec, form.keys[i], values[i], i);
}

std::string_view spec_name(std::string_view text) { return text.substr(0, text.find(':')); }

bool SpecForm::has_trait(std::string_view trait) const {
  return std::find(traits.begin(), traits.end(), trait) != traits.end();
}

ParsedSpec SpecFamily::parse(const std::string& text) const {
  const std::size_t colon = text.find(':');
  const std::string name(spec_name(text));
  const SpecForm* form = find(name);
  if (form == nullptr)
    fail(text, fmt::format("unknown name '{}'{}, expected one of: {}", name, did_you_mean(name, names()),
                           fmt::join(names(), ", ")));
  ParsedSpec spec(text, *form);
  if (colon != std::string::npos) {
    const std::string_view args = std::string_view(text).substr(colon + 1);
    if (syntax_ == SpecSyntax::keyed)
      parse_keyed(spec, args);
    else
      parse_positional(spec, args);
  }
  for (std::size_t i = 0; i < form->required; ++i)
    if (!spec.has(form->keys[i].name()))
      fail(text, fmt::format("{} needs {} ({})", form->name, form->keys[i].name(), usage(*form)));
  return spec;
}

std::optional<std::string> invalid_text(const Setting& key) {
  const bool integer = key.type() == SettingType::integer;
  const auto number = [&](double v) {
    return integer ? fmt::format("{}", static_cast<long long>(v)) : fmt::format("{}", v);
  };
  switch (key.type()) {
    case SettingType::integer:
    case SettingType::number:
      if (std::isfinite(key.maximum())) {
        const double m = key.maximum();
        if (key.maximum_excluded()) return number(m);
        if (integer) return fmt::format("{}", static_cast<long long>(m) + 1);
        return number(m > 0 ? m * 2 : m < 0 ? m / 2 : 1);
      }
      if (std::isfinite(key.minimum())) {
        const double m = key.minimum();
        if (key.minimum_excluded()) return number(m);
        return number(m - 1 - std::abs(m));
      }
      return std::string("x");
    case SettingType::boolean: return std::string("maybe");
    case SettingType::choice: return std::string("!");
    case SettingType::string:
      if (key.expected() != "a string") return std::string("!");
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace fast::core
