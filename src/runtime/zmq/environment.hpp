#pragma once
// The environment variables of the zmq runtime (core/env.hpp has the contract): how the processes
// of a multi-process run find, trust and reach each other. `fast launch` sets them for the
// processes it starts; the settings of `fast train` (docs/config.md) take precedence.

#include "fast/core/env.hpp"

namespace fast::runtime::zmq {

core::EnvTable zmq_environment();

}  // namespace fast::runtime::zmq
