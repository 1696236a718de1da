#pragma once
// Checkpoint: what one worker saves to continue a run exactly where it stopped (docs/faults.md,
// "Checkpoints and resume"): a core::SavedState of named float32 arrays (the replica, the
// optimizer's state buffers, a strategy's own vectors), float64 arrays (error-feedback residuals,
// push-sum numerators), 64-bit integers (step and draw counts) and texts (the run's identity,
// CheckpointStore), and its file format.
//
// File format (version 3, little-endian, one file per worker):
//
//   offset  size  field
//    0       8    magic "FASTCKPT"
//    8       4    u32 version (3; versions 1 (no kind 3 or 4) and 2 (no kind 4) are read too)
//   12       4    u32 section count
//   16       .    sections, each: u8 kind (1: f32 array, 2: i64, 3: f64 array, 4: text), u16 name
//                 length (1..255), the name, u64 element count (1 for i64, bytes for a text, at
//                 most 1 MiB), the elements; the texts come first, so read_checkpoint_texts()
//                 reads a file's first bytes only
//   end-4    4    u32 CRC-32 (zlib) of every byte before it
//
// Decoding validates, in this order, before any allocation larger than the file: the length, the
// magic, the version, the checksum, then each section's kind, name length and element count
// against the bytes that remain; a repeated name and trailing bytes are errors too. Every error is
// core::IoError naming the source, what was wrong, expected and got.
//
// Writing is atomic: the bytes go to "<file>.tmp-<pid>-<call>" (a count of the process's writes, so two threads of one
// process never share it), are flushed to the disk (fsync), and the temporary file is renamed over <file>; a crash
// during the write leaves either the previous file or none, never a partial one under the final name.
//
// Thread-safety: free functions on their arguments; distinct files may be written concurrently.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fast/core/saved_state.hpp"

namespace fast::strategy {

using Checkpoint = core::SavedState;

std::vector<std::byte> encode_checkpoint(const Checkpoint& checkpoint);
// IoError (see the format above); `source` names the bytes in messages (a file path).
Checkpoint decode_checkpoint(std::span<const std::byte> bytes, std::string_view source);

// `bytes` written atomically to `file` (see above: a temporary, fsync, rename); IoError naming
// `what` and the file when it cannot be written (the temporary is removed).
void write_file_atomically(const std::filesystem::path& file, std::span<const std::byte> bytes, std::string_view what);
// Atomic write (see above). IoError naming the file when it cannot be written.
void write_checkpoint_file(const std::filesystem::path& file, const Checkpoint& checkpoint);
// IoError naming the file when it cannot be read or does not decode.
Checkpoint read_checkpoint_file(const std::filesystem::path& file);
// The text sections of `file` (the first sections, see above), read without the rest of the file
// and so without its checksum: for messages and early refusals only, never for the state itself
// (read_checkpoint_file checks everything). IoError naming the file when it cannot be read or its
// header or a text section is malformed.
std::map<std::string, std::string, std::less<>> read_checkpoint_texts(const std::filesystem::path& file);

}  // namespace fast::strategy
