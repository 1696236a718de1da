#include "fast/strategy/option.hpp"

#include <utility>

#include "fast/strategy/strategy.hpp"

namespace fast::strategy {

StrategyOption StrategyOption::bound(std::string name, OptionType type, std::string help, Store store, Load load) {
  const OptionValue default_value = load(StrategyOptions{});
  StrategyOption o(std::move(name), type, default_value, std::move(help));
  o.store_ = std::move(store);
  o.load_ = std::move(load);
  return o;
}

void StrategyOption::store(StrategyOptions& options, const OptionValue& value) const {
  validate(value);
  if (store_) {
    store_(options, value);
  } else {
    options.values.insert_or_assign(name(), value);
  }
}

OptionValue StrategyOption::load(const StrategyOptions& options) const {
  if (load_) return load_(options);
  const auto it = options.values.find(name());
  return it != options.values.end() ? it->second : default_value();
}

}  // namespace fast::strategy
