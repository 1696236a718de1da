#pragma once
// What a runtime knows of the network between its workers, for algorithms that choose by cost
// (collective::choose_allreduce): the latency-bandwidth model, one message of m bytes taking
// latency + m / bandwidth seconds. The values describe the slowest pair of workers, and are the
// same on every worker of a world, so that every worker makes the same choice.

namespace fast::runtime {

struct NetworkModel {
  double latency_seconds = 0;             // one message's fixed cost, seconds (>= 0)
  double bandwidth_bytes_per_second = 0;  // bytes per second along the path (> 0)
  // Bytes per second of a pass over local memory (adding a received buffer into the data); 0 when
  // such passes cost nothing on the runtime's clock (sim, where only flops and transfers take time).
  double local_bytes_per_second = 0;
};

}  // namespace fast::runtime
