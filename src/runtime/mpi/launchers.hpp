#pragma once
// The launchers whose processes join the mpi runtime (runtime/detect.hpp): OpenMPI's mpirun,
// MPICH's and Intel MPI's (PMI), PMIx and Slurm's srun.

#include <span>

#include "fast/runtime/detect.hpp"

namespace fast::runtime::mpi {

std::span<const LauncherSignature> launchers();

}  // namespace fast::runtime::mpi
