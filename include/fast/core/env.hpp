#pragma once
// The environment variables FAST reads, declared by the layer that reads them, each layer in a
// table of its own (name, type, default, description): core's here (env_table()), the runtime
// layer's (runtime/environment.hpp), each runtime backend's in its registry entry
// (RuntimeBackend::environment), the training layer's (training/environment.hpp). The
// tables feed `fast --help`'s environment section and docs/config.md. Reading a variable that is
// not in the table given is an InvalidUsage error; a value of the wrong type, or an integer
// outside the variable's declared range [min, max], is InvalidArgument naming the variable, the
// expected type or range and the value as given (core/parse.hpp's checked conversion).

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace fast::core {

enum class EnvType { string, integer, number, path };

struct EnvVar {
  std::string_view name;
  EnvType type;
  std::string_view default_value;  // as text; empty: unset
  std::string_view description;
  long long min = 0;  // an integer variable's inclusive range (the others ignore it)
  long long max = 0;
};

using EnvTable = std::span<const EnvVar>;

// The variables core reads (FAST_LOG_LEVEL, FAST_MALLOC).
EnvTable env_table();
std::string_view env_type_name(EnvType type);

// The value of a variable of `table`: the environment's if set, else the default.
std::string env_string(EnvTable table, std::string_view name);
// An integer variable's value, within its declared [min, max].
long long env_int(EnvTable table, std::string_view name);
double env_number(EnvTable table, std::string_view name);
// The same for core's own variables.
std::string env_string(std::string_view name);
long long env_int(std::string_view name);
double env_number(std::string_view name);

}  // namespace fast::core
