#pragma once
// Which FAST this is: the version of the project (CMakeLists.txt's project(VERSION), the one place
// it is written) and the source commit it was built from (`git describe --always --dirty` of the
// sources at the last build, cmake/source_commit.cmake, where they are a git checkout; else empty). `fast --version`,
// fast.__version__, the metrics' start record and summary.json all report these.

#include <string_view>

namespace fast::core {

// "MAJOR.MINOR.PATCH".
std::string_view version();
// The commit the sources were at when fast_core was last built ("a866c49", "v0.1.0-3-ga866c49-dirty");
// empty when they were not a git checkout.
std::string_view source_commit();

}  // namespace fast::core
