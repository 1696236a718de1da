#pragma once
// The launchers whose processes join the zmq runtime (runtime/detect.hpp): `fast launch` and torchrun.

#include <span>

#include "fast/runtime/detect.hpp"

namespace fast::runtime::zmq {

std::span<const LauncherSignature> launchers();

}  // namespace fast::runtime::zmq
