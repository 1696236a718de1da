// Benchmark (b), peer side: a plain libtorch training loop, the baseline for the framework
// overhead of `fast train --workers 1`. Same model (fast::torch::make_model, loaded with FAST's
// initial_parameters for the same seed), same data (fast::torch::load_fashion_mnist, whose
// training split is decoded once into float32 features, as a plain loop holds its data; `fast
// train` decodes each batch from the pixels, a cost counted in its overhead), a per-epoch
// permutation with index_select batches, torch::optim::SGD with momentum,
// cross_entropy, zero_grad / backward / step, and the same libtorch thread settings as FAST
// (intra-op threads = --threads, else FAST_TORCH_THREADS, else the cores; inter-op threads = 1).
//
// Timing window: from the start of step 0 to the end of the last step, as `fast train` measures
// its summary's samples_per_second (data loading, model construction and evaluation excluded).
// The rate after the first --warmup steps is reported too (samples_per_second_warm).
//
// Output: one line of JSON on stdout (and in --out FILE when given).

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>

#include <ATen/Parallel.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/sgd.h>
#include <torch/types.h>
#include <torch/utils.h>

#include "fast/adapters/torch/device.hpp"
#include "fast/adapters/torch/fashion_mnist.hpp"
#include "fast/adapters/torch/models.hpp"
#include "fast/core/error.hpp"

namespace {

struct Args {
  std::string model = "mlp";
  std::int64_t batch = 64;
  double lr = 0.05;
  double momentum = 0.9;
  std::int64_t steps = 1000;
  std::int64_t warmup = 50;
  int threads = 0;  // 0: FAST_TORCH_THREADS, else the cores
  std::uint64_t seed = 1;
  std::string data_dir;
  std::string out;
  std::string device = "cpu";  // cpu, cuda, cuda:K (fast train's --device): model and batches there
};

[[noreturn]] void usage(const char* prog, const std::string& msg) {
  std::fprintf(stderr,
               "%s: %s\n"
               "usage: %s [--model mlp|cnn] [--batch B] [--lr X] [--momentum X] [--steps N] [--warmup W]\n"
               "          [--threads T] [--seed S] [--data-dir DIR] [--device cpu|cuda|cuda:K] [--out FILE.json]\n",
               prog, msg.c_str(), prog);
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string key = argv[i];
    if (key == "-h" || key == "--help") usage(argv[0], "plain libtorch training loop");
    if (i + 1 >= argc) usage(argv[0], "missing value after " + key);
    const std::string v = argv[++i];
    if (key == "--model")
      a.model = v;
    else if (key == "--batch")
      a.batch = std::stoll(v);
    else if (key == "--lr")
      a.lr = std::stod(v);
    else if (key == "--momentum")
      a.momentum = std::stod(v);
    else if (key == "--steps")
      a.steps = std::stoll(v);
    else if (key == "--warmup")
      a.warmup = std::stoll(v);
    else if (key == "--threads")
      a.threads = std::stoi(v);
    else if (key == "--seed")
      a.seed = std::stoull(v);
    else if (key == "--data-dir")
      a.data_dir = v;
    else if (key == "--out")
      a.out = v;
    else if (key == "--device")
      a.device = v;
    else
      usage(argv[0], "unknown option " + key);
  }
  if (a.batch < 1 || a.steps < 1 || a.warmup < 0 || a.warmup >= a.steps) {
    usage(argv[0], "need batch >= 1, steps >= 1, 0 <= warmup < steps");
  }
  return a;
}

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  try {
    int threads = args.threads;
    if (threads <= 0) {
      const char* env = std::getenv("FAST_TORCH_THREADS");
      threads = env != nullptr && std::atoi(env) > 0 ? std::atoi(env) : 0;
    }
    at::set_num_interop_threads(1);
    if (threads > 0) at::set_num_threads(threads);
    threads = at::get_num_threads();

    const std::string dir =
        args.data_dir.empty()
            ? (std::getenv("FAST_DATA_DIR") ? std::getenv("FAST_DATA_DIR") : fast::torch::default_data_dir().string())
            : args.data_dir;
    const fast::torch::FashionMnist data = fast::torch::load_fashion_mnist(dir);
    const torch::Tensor images = data.train->features(0, data.train->size());  // float32, decoded once
    const torch::Tensor& labels = data.train->labels;
    const std::int64_t n = data.train->size();
    const std::int64_t steps_per_epoch = n / args.batch;

    fast::torch::check_device(args.device, "--device");
    const torch::Device device = fast::torch::worker_device(args.device, 0);
    fast::torch::Model model = fast::torch::make_model(args.model);
    std::vector<torch::Tensor> parameters;
    for (auto& [name, p] : model.named_parameters()) parameters.push_back(p);
    {
      const std::vector<float> init = fast::torch::initial_parameters(args.model, args.seed);
      torch::NoGradGuard no_grad;
      std::size_t offset = 0;
      for (torch::Tensor& p : parameters) {
        p.copy_(torch::from_blob(const_cast<float*>(init.data() + offset), p.sizes(), torch::kFloat32));
        offset += static_cast<std::size_t>(p.numel());
      }
    }
    model.to(device);  // the parameters keep their identity (their data moves), as the optimizer needs
    torch::optim::SGD optimizer(parameters, torch::optim::SGDOptions(args.lr).momentum(args.momentum));
    torch::Generator gen = at::detail::createCPUGenerator(args.seed);

    torch::Tensor perm;
    double loss_tail = 0;  // mean training loss of the last min(50, steps) steps (sanity check)
    const std::int64_t tail_from = args.steps - std::min<std::int64_t>(50, args.steps);
    double t_warm = 0;
    const double t0 = seconds_now();
    for (std::int64_t s = 0; s < args.steps; ++s) {
      const std::int64_t step = s % steps_per_epoch;
      if (step == 0) perm = torch::randperm(n, gen, torch::kInt64);
      const torch::Tensor idx = perm.slice(0, step * args.batch, (step + 1) * args.batch);
      const torch::Tensor x = images.index_select(0, idx).to(device);  // as fast train: CPU data, batch copied over
      const torch::Tensor y = labels.index_select(0, idx).to(device);
      optimizer.zero_grad();
      torch::Tensor loss = torch::nn::functional::cross_entropy(model.forward(x), y);
      loss.backward();
      optimizer.step();
      const double loss_value = loss.item<double>();
      if (s >= tail_from) loss_tail += loss_value;
      if (s + 1 == args.warmup) t_warm = seconds_now();
    }
    const double t1 = seconds_now();
    if (args.warmup == 0) t_warm = t0;

    const double wall = t1 - t0;
    const double sps = static_cast<double>(args.steps * args.batch) / wall;
    const double sps_warm = static_cast<double>((args.steps - args.warmup) * args.batch) / (t1 - t_warm);
    char line[768];
    std::snprintf(
        line, sizeof(line),
        "{\"impl\": \"plain_libtorch\", \"device\": \"%s\", \"model\": \"%s\", \"batch\": %lld, \"steps\": %lld, "
        "\"warmup\": %lld, \"threads\": %d, \"wall_seconds\": %.6f, \"samples_per_second\": %.3f, "
        "\"samples_per_second_warm\": %.3f, \"final_train_loss\": %.5f}",
        args.device.c_str(), args.model.c_str(), static_cast<long long>(args.batch), static_cast<long long>(args.steps),
        static_cast<long long>(args.warmup), threads, wall, sps, sps_warm,
        loss_tail / static_cast<double>(args.steps - tail_from));
    std::printf("%s\n", line);
    if (!args.out.empty()) {
      std::ofstream f(args.out);
      f << line << "\n";
      if (!f) throw std::runtime_error("cannot write " + args.out);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], fast::core::user_message(e).c_str());
    return 1;
  }
  return 0;
}
