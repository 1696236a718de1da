#include "fast/adapters/torch/model_registry.hpp"

#include <deque>
#include <mutex>
#include <utility>

#include <fmt/format.h>

#include "builtin_models.hpp"
#include "fast/core/error.hpp"

namespace fast::torch {

namespace {

struct Registry {
  std::mutex mutex;
  std::deque<ModelRegistration> models;  // a deque: registrations never move
};

void check_name(const std::string& name) {
  bool ok = !name.empty() && name.front() >= 'a' && name.front() <= 'z';
  for (const char c : name) ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_');
  if (!ok)
    FAST_THROW(InvalidArgument,
               "register_model: name '{}': expected lowercase letters, digits, '-' and '_', starting with a letter",
               name);
}

void add(Registry& r, ModelRegistration m) {
  check_name(m.name);
  if (!m.make) FAST_THROW(InvalidArgument, "register_model: model '{}' has no make function", m.name);
  for (const ModelRegistration& known : r.models)
    if (known.name == m.name) FAST_THROW(InvalidArgument, "register_model: model '{}' is already registered", m.name);
  r.models.push_back(std::move(m));
}

// The registry, with the built-ins added on first use (a function-local static: once, thread-safe).
Registry& registry() {
  static Registry r;
  static const bool with_builtins = [] {
    for (ModelRegistration& m : builtin_models()) add(r, std::move(m));
    return true;
  }();
  (void)with_builtins;
  return r;
}

}  // namespace

std::string SampleSpec::describe() const { return fmt::format("{}, {} classes", fmt::join(shape, "x"), classes); }

void register_model(ModelRegistration registration) {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  add(r, std::move(registration));
}

std::vector<std::string> registered_model_names() {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  std::vector<std::string> names;
  for (const ModelRegistration& m : r.models) names.push_back(m.name);
  return names;
}

const ModelRegistration* find_model(const std::string& name) {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  for (const ModelRegistration& m : r.models)
    if (m.name == name) return &m;
  return nullptr;
}

}  // namespace fast::torch
