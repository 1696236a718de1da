#include "fast/adapters/torch/evaluator.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fast/core/error.hpp"
#include "fast/core/suggest.hpp"
#include "fast/core/sum_of_squares.hpp"

namespace fast::torch {

std::vector<std::string> final_model_names() { return {"average", "rank0", "best"}; }

FinalModel parse_final_model(const std::string& name) {
  if (name == "average") return FinalModel::average;
  if (name == "rank0") return FinalModel::rank0;
  if (name == "best") return FinalModel::best;
  FAST_THROW(core::InvalidArgument, "final: unknown representative model '{}'{}; expected one of: {}", name,
             core::did_you_mean(name, final_model_names()), fmt::join(final_model_names(), ", "));
}

Evaluator::Evaluator(strategy::Worker& worker, Replica& replica, Model& model, std::shared_ptr<const Dataset> test,
                     FinalModel final_model, bool private_compute)
    : worker_(worker),
      replica_(replica),
      model_(model),
      test_(std::move(test)),
      final_(final_model),
      private_compute_(private_compute) {}

void Evaluator::compute(const std::function<void()>& work) {
  if (private_compute_)
    worker_.communicator().context().compute_overlapped(0, work);
  else
    work();
}

namespace {

// Scores `candidate` by swapping it into the replica's parameters (no copy of either on the CPU;
// staged on a device: the host copy is swapped and sent over) and back, also when scoring throws:
// both are as they were on return, on the host and on the device.
EvalResult score_swapped(Model& model, Replica& replica, std::span<float> candidate, const Dataset& data) {
  const std::span<float> params = replica.param_span();
  if (candidate.data() == params.data()) {  // the replica itself: nothing to swap
    replica.to_device();
    return evaluate(model, data);
  }
  const auto swap = [&] {
    std::swap_ranges(params.begin(), params.end(), candidate.begin());
    replica.to_device();
  };
  swap();
  try {
    const EvalResult result = evaluate(model, data);
    swap();
    return result;
  } catch (...) {
    swap();
    throw;
  }
}

}  // namespace

// Scores `candidate` on this worker's slice of the test set and all-reduces the sums. Collective;
// the slices are cut among the communicator's group. `candidate` is unchanged on return.
EvalResult Evaluator::score_sliced(std::span<float> candidate) {
  const collective::Communicator& comm = worker_.communicator();
  const std::int64_t index = comm.group_index();
  const std::int64_t members = comm.group_size();
  const std::int64_t n = test_->size();
  const std::int64_t begin = n * index / members;
  const std::int64_t end = n * (index + 1) / members;
  const Dataset slice = test_->slice(begin, end - begin);
  EvalResult local;
  compute([&] { local = score_swapped(model_, replica_, candidate, slice); });
  std::vector<double> sums{local.accuracy * static_cast<double>(local.samples),
                           local.loss * static_cast<double>(local.samples), static_cast<double>(local.samples)};
  worker_.communicator().allreduce(core::MutableView(std::span<double>(sums)));
  return {.accuracy = sums[0] / sums[2], .loss = sums[1] / sums[2], .samples = static_cast<std::int64_t>(sums[2])};
}

std::span<const float> Evaluator::representative() const noexcept {
  if (in_place_) return replica_.param_span();
  if (in_grads_) return replica_.grad_span();
  return representative_;
}

double Evaluator::representative_norm() {
  double norm = 0;
  compute([&] { norm = core::l2_norm(representative()); });
  return norm;
}

void Evaluator::release_representative() {
  std::vector<float>().swap(representative_);
  in_place_ = false;
  in_grads_ = false;
}

std::span<float> Evaluator::representative_buffer() {
  const std::size_t n = replica_.param_span().size();
  in_grads_ = replica_.grad_span().size() == n;
  if (in_grads_) {
    std::vector<float>().swap(representative_);
    return replica_.grad_span();
  }
  representative_.resize(n);
  return representative_;
}

RoundResult Evaluator::run(bool replica_accuracies) {
  collective::Communicator& comm = worker_.communicator();
  const int n = comm.group_size();  // every worker, or the survivors of lost ones
  const std::span<float> params = replica_.param_span();
  const bool identical = worker_.strategy().replicas_identical();
  RoundResult result;

  std::vector<double> accuracies(static_cast<std::size_t>(n), 0.0);
  int best = 0;
  // The strategy's representative read in place when it is this worker's own parameters; else
  // copied into the replica's gradient (representative_buffer).
  const std::span<const float> in_place = final_ == FinalModel::average ? worker_.representative_in_place()
                                                                         : std::span<const float>();
  in_place_ = identical && in_place.data() == params.data() && in_place.size() == params.size();
  std::span<float> representative;
  if (in_place_) {
    std::vector<float>().swap(representative_);
    in_grads_ = false;
  } else {
    representative = representative_buffer();
    if (final_ == FinalModel::average) worker_.representative(representative);
  }
  if (!identical) {
    // The average replica: the representative already is it under `average` (the strategies whose
    // replicas differ represent themselves by their average); otherwise one all-reduce.
    std::vector<float> mean;  // under `average` the representative itself (no copy)
    if (final_ != FinalModel::average) {
      mean.assign(params.begin(), params.end());
      comm.allreduce(core::MutableView(std::span<float>(mean)), {.op = collective::ReduceOp::avg});
    }
    const std::span<const float> average =
        final_ == FinalModel::average ? std::span<const float>(representative) : std::span<const float>(mean);
    std::vector<double> squared{0.0};
    compute([&] { squared[0] = core::sum_of_squared_differences(params, average); });
    comm.allreduce(core::MutableView(std::span<double>(squared)));
    result.consensus_distance = squared[0] / n;
    if (replica_accuracies || final_ == FinalModel::best) {
      replica_.to_device();  // staged: the host copy the strategy updated last
      const double own = evaluate(model_, *test_).accuracy;
      comm.allgather(core::ConstView(&own, 1, core::DType::f64), core::MutableView(std::span<double>(accuracies)));
      best = static_cast<int>(std::max_element(accuracies.begin(), accuracies.end()) - accuracies.begin());
    } else {
      replica_accuracies = false;
    }
  }

  if (final_ != FinalModel::average) {
    result.representative_rank = final_ == FinalModel::rank0 || identical
                                     ? comm.members().front()
                                     : comm.members()[static_cast<std::size_t>(best)];
    std::copy(params.begin(), params.end(), representative.begin());
    comm.broadcast(core::MutableView(representative), result.representative_rank);
  }
  result.representative = score_sliced(in_place_ ? params : representative);
  if (identical) {
    result.replica_accuracy_min = result.replica_accuracy_max = result.representative.accuracy;
  } else if (!replica_accuracies) {
    result.replica_accuracy_min = result.replica_accuracy_max = -1;
  } else {
    result.replica_accuracy_min = *std::min_element(accuracies.begin(), accuracies.end());
    result.replica_accuracy_max = accuracies[static_cast<std::size_t>(best)];
  }
  return result;
}

RoundResult Evaluator::snapshot_round() {
  RoundResult result;
  in_place_ = false;
  in_grads_ = false;
  representative_.resize(replica_.numel());
  const strategy::SnapshotResult snap = worker_.snapshot(representative_);
  result.consensus_distance = snap.consensus_distance;
  result.replica_accuracy_min = result.replica_accuracy_max = -1;
  result.representative = score_swapped(model_, replica_, representative_, *test_);
  return result;
}

}  // namespace fast::torch
