#pragma once
// The environment variables of `fast train`'s training loop and data (core/env.hpp has the
// contract): FAST_DATA_DIR, FAST_TORCH_THREADS. Torch-free.

#include "fast/core/env.hpp"

namespace fast::training {

core::EnvTable training_environment();

}  // namespace fast::training
