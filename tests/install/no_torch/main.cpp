// Two workers of the threads runtime step allreduce with plain SGD once, with no libtorch: every
// parameter starts at 1 and worker r's gradient is r + 1 everywhere, so after one step of lr 0.5
// on their mean (1.5) each parameter of both workers is 1 - 0.5 * 1.5 = 0.25.
#include <cstdio>
#include <vector>

#include "fast/runtime/launcher.hpp"
#include "fast/strategy/worker.hpp"

int main() {
  std::vector<float> first(2);
  fast::runtime::launch({.runtime = "threads", .workers = 2}, [&](fast::runtime::Context& ctx) {
    std::vector<float> params(4, 1.0f), grads(4, static_cast<float>(ctx.rank() + 1));
    fast::strategy::Worker worker(ctx, {.strategy = {.name = "allreduce"}, .optimizer = {.name = "sgd", .lr = 0.5}},
                                  {.params = params, .grads = grads, .layout = {}});
    worker.step();
    worker.finish();
    first[static_cast<std::size_t>(ctx.rank())] = params[0];
  });
  std::printf("first parameter of each worker: %g %g\n", first[0], first[1]);
  return first[0] == 0.25f && first[1] == 0.25f ? 0 : 1;
}
