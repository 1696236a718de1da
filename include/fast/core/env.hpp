#pragma once
// The environment variables FAST reads, in one table (name, type, default, description).
// The same table feeds `fast --help`'s environment section and docs/config.md. Reading a variable
// that is not in the table is an InvalidUsage error; a value of the wrong type is InvalidArgument
// naming the variable, the expected type and the value got.

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
};

// Every variable FAST reads.
std::span<const EnvVar> env_table();
std::string_view env_type_name(EnvType type);

// The value of a table variable: the environment's if set, else the default.
std::string env_string(std::string_view name);
long long env_int(std::string_view name);
double env_number(std::string_view name);

}  // namespace fast::core
