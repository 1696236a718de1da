#pragma once
// The form of a `device` setting, without libtorch: the settings check it as they read it (naming
// the flag or the config file's line), and fast::torch::check_device (device.hpp) then asks
// libtorch whether that GPU is there.

#include <optional>
#include <string>

namespace fast::training {

// nullopt for "cpu", -1 for "cuda" (no index), K for "cuda:K" (K >= 0); InvalidArgument naming
// `option` for anything else.
std::optional<int> parse_device(const std::string& spec, const char* option);

}  // namespace fast::training
