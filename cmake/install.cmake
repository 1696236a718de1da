# `cmake --install BUILD --prefix DIR` (docs/install.md): the static libraries of every layer, the
# public headers, the `fast` command and the CMake package `fast` (find_package(fast)), whose
# umbrella target fast::fast brings every layer and the libtorch adapter. Included by the top
# CMakeLists.txt after src/ and tools/fast/, so every library target exists.
include(CMakePackageConfigHelpers)

# fast::fast: the whole library surface `fast train` uses. fast_torch already depends on every
# layer below it; they are listed so that the umbrella does not hinge on that chain.
add_library(fast_library INTERFACE)
add_library(fast::fast ALIAS fast_library)
target_link_libraries(fast_library INTERFACE fast_torch fast_training fast_strategy fast_metrics fast_optim fast_topology
                      fast_collective fast_compress fast_runtime fast_wire fast_core)
fast_install_library(fast_library fast)

# The runtimes of this build, in the order of the registry (src/runtime/CMakeLists.txt); the
# package's config records them (fast_RUNTIMES, components) and finds their dependencies again.
set(FAST_INSTALLED_RUNTIMES threads)
foreach(runtime IN ITEMS sim zmq mpi)
  string(TOUPPER ${runtime} option)
  if(FAST_WITH_${option})
    list(APPEND FAST_INSTALLED_RUNTIMES ${runtime})
  endif()
endforeach()

# Headers of a runtime that is not built would declare functions no installed library defines.
set(header_excludes "")
if(NOT FAST_WITH_SIM)
  list(APPEND header_excludes PATTERN "runtime/sim" EXCLUDE)
endif()
if(NOT FAST_WITH_ZMQ)
  list(APPEND header_excludes PATTERN "runtime/zmq" EXCLUDE)
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/fast DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.hpp" ${header_excludes})

install(TARGETS fast RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS fast-train RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/fast)  # run by `fast train` and `fast compare`

set(FAST_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/fast)
install(EXPORT fastTargets NAMESPACE fast:: DESTINATION ${FAST_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/fastConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/fastConfig.cmake INSTALL_DESTINATION ${FAST_CMAKE_DIR})
# 0.x: a consumer asking for 0.1 accepts 0.1.y only (minor versions may change the interface).
write_basic_package_version_file(${PROJECT_BINARY_DIR}/fastConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/fastConfig.cmake ${PROJECT_BINARY_DIR}/fastConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/pkg_config_isystem.cmake
        DESTINATION ${FAST_CMAKE_DIR})
