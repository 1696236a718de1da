# libtorch, from one of two places (docs/gpu.md, docs/install.md):
#  - Debian's libtorch-dev (CPU only), found on the default paths;
#  - a pip-installed torch (e.g. a CUDA build on a GPU machine): when no libtorch is found on the
#    default paths, the Python interpreter FAST_TORCH_PYTHON (default python3) is asked for
#    torch.utils.cmake_prefix_path, the folder of the TorchConfig.cmake the wheel ships.
# Torch_DIR given on the command line wins over both.
find_package(Torch QUIET)
if(NOT Torch_FOUND)
  set(FAST_TORCH_PYTHON python3 CACHE STRING "Python interpreter asked where a pip-installed torch keeps its CMake files")
  execute_process(COMMAND ${FAST_TORCH_PYTHON} -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
                  OUTPUT_VARIABLE fast_torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE fast_torch_rc ERROR_QUIET)
  if(fast_torch_rc EQUAL 0 AND IS_DIRECTORY "${fast_torch_prefix}")
    message(STATUS "libtorch: not on the default paths; using the torch of ${FAST_TORCH_PYTHON} (${fast_torch_prefix})")
    list(APPEND CMAKE_PREFIX_PATH "${fast_torch_prefix}")
  endif()
  find_package(Torch)
  if(NOT Torch_FOUND)
    message(FATAL_ERROR "libtorch not found: expected Debian's libtorch-dev (apt-get install libtorch-dev), a torch "
                        "installed for ${FAST_TORCH_PYTHON} (pip; -DFAST_TORCH_PYTHON=/path/to/python to name "
                        "another interpreter), or -DTorch_DIR=<folder of TorchConfig.cmake>")
  endif()
endif()
# FAST's other libraries (Debian's fmt, toml++, ...) use the C++11 std::string ABI; a libtorch
# built with the old one (pip wheels before PyTorch 2.7) cannot share std::string with them.
if("${TORCH_CXX_FLAGS}" MATCHES "_GLIBCXX_USE_CXX11_ABI=0")
  message(FATAL_ERROR "libtorch at ${Torch_DIR} was built with the pre-C++11 string ABI (_GLIBCXX_USE_CXX11_ABI=0), "
                      "which FAST's other libraries do not use; expected a libtorch built with the C++11 ABI "
                      "(PyTorch 2.7 or later from pip, torch.compiled_with_cxx11_abi() True, or Debian's libtorch)")
endif()
# The RUNPATH of the programs (CMakeLists.txt, "RPATH") holds the link folders outside the system's
# and outside the project's trees; a libtorch inside them (a pip torch in a venv within the clone)
# is named here, so that the programs find it there too.
if(TORCH_LIBRARY)
  get_filename_component(fast_torch_lib_dir "${TORCH_LIBRARY}" DIRECTORY)
  if(NOT fast_torch_lib_dir IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES)
    list(APPEND CMAKE_INSTALL_RPATH "${fast_torch_lib_dir}")
  endif()
endif()
