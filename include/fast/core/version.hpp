#pragma once
// Which FAST this is: the version of the project (CMakeLists.txt's project(VERSION), the one place
// it is written) and the source commit it was built from (`git describe --always --dirty` when the
// build was configured in a git checkout; empty otherwise). `fast --version`, fast.__version__, the
// metrics' start record and summary.json all report these.

#include <string_view>

namespace fast::core {

// "MAJOR.MINOR.PATCH".
std::string_view version();
// The commit the build was configured from ("a866c49", "v0.1.0-3-ga866c49-dirty"); empty when the
// sources were not a git checkout.
std::string_view source_commit();

}  // namespace fast::core
