#include "fast/training/environment.hpp"

#include <array>

namespace fast::training {

namespace {
using core::EnvType;
using core::EnvVar;
constexpr std::array kTable{
    EnvVar{"FAST_DATA_DIR", EnvType::path, "/usr/share/datasets/fashion-mnist",
           "Folder of the Fashion-MNIST IDX files (gzip or not) when no --data-dir is given."},
    EnvVar{"FAST_TORCH_THREADS", EnvType::integer, "0",
           "libtorch intra-op threads per process; 0 sizes them to the cores this process may run on divided by the "
           "workers of this host (as the launcher tells, else, for processes started by hand, every process on this "
           "machine at the rendezvous; docs/launch.md, \"By hand\"). OpenBLAS, which libtorch multiplies with, is kept "
           "at one thread: `fast train` starts its helper with OPENBLAS_NUM_THREADS=1 where that variable is unset.",
           0, 1024},
};
}  // namespace

core::EnvTable training_environment() { return kTable; }

}  // namespace fast::training
