// The variables MPI launchers set for each rank. The mpi runtime takes its rank and size from
// MPI_COMM_WORLD; these tell, before MPI starts, that this process is one of several.
#include "launchers.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "fast/core/error.hpp"

namespace fast::runtime::mpi {

namespace {

constexpr int kMaxRanks = 1 << 24;

bool is_set(const char* v) { return v != nullptr && *v != '\0'; }

// Rank and size from `rank_var` and `size_var` (both set, else nullopt), the local ones when set.
std::optional<LauncherWorld> ranks(const Environment& env, const char* rank_var, const char* size_var,
                                   const char* local_rank_var, const char* local_size_var) {
  const char* rank = env(rank_var);
  const char* size = env(size_var);
  if (!is_set(rank) || !is_set(size)) return std::nullopt;
  LauncherWorld w;
  w.evidence = launcher_evidence(env, {rank_var, size_var});
  w.world = launcher_integer(size_var, size, 1, kMaxRanks);
  w.rank = launcher_integer(rank_var, rank, 0, w.world - 1);
  const char* local_size = local_size_var != nullptr ? env(local_size_var) : nullptr;
  w.local_world = is_set(local_size) ? launcher_integer(local_size_var, local_size, 1, w.world) : 0;
  const char* local_rank = local_rank_var != nullptr ? env(local_rank_var) : nullptr;
  w.local_rank = is_set(local_rank) ? launcher_integer(local_rank_var, local_rank, 0, w.world - 1) : -1;
  return w;
}

std::optional<LauncherWorld> openmpi(const Environment& env) {
  return ranks(env, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
               "OMPI_COMM_WORLD_LOCAL_SIZE");
}

std::optional<LauncherWorld> pmi(const Environment& env) {
  return ranks(env, "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS");
}

// PMIx tells the rank only; the size is known once MPI starts.
std::optional<LauncherWorld> pmix(const Environment& env) {
  const char* rank = env("PMIX_RANK");
  if (!is_set(rank)) return std::nullopt;
  LauncherWorld w;
  w.evidence = launcher_evidence(env, {"PMIX_RANK"});
  w.rank = launcher_integer("PMIX_RANK", rank, 0, kMaxRanks - 1);
  w.world = 0;
  w.local_rank = -1;
  return w;
}

// A task of an srun job step (SLURM_STEP_ID); a batch script's shell has SLURM_PROCID too, but is no step.
std::optional<LauncherWorld> slurm(const Environment& env) {
  if (!is_set(env("SLURM_STEP_ID"))) return std::nullopt;
  std::optional<LauncherWorld> w = ranks(env, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", nullptr);
  if (!w) return w;
  w->evidence = launcher_evidence(env, {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_STEP_ID"});
  // SLURM_NTASKS_PER_NODE (srun --ntasks-per-node): the ranks on each node.
  const char* per_node = env("SLURM_NTASKS_PER_NODE");
  if (is_set(per_node)) w->local_world = std::max(0, std::min(std::atoi(per_node), w->world));
  return w;
}

constexpr LauncherSignature kLaunchers[] = {
    {.name = "mpirun (OpenMPI)", .precedence = 20, .recognise = openmpi},
    {.name = "an MPI launcher (PMI)", .precedence = 21, .recognise = pmi},
    {.name = "an MPI launcher (PMIx)", .precedence = 22, .recognise = pmix},
    {.name = "srun (Slurm)", .precedence = 23, .recognise = slurm},
};

}  // namespace

std::span<const LauncherSignature> launchers() { return kLaunchers; }

}  // namespace fast::runtime::mpi
