#include "checkpoint_store.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <vector>

#include "checkpoint_manifest.hpp"
#include "fast/core/counted.hpp"
#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "fast/training/run_identity.hpp"
#include "output_paths.hpp"
#include "process_outputs.hpp"

namespace fast::training {

namespace {

// Whether this worker logs the manifest failures its process meets: the lowest rank of a process
// other than the first member's (which names them in its warning).
bool names_manifest_failures(const runtime::Context& ctx, int first_member) {
  const int first = first_rank_of_process(ctx);
  const bool with_first_member = first_member >= first && first_member < first + std::max(1, ctx.local_size());
  return !with_first_member && ctx.rank() == first;
}

constexpr const char* kManifest = kManifestName;
constexpr std::size_t kMaxCandidates = 64;
constexpr int kManifestFormat =
    2;  // 2: "run" holds the run identity with its fingerprint  // complete checkpoints tried on resume, newest first

std::filesystem::path worker_file(const std::filesystem::path& step_folder, int rank) {
  return step_folder / fmt::format("worker-{}.ckpt", rank);
}

// The step of a folder named step-<digits>, or -1.
std::int64_t step_of(const std::filesystem::path& path) {
  const std::string name = path.filename().string();
  if (name.size() <= 5 || name.compare(0, 5, "step-") != 0) return -1;
  std::int64_t step = -1;
  const auto [end, error] = std::from_chars(name.data() + 5, name.data() + name.size(), step);
  if (error != std::errc() || end != name.data() + name.size()) return -1;
  // Only the name step_folder() writes: a folder renamed "step-120" is not the checkpoint of step
  // 120 (whose files are read from "step-000000000120").
  return name == fmt::format("step-{:012d}", step) ? step : -1;
}

// Step folders of `folder` (complete ones, or every one), newest first.
std::vector<std::int64_t> step_folders(const std::filesystem::path& folder, bool complete_only) {
  std::vector<std::int64_t> steps;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
    const std::int64_t step = step_of(entry.path());
    // A name the system cannot follow (a loop of links, no permission) is no checkpoint either.
    std::error_code error;
    if (step < 0 || !entry.is_directory(error)) continue;
    if (complete_only && !std::filesystem::is_regular_file(entry.path() / kManifest, error)) continue;
    steps.push_back(step);
  }
  std::sort(steps.rbegin(), steps.rend());
  return steps;
}

// InvalidArgument (the same on every worker: each reads the same files) when the manifest of
// `target` or a worker file in it carries another run's identity than `identity`. A worker file is
// read for its identity alone (read_checkpoint_texts); one whose identity differs is read whole,
// and refused only when it is intact: a corrupt file is its owner's IoError, a fallback.
void check_identities(const std::filesystem::path& target, const nlohmann::json& manifest,
                      const nlohmann::json& identity, const std::vector<int>& ranks) {
  auto refuse = [](const std::string& why) {
    FAST_THROW(core::InvalidArgument,
               "resume: {}; expected a checkpoint of this run's settings (docs/faults.md, \"Run identity\"), or "
               "start a new run that does not resume (fast train without --resume or --resume-if-present, or with "
               "another checkpoint_dir; in Python, without resume())",
               why);
  };
  if (std::string why = identity_mismatch(manifest_identity(manifest), identity, (target / kManifest).string());
      !why.empty())
    refuse(why);
  for (const int rank : ranks) {
    const std::filesystem::path file = worker_file(target, rank);
    auto identity_of = [](const std::map<std::string, std::string, std::less<>>& texts) {
      const auto run = texts.find("run");
      return run == texts.end() ? nlohmann::json() : nlohmann::json::parse(run->second, nullptr, false);
    };
    try {
      if (identity_mismatch(identity_of(strategy::read_checkpoint_texts(file)), identity, file.string()).empty())
        continue;
      const strategy::Checkpoint whole = strategy::read_checkpoint_file(file);  // intact?
      if (std::string why = identity_mismatch(identity_of(whole.texts), identity, file.string()); !why.empty())
        refuse(why);
    } catch (const core::IoError&) {
      // unreadable or corrupt: its owner's own read fails the same way and falls back
    }
  }
}

// How many workers wrote the complete checkpoint `target` (its manifest's "workers") against how
// many the run that wrote it has (the manifest's run identity's "workers"). After a loss, an
// elastic run's checkpoints hold the survivors' files only: partial(), and they resume no run.
// Both 0 where the manifest cannot be read or names no count: such a checkpoint counts as whole
// (a resume then finds what is wrong with it, or that it is another run's).
struct Writers {
  int wrote = 0;
  int of = 0;
  bool partial() const { return wrote > 0 && wrote < of; }
};

Writers writers_of(const std::filesystem::path& target) {
  try {
    const nlohmann::json manifest = read_checkpoint_manifest(target / kManifest);
    const nlohmann::json& run = manifest_identity(manifest);
    if (!run.is_object()) return {};
    const auto wrote = manifest.find("workers");
    const auto of = run.find("workers");
    if (wrote == manifest.end() || of == run.end() || !wrote->is_number_integer() || !of->is_number_integer())
      return {};
    return {wrote->get<int>(), of->get<int>()};
  } catch (const core::Error&) {
    return {};
  }
}

// Collective: whether every worker's `ok` is true (an all-reduce of the failures, also a barrier).
bool everyone(collective::Communicator& comm, bool ok) {
  std::vector<double> failed{ok ? 0.0 : 1.0};
  comm.allreduce(core::MutableView(std::span<double>(failed)));
  return failed[0] == 0;
}

}  // namespace

CheckpointStore::CheckpointStore(std::filesystem::path folder, std::int64_t keep, nlohmann::json identity)
    : folder_(std::move(folder)), keep_(keep), identity_(std::move(identity)) {
  FAST_ENFORCE(keep_ >= 1, "checkpoint_keep: expected >= 1, got {}", keep_);
}

void CheckpointStore::expect_checkpoints(const std::filesystem::path& folder) {
  const PathKind kind = path_kind(folder, "resume");
  FAST_ENFORCE(kind == PathKind::folder, "resume: '{}' {}; expected the checkpoint folder of an earlier run",
               folder.string(), kind == PathKind::missing ? "does not exist" : "is not a folder");
  if (!complete_steps(folder).empty()) return;
  std::error_code error;
  const std::filesystem::path named = folder.has_filename() ? folder : folder.parent_path();  // "ck/step-N/"
  FAST_ENFORCE(step_of(named) < 0 || !std::filesystem::is_regular_file(named / kManifest, error),
               "resume: '{}' is the folder of one checkpoint (step {}); expected the checkpoint folder that holds it: "
               "'{}' (the newest complete checkpoint there is resumed)",
               folder.string(), step_of(named), named.parent_path().string());
  FAST_THROW(core::InvalidArgument,
             "resume: '{}' holds no complete checkpoint (a step-N folder with a manifest.json); expected the "
             "checkpoint folder of an earlier run",
             folder.string());
}

std::vector<std::int64_t> CheckpointStore::complete_steps(const std::filesystem::path& folder) {
  return step_folders(folder, true);
}

std::filesystem::path CheckpointStore::step_folder(const std::filesystem::path& folder, std::int64_t step) {
  return folder / fmt::format("step-{:012d}", step);
}

std::string CheckpointStore::write_file(strategy::Worker& worker, const std::filesystem::path& target,
                                        std::int64_t step, const WriteOwnPart& write_own_part) const {
  try {
    std::filesystem::create_directories(target);
    if (write_own_part) {
      if (std::string failure = write_own_part(target); !failure.empty()) return failure;
    }
    strategy::Checkpoint state = worker.save();
    state.integers["checkpoint_step"] = step;  // an asynchronous worker's own steps differ from it
    state.texts["run"] = identity_.dump();     // the run's identity, checked on resume
    strategy::write_checkpoint_file(worker_file(target, worker.context().rank()), state);
    if (worker.fault_injection().exits_while_checkpointing(worker.context().rank()))
      strategy::FaultInjection::kill_process(fmt::format(
          "worker {} kills itself while writing the checkpoint of step {}, its file in place "
          "(exit-while-checkpointing)",
          worker.context().rank(), step));
  } catch (const std::filesystem::filesystem_error& e) {
    return fmt::format("cannot create the checkpoint folder '{}': {}", target.string(), e.code().message());
  } catch (const core::IoError& e) {
    return e.what();
  }
  return "";
}

void CheckpointStore::write_manifest(const std::filesystem::path& target, std::int64_t step, int workers) const {
  const nlohmann::json manifest{{"format", kManifestFormat}, {"step", step}, {"workers", workers}, {"run", identity_}};
  const std::string text = manifest.dump(2) + "\n";
  strategy::write_file_atomically(target / kManifest, std::as_bytes(std::span<const char>(text)),
                                  "checkpoint manifest");
  prune(step);
}

std::filesystem::path CheckpointStore::write(strategy::Worker& worker, std::int64_t step,
                                             const WriteOwnPart& write_own_part) {
  collective::Communicator& comm = worker.communicator();
  const std::filesystem::path target = step_folder(folder_, step);
  const std::string failure = write_file(worker, target, step, write_own_part);
  const bool written = everyone(comm, failure.empty());
  const int rank = worker.context().rank();
  if (!failure.empty()) {
    // The first member's error is the one its process reports (the run's end, the summary); the
    // others' would be lost when a worker of the same process fails first: each says it here.
    if (rank != comm.members().front())
      core::log(core::LogLevel::error, "checkpoint at step {}: worker {} could not write its file: {}", step, rank,
                failure);
    FAST_THROW(core::IoError, "checkpoint at step {}: {}", step, failure);
  }
  if (!written)
    FAST_THROW(core::IoError,
               "checkpoint at step {}: another worker could not write its file in '{}' (its error is in the output: "
               "\"checkpoint at step {}: worker N could not write its file: ...\")",
               step, target.string(), step);
  if (worker.context().rank() == comm.members().front()) write_manifest(target, step, comm.group_size());
  return target;
}

bool CheckpointStore::write_own(strategy::Worker& worker, std::int64_t step) {
  const std::filesystem::path target = step_folder(folder_, step);
  const std::string failure = write_file(worker, target, step);
  if (!failure.empty())
    FAST_THROW(core::IoError, "checkpoint at step {} of worker {}: {}", step, worker.context().rank(), failure);
  // Every worker of the run, lost ones included: a resume needs each one's file.
  const int workers = worker.context().size();
  for (int rank = 0; rank < workers; ++rank) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(worker_file(target, rank), ec)) return false;
  }
  std::error_code ec;
  if (std::filesystem::is_regular_file(target / kManifest, ec)) return false;  // another worker completed it
  write_manifest(target, step, workers);
  return true;
}

void CheckpointStore::discard_newer(strategy::Worker& worker, std::int64_t step) const {
  collective::Communicator& comm = worker.communicator();
  if (worker.context().rank() == comm.members().front()) {
    const std::vector<std::int64_t> complete = step_folders(folder_, true);
    for (const std::int64_t newer : step_folders(folder_, false)) {
      if (newer <= step) continue;
      const std::filesystem::path target = step_folder(folder_, newer);
      const bool whole = std::find(complete.begin(), complete.end(), newer) != complete.end();
      std::error_code ec;
      std::filesystem::remove_all(target, ec);
      if (ec)
        core::log(core::LogLevel::warn, "checkpoints: could not remove '{}' (an earlier start's, after step {}): {}",
                  target.string(), step, ec.message());
      else if (whole)  // a checkpoint a resume would have taken over this run's own
        core::log(core::LogLevel::warn,
                  "checkpoints: removed '{}', a checkpoint of an earlier start or run that this run, starting from "
                  "step {}, does not continue (a resume would take it over this run's own)",
                  target.string(), step);
      else
        core::log(core::LogLevel::info, "checkpoints: removed '{}', left incomplete by an earlier start after step {}",
                  target.string(), step);
    }
  }
  comm.barrier();
}

void CheckpointStore::prune(std::int64_t newest) const {
  const std::vector<std::int64_t> complete = step_folders(folder_, true);
  std::vector<std::int64_t> kept(complete.begin(), complete.begin() + std::min<std::size_t>(complete.size(), keep_));
  keep_the_newest_whole(newest, complete, kept);
  for (std::int64_t step : step_folders(folder_, false)) {
    const bool keep = std::find(kept.begin(), kept.end(), step) != kept.end() || step > newest;
    if (keep) continue;
    std::error_code ec;
    std::filesystem::remove_all(step_folder(folder_, step), ec);
    if (ec)
      core::log(core::LogLevel::warn, "checkpoints: could not remove '{}': {}", step_folder(folder_, step).string(),
                ec.message());
  }
}

void CheckpointStore::list_whole_checkpoints(const std::filesystem::path& folder, std::vector<double>& candidates) {
  std::vector<std::int64_t> steps = step_folders(folder, true);
  Writers partial;
  std::size_t skipped = 0;
  std::erase_if(steps, [&](std::int64_t step) {
    const Writers w = writers_of(step_folder(folder, step));
    if (!w.partial()) return false;
    if (skipped++ == 0) partial = w;
    return true;
  });
  if (steps.empty() && skipped > 0) {  // a refusal, on every worker
    candidates[0] = -1;
    candidates[1] = partial.wrote;
    candidates[2] = partial.of;
    return;
  }
  if (skipped > 0)
    core::log(core::LogLevel::info,
              "resume: skipping {} in '{}' written by {} of the run's {} workers (the others lost or vacant: they "
              "resume no run)",
              core::counted(static_cast<long long>(skipped), "checkpoint"), folder.string(), partial.wrote, partial.of);
  candidates[0] = static_cast<double>(std::min(steps.size(), kMaxCandidates));
  for (std::size_t k = 0; k < steps.size() && k < kMaxCandidates; ++k)
    candidates[k + 1] = static_cast<double>(steps[k]);
}

void CheckpointStore::keep_the_newest_whole(std::int64_t newest, const std::vector<std::int64_t>& complete,
                                            std::vector<std::int64_t>& kept) const {
  const Writers last = writers_of(step_folder(folder_, newest));
  if (!last.partial()) return;
  const auto whole = [&](std::int64_t step) { return !writers_of(step_folder(folder_, step)).partial(); };
  const auto found = std::find_if(complete.begin(), complete.end(), whole);
  if (found != complete.end() && std::find(kept.begin(), kept.end(), *found) == kept.end()) kept.push_back(*found);
  if (told_partial_) return;
  told_partial_ = true;
  core::log(core::LogLevel::warn,
            "checkpoints: '{}' holds the files of {} of the run's {} workers (the others lost, or vacant in a run "
            "that may grow), which resume no run (a resume needs every worker's file; docs/faults.md, \"Elastic "
            "synchronous training\"); {}",
            step_folder(folder_, newest).string(), last.wrote, last.of,
            found == complete.end()
                ? std::string("no checkpoint of every worker is in the folder")
                : fmt::format("'{}', the newest checkpoint of every worker, stays beyond checkpoint_keep for --resume",
                              step_folder(folder_, *found).string()));
}

std::int64_t CheckpointStore::restore_newest(const std::filesystem::path& folder, strategy::Worker& worker,
                                             const nlohmann::json& identity, bool if_present, std::int64_t last_step,
                                             const ReadOwnPart& read_own_part) {
  collective::Communicator& comm = worker.communicator();
  const bool first = worker.context().rank() == comm.members().front();
  // The first member's list, so that every worker tries the same steps in the same order.
  std::vector<double> candidates(kMaxCandidates + 1, 0.0);
  if (first) list_whole_checkpoints(folder, candidates);
  comm.broadcast(core::MutableView(std::span<double>(candidates)), comm.members().front());
  FAST_ENFORCE(candidates[0] >= 0,
               "resume: every complete checkpoint in '{}' holds the files of {} of the {} workers of the run that "
               "wrote it (the others lost, or vacant in a run that may grow), which resume no run (a resume needs "
               "every worker's file); expected a checkpoint that every worker wrote (docs/faults.md, \"Elastic "
               "synchronous training\")",
               folder.string(), static_cast<int>(candidates[1]), static_cast<int>(candidates[2]));
  const auto count = static_cast<std::size_t>(candidates[0]);
  if (if_present && count == 0) {
    if (first)
      core::log(core::LogLevel::info,
                "resume_if_present: no complete checkpoint in '{}'; starting anew (checkpoints go there)",
                folder.string());
    return -1;
  }
  FAST_ENFORCE_AS(core::IoError, count > 0,
                  "resume: no complete checkpoint in '{}' (expected step-N folders with a manifest.json, written by "
                  "--checkpoint-dir; the folder must be shared by every process)",
                  folder.string());
  std::string last_failure;
  for (std::size_t k = 1; k <= count; ++k) {
    const auto step = static_cast<std::int64_t>(candidates[k]);
    const std::filesystem::path target = step_folder(folder, step);
    const std::filesystem::path file = worker_file(target, worker.context().rank());
    std::string failure;
    bool own_file = false;  // the failure is this worker's file's (a manifest's is every worker's alike)
    std::optional<strategy::Checkpoint> checkpoint;
    try {
      const nlohmann::json manifest = read_checkpoint_manifest(target / kManifest);
      check_identities(target, manifest, identity, comm.members());  // another run: an error, not a fallback
      // The manifest's step and the folder's name agree (an edited or moved one: a damaged checkpoint).
      const auto said = manifest.find("step");
      if (said != manifest.end() && (!said->is_number_integer() || said->get<std::int64_t>() != step))
        FAST_THROW(core::IoError, "checkpoint manifest '{}': step {}, its folder says {}",
                   (target / kManifest).string(), said->dump(), step);
      own_file = true;
      checkpoint = strategy::read_checkpoint_file(file);
      // Files of the first checkpoint format version had only "steps" (lockstep: the same number).
      const std::int64_t saved_at = checkpoint->integers.contains("checkpoint_step")
                                        ? checkpoint->integer("checkpoint_step", file.string())
                                        : checkpoint->integer("steps", file.string());
      if (saved_at != step)
        FAST_THROW(core::IoError, "checkpoint '{}': saved at step {}, its folder says {}", file.string(), saved_at,
                   step);
      if (read_own_part)
        if (std::string why = read_own_part(target); !why.empty()) throw core::IoError(why);
    } catch (const core::IoError& e) {
      failure = e.what();
      // The first member names its failure in the warning that skips the checkpoint; another worker
      // names its file's; a manifest's (every worker's alike where they share a view of the folder)
      // is named once by each other process, whose view (another host's) may differ.
      if (!first && (own_file || names_manifest_failures(worker.context(), comm.members().front())))
        core::log(core::LogLevel::warn, "resume: worker {} cannot use step {}: {}", worker.context().rank(), step,
                  failure);
    }
    if (everyone(comm, failure.empty())) {
      FAST_ENFORCE(step <= last_step,
                   "resume: the checkpoint in '{}' is at step {}, beyond this run's {} steps per worker; expected "
                   "steps (or epochs) at least as many",
                   folder.string(), step, last_step);
      worker.restore(*checkpoint, file.string());
      if (first) core::log(core::LogLevel::info, "resume: continuing from '{}' (step {})", target.string(), step);
      return step;
    }
    last_failure =
        failure.empty() ? fmt::format("another worker could not read its file in '{}'", target.string()) : failure;
    if (first)
      core::log(core::LogLevel::warn, "resume: skipping the checkpoint '{}': {}", target.string(), last_failure);
  }
  FAST_THROW(core::IoError,
             "resume: none of the {} complete checkpoints in '{}' is readable by every worker; the "
             "oldest failed with: {}",
             count, folder.string(), last_failure);
}

}  // namespace fast::training
