// A program of your own on the installed FAST (README.md here, docs/install.md): your libtorch model,
// Fashion-MNIST through FAST's loader, 2 workers on the threads runtime, gradients averaged by the
// allreduce strategy. Exits 1 unless test accuracy > kBound and the two replicas end identical.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <torch/nn/functional/loss.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include "fast/adapters/torch/loader.hpp"
#include "fast/adapters/torch/replica.hpp"
#include "fast/adapters/torch/threads.hpp"
#include "fast/runtime/launcher.hpp"
#include "fast/strategy/worker.hpp"

struct TinyNetImpl : torch::nn::Module {  // yours: any module with float32 CPU parameters
  torch::nn::Linear hidden{register_module("hidden", torch::nn::Linear(784, 64))};
  torch::nn::Linear out{register_module("out", torch::nn::Linear(64, 10))};
  torch::Tensor forward(const torch::Tensor& x) { return out(torch::relu(hidden(x.flatten(1)))); }
};
TORCH_MODULE(TinyNet);

int main() try {
  constexpr int kWorkers = 2;
  constexpr std::int64_t kSteps = 200, kBatch = 32;  // 12,800 samples: about a fifth of an epoch
  constexpr double kBound = 0.75;                    // test accuracy this short run must beat
  const fast::torch::FashionMnist data = fast::torch::load_fashion_mnist(fast::torch::default_data_dir());
  fast::torch::configure_torch_threads(kWorkers);
  torch::manual_seed(1);
  std::vector<TinyNet> models{TinyNet(), TinyNet()};  // rank 0's initial model is broadcast below
  std::vector<std::vector<float>> final_params(kWorkers);
  double accuracy = 0;
  fast::runtime::launch({.runtime = "threads", .workers = kWorkers}, [&](fast::runtime::Context& ctx) {
    TinyNet& model = models[ctx.rank()];
    fast::torch::Replica replica(*model);  // the parameters and gradients as two flat buffers
    fast::strategy::Worker worker(
        ctx, {.strategy = {.name = "allreduce"}, .optimizer = {.name = "momentum", .lr = 0.05, .momentum = 0.9}},
        {.params = replica.param_span(), .grads = replica.grad_span(), .layout = replica.layout()});
    worker.communicator().broadcast(replica.params(), 0);
    fast::torch::ShardedLoader loader(data.train, ctx.rank(), kWorkers, kBatch, /*seed=*/1);
    for (std::int64_t s = 0; s < kSteps; ++s) {
      const fast::torch::Batch batch = loader.batch(s / loader.steps_per_epoch(), s % loader.steps_per_epoch());
      replica.zero_grad();
      torch::nn::functional::cross_entropy(model->forward(batch.x), batch.y).backward();
      worker.step();  // all-reduce of the gradients, then the optimizer on the flat parameters
    }
    worker.finish();
    final_params[ctx.rank()].assign(replica.param_span().begin(), replica.param_span().end());
    if (ctx.rank() != 0) return;
    torch::NoGradGuard no_grad;
    const torch::Tensor predicted = model->forward(data.test->features(0, data.test->size())).argmax(1);
    accuracy = predicted.eq(data.test->labels).to(torch::kFloat64).mean().item<double>();
  });
  std::string runtimes;  // what this installation registered (threads, and sim, zmq, mpi when built)
  for (const std::string& name : fast::runtime::runtime_names()) runtimes += " " + name;
  std::printf("runtimes:%s\n", runtimes.c_str());
  const bool identical = final_params[0] == final_params[1];
  std::printf("steps %lld, replicas identical: %s, test accuracy %.4f (bound %.2f)\n", static_cast<long long>(kSteps),
              identical ? "yes" : "no", accuracy, kBound);
  return identical && accuracy > kBound ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "cpp-consumer: %s\n", e.what());
  return 1;
}
