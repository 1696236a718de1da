#pragma once
// The identity of a `fast train` run (docs/faults.md, "Run identity"): the settings that decide its
// computation, as a JSON object of named fields, with a fingerprint (a hash of them all). Every file
// a run writes and later reads carries it (a worker's checkpoint file, a checkpoint's manifest, the
// summary that `fast compare` reads back), and a reader refuses a file whose identity differs from
// its own, naming the file, the field and both values, before anything of the file is used.
//
// Fingerprinted: the format version of this identity, the world size, the model, its parameter
// count and layout, the dataset, its training-set size, the batch and the seed (with the world
// size, the data order), the strategy and every option it reads (the codec among them), the
// optimizer and dgc_warmup_epochs. Not fingerprinted: what may change on resume (steps, epochs,
// the learning rate and its schedule, the optimizer's coefficients, evaluation, checkpoint cadence
// and folders, logging and output files, the runtime, the device, timeouts and the slowdown).
// Torch-free.
//
// Thread-safety: free functions on their arguments.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fast/core/layout.hpp"
#include "fast/training/train_options.hpp"

namespace fast::training {

// The version of the identity's fields and of the computation they name: a file of another
// version is refused ("format").
inline constexpr std::int64_t kRunIdentityFormat = 1;

// The workers of the run's world when known before launch: `workers` for a runtime whose world
// lives in one process (threads, sim); for a multi-process one (zmq, mpi) the processes, as given
// or detected from the launcher, times the workers per process (max_workers when set: a run that
// may grow has that many ranks); 0 when only the runtime knows.
int workers_before_launch(const TrainOptions& o);

// The fields that follow from the options alone: format, model, dataset, batch, seed, strategy,
// each option the strategy reads (by its config key), optimizer, dgc_warmup_epochs, and workers
// when `workers` > 0. A run adds the fields that need its data and model (add_model_fields) and
// then its fingerprint.
nlohmann::json settings_identity(const TrainOptions& o, int workers);

// Adds parameters (the count), layout (a hash of the tensors' names and shapes, hex) and
// train_samples to `identity`.
void add_model_fields(nlohmann::json& identity, std::uint64_t parameters, std::span<const core::TensorBlock> layout,
                      std::int64_t train_samples);

// `identity` with "fingerprint": the 64-bit FNV-1a hash (16 hex digits) of its other fields'
// canonical JSON text (keys sorted).
nlohmann::json with_fingerprint(nlohmann::json identity);

// "" when `saved` (the identity a file carries; null when it carries none) matches `expected`:
// every field of `expected` but the fingerprint is equal in `saved`, and the fingerprints are equal
// where `expected` has one. Otherwise why not: "'FILE' was written by a run with FIELD = SAVED;
// this run has FIELD = NOW" for the first field that differs (by name), or a sentence naming the
// fingerprints or the missing identity.
std::string identity_mismatch(const nlohmann::json& saved, const nlohmann::json& expected, std::string_view file);

}  // namespace fast::training
