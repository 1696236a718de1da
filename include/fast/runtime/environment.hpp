#pragma once
// The environment variables of the runtime layer, read by every runtime (core/env.hpp has the
// contract): FAST_OP_TIMEOUT, FAST_COLLECTIVES, FAST_WINDOWS. A backend's own variables are in its
// registry entry (RuntimeBackend::environment, runtime/registry.hpp).

#include "fast/core/env.hpp"

namespace fast::runtime {

core::EnvTable runtime_environment();

}  // namespace fast::runtime
