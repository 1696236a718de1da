# Included by tests/adapters/torch/CMakeLists.txt: FAST's optimizers against libtorch's own (torch::optim).
fast_test(optim_parity_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/optim_parity_test.cpp LIBS fast_optim ${TORCH_LIBRARIES} PER_SUITE UNIT)
separate_arguments(FAST_OPTIM_PARITY_TORCH_FLAGS UNIX_COMMAND "${TORCH_CXX_FLAGS}")
target_compile_options(optim_parity_test PRIVATE ${FAST_OPTIM_PARITY_TORCH_FLAGS})
