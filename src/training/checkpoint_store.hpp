#pragma once
// CheckpointStore: the checkpoints of a `fast train` run in one folder (docs/faults.md,
// "Checkpoints and resume"). Torch-free.
//
// Layout: FOLDER/step-<12-digit step>/worker-<rank>.ckpt, one file per worker
// (strategy::Checkpoint's format, written atomically, with the run's identity as its text "run"),
// then FOLDER/step-<...>/manifest.json, written (atomically) by the group's first member once
// every worker's file is in place (after a barrier): a step folder without a manifest is
// incomplete and never resumed from. The manifest holds the step and the run's identity
// (run_identity.hpp, with its fingerprint); a resume where the manifest or any worker's file
// carries another identity is refused, naming the file, the field and both values.
// After a complete write the first member removes the older step folders beyond the `keep` newest
// complete ones, and every incomplete folder older than the new one. An elastic run that lost
// workers writes checkpoints of the survivors' files, which resume no run (the manifest's
// "workers" is below the run's): the newest checkpoint of every worker then stays beyond `keep`,
// and a resume skips the survivors' ones (and is refused, InvalidArgument, when only such are left).
//
// The folder must be shared by every process of the run (one host, or a filesystem every host
// mounts): each worker reads and writes its own file, and all read the manifest.
//
// Asynchronous strategies also write periodic checkpoints without any collective (write_own):
// each worker writes its file into step-<its own step count>/ every checkpoint_every of its own
// steps, and a worker that finds every worker's file of its folder in place after renaming its own
// writes the manifest (the last one to rename always does: each checks after its own rename; two
// that both see every file write the same manifest, atomically). A step folder is thus complete
// once every worker took that many steps of its own; the workers' files there are each one's
// state at that step of its own, which is what an asynchronous resume needs: every worker
// continues from step K of its own with the budget at K x workers (docs/faults.md).
//
// One store per worker, used by that worker's main activity; the collective calls must be made by
// every worker of the group at the same step.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fast/strategy/worker.hpp"

namespace fast::training {

class CheckpointStore {
 public:
  // keep >= 1. Creates nothing yet.
  CheckpointStore(std::filesystem::path folder, std::int64_t keep, nlohmann::json identity);

  // Writes this worker's further files of a checkpoint (fast.torch's torch-<rank>.pt) into its
  // step folder, which exists, before its FAST file; returns "" or why it cannot, which fails the
  // checkpoint as a FAST file that cannot be written does. It must not throw, and is called on this
  // worker's thread.
  using WriteOwnPart = std::function<std::string(const std::filesystem::path& step_folder)>;

  // Collective: writes this worker's state after `step` steps (Worker::save; `write_own_part`'s
  // files first), then the manifest and the pruning (first member). Returns the step folder.
  // IoError on every worker when any could not write its files: the one that could not names the
  // file and why, the others say that another worker could not.
  std::filesystem::path write(strategy::Worker& worker, std::int64_t step, const WriteOwnPart& write_own_part = {});

  // Not collective (asynchronous strategies): writes this worker's state after its own `step`
  // steps into step-<step>/; then, when every member's file of that folder is in place, the
  // manifest and the pruning. Returns whether this call completed the folder. IoError naming the
  // file that could not be written.
  bool write_own(strategy::Worker& worker, std::int64_t step);

  // Collective (every run that writes checkpoints, before its first step; not a newcomer joining a
  // run under way): the first member removes the step folders newer than `step` (this run's start:
  // 0, or the step it resumed from), which an earlier start or run left and this one does not
  // continue: a resume would take them over this run's newer writes, the pruning would count them
  // among the `keep` newest and remove this run's own, and an asynchronous run's files would be
  // mixed with theirs in the same folders. A complete one removed is named in a warning. Then
  // every worker waits for it.
  void discard_newer(strategy::Worker& worker, std::int64_t step) const;

  const std::filesystem::path& folder() const noexcept { return folder_; }

  // Collective: restores into `worker` the newest complete checkpoint of `folder` that every worker
  // can read, falling back to older complete ones (with a warning naming what was wrong), and
  // returns its step. InvalidArgument, on every worker and before anything is restored, when the
  // manifest or a worker's file of the checkpoint tried carries another identity than `identity`
  // (naming the file, the field, saved and now), or when every complete checkpoint holds the
  // survivors' files of an elastic run after a loss (those are skipped otherwise); IoError when no
  // complete checkpoint is readable by every worker. With if_present (resume_if_present): a folder without any complete
  // checkpoint (or absent) restores nothing and returns -1 on every worker (the first member's listing decides, and
  // logs it). InvalidArgument, before anything is restored, when the checkpoint every worker can read is past
  // `last_step` (the run's steps per worker).
  // `read_own_part` (optional): reads this worker's further files of a checkpoint (fast.torch's
  // torch-<rank>.pt) from its step folder, once its own FAST file there is read; returns "" or why
  // it cannot, which counts as a damaged file of this worker (the checkpoint is skipped for the
  // next older one on every worker). It must not throw, and is called on this worker's thread.
  using ReadOwnPart = std::function<std::string(const std::filesystem::path& step_folder)>;
  static std::int64_t restore_newest(const std::filesystem::path& folder, strategy::Worker& worker,
                                     const nlohmann::json& identity, bool if_present = false,
                                     std::int64_t last_step = std::numeric_limits<std::int64_t>::max(),
                                     const ReadOwnPart& read_own_part = {});

  // InvalidArgument naming `folder` (the setting `resume`) unless it is a folder holding at least
  // one complete checkpoint: what a resume is refused for before the run starts (fast train's
  // checks, and fast.Worker.restore_checkpoint before its collective part).
  static void expect_checkpoints(const std::filesystem::path& folder);

  // Steps of the complete checkpoints (step folders with a manifest) in `folder`, newest first.
  static std::vector<std::int64_t> complete_steps(const std::filesystem::path& folder);

  // FOLDER/step-<12 digits>.
  static std::filesystem::path step_folder(const std::filesystem::path& folder, std::int64_t step);

 private:
  void prune(std::int64_t newest) const;
  // After a loss (an elastic run: `newest` holds the survivors' files only), adds to `kept` the
  // newest of `complete` (newest first) that every worker wrote, so that the run stays resumable;
  // says so once.
  void keep_the_newest_whole(std::int64_t newest, const std::vector<std::int64_t>& complete,
                             std::vector<std::int64_t>& kept) const;
  // The first member's list for restore_newest: candidates[0] the count, then the steps, newest
  // first, of the complete checkpoints of `folder` that every worker of the run that wrote them
  // wrote; or -1, the workers that wrote and the run's, when every complete one holds survivors'
  // files only.
  static void list_whole_checkpoints(const std::filesystem::path& folder, std::vector<double>& candidates);
  // Writes this worker's files of `target` (`write_own_part`'s, then Worker::save with the step and
  // the identity); returns "" or why it failed.
  std::string write_file(strategy::Worker& worker, const std::filesystem::path& target, std::int64_t step,
                         const WriteOwnPart& write_own_part = {}) const;
  // The manifest of `target` (atomically), then prune().
  void write_manifest(const std::filesystem::path& target, std::int64_t step, int workers) const;

  std::filesystem::path folder_;
  std::int64_t keep_;
  nlohmann::json identity_;
  mutable bool told_partial_ = false;  // keep_the_newest_whole() warned
};

}  // namespace fast::training
