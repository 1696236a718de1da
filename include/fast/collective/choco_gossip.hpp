#pragma once
// ChocoGossip: weighted neighbour averaging (as Communicator::neighbor_average) with every message
// through a lossy codec — CHOCO-gossip (Koloskova, Stich, Jaggi, ICML 2019, Algorithm 1).
//
// Each worker i keeps x^_i, the public copy of its tensor that its neighbours reconstruct, and
// x^_j for every in-neighbour j. One mix(x):
//   q_i   = encode(x_i - x^_i)          sent to every out-neighbour (compress::DeltaSender)
//   x^_i += decode(q_i);  x^_j += decode(q_j) for every in-neighbour j (compress::DeltaReceiver)
//   x_i  += gamma * ( sum_j w_ij x^_j + w_ii x^_i - x^_i )
// With doubly stochastic weights the sum over workers of x is preserved exactly in real arithmetic
// (every x^_j enters its neighbours' updates with weights that sum to its own), and what a codec
// drops is carried in x - x^ to the next message. gamma in (0, 1] is the consensus step size: 1
// with an exact codec gives neighbor_average; biased sparse codecs need a smaller one (the paper
// tunes it per codec; docs/compression.md lists the values FAST measured).
//
// Collective: every worker calls mix() at the same point with neighbour lists that agree (u lists
// v as out-neighbour exactly when v lists u as in-neighbour). Tags:
// make_tag(TagKind::collective, sequence, 0), one message per directed edge per mix.
//
// Memory: (1 + in-degree) float32 copies of the tensor. Thread-safety: one activity at a time.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fast/collective/communicator.hpp"
#include "fast/compress/delta_link.hpp"
#include "fast/compress/meter.hpp"
#include "fast/core/layout.hpp"

namespace fast::collective {

struct ChocoOptions {
  std::string codec = "none";                   // compress::make_codec spec
  std::uint64_t seed = 0;                       // the codec's random stream, mixed with the rank
  double gamma = 1.0;                           // consensus step size, in (0, 1]
  const core::Layout* layout = nullptr;         // the tensor's blocks (powersgd); null: one vector
  compress::CompressionMeter* meter = nullptr;  // counts every encode (not owned; may be null)
  // The value every worker's tensor starts from, identical on all workers (empty: zeros); the
  // public copies x^ start there.
  std::span<const float> initial;
};

class ChocoGossip {
 public:
  // Weights as neighbor_average: in_weights[k] for in_neighbors[k], self_weight for this worker.
  // InvalidArgument for a bad codec spec, a gamma outside (0, 1] or lists of different lengths.
  ChocoGossip(Communicator& comm, std::size_t n, std::vector<int> in_neighbors, std::vector<double> in_weights,
              std::vector<int> out_neighbors, double self_weight, ChocoOptions options);
  ~ChocoGossip();

  // Collective: one gossip round on x (f32, n elements), in place.
  void mix(std::span<float> x);

  // This worker's public copy x^_i (what its neighbours hold of it).
  std::span<const float> public_copy() const noexcept;

  // Checkpoints: x^_i with its codec's state ("<prefix>.self...") and the copy x^_j of each
  // in-neighbour j ("<prefix>.from.<j>.reference"). restore: into a ChocoGossip of the same
  // neighbours, length and codec; IoError naming `source` for a missing value. Local.
  void save(std::string_view prefix, core::SavedState& out) const;
  void restore(std::string_view prefix, const core::SavedState& in, std::string_view source);

 private:
  Communicator& comm_;
  std::size_t n_;
  std::vector<int> in_;
  std::vector<double> in_weights_;
  std::vector<int> out_;
  double self_weight_;
  ChocoOptions options_;
  std::unique_ptr<compress::DeltaSender> self_;
  std::vector<std::unique_ptr<compress::DeltaReceiver>> peers_;
};

}  // namespace fast::collective
