#include "fast/runtime/environment.hpp"

#include <array>

namespace fast::runtime {

namespace {
using core::EnvType;
using core::EnvVar;
constexpr std::array kTable{
    EnvVar{"FAST_OP_TIMEOUT", EnvType::number, "600",
           "Seconds a blocking runtime operation (recv, collective step) may wait before TimeoutError."},
    EnvVar{"FAST_COLLECTIVES", EnvType::string, "",
           "fast (FAST's ring collectives) or native (the runtime's own: MPI_Allreduce... under mpi); empty: the "
           "runtime's default (native under mpi, fast elsewhere)."},
    EnvVar{"FAST_CHECK_COLLECTIVES", EnvType::number, "0",
           "1: under mpi, each native collective first checks that every rank called it alike (kind, length, "
           "dtype, root; one small MPI_Allreduce more), so a mismatch is InvalidArgument on every rank; 0: not "
           "checked (MPI's own behaviour). Set it for every rank."},
    EnvVar{"FAST_WINDOWS", EnvType::string, "",
           "rma (one-sided windows on the runtime's one-sided memory: MPI RMA under mpi) or service (the owner's "
           "service activity over messages); empty: the runtime's default (rma under mpi, service elsewhere)."},
};
}  // namespace

core::EnvTable runtime_environment() { return kTable; }

}  // namespace fast::runtime
