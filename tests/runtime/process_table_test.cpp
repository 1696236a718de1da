// workers_on_machine (src/runtime/zmq/process_table.hpp): the workers of the processes on the given
// process's machine (equal boot ids, else equal host names), whatever their network namespace,
// vacant ranks aside; and the machine id's way through a hello (hello.hpp), which reads a hello
// without one as unknown; rings_between, whether two processes exchange their data through shared
// memory, and the offer's way through a hello.
#include <gtest/gtest.h>

#include "hello.hpp"
#include "process_table.hpp"

namespace fast::runtime::zmq {
namespace {

ProcessInfo process(int rank, int workers, const std::string& hostname, const std::string& netns,
                    const std::string& machine = "") {
  return {.rank = rank,
          .first_worker = rank * workers,
          .workers = workers,
          .host_id = hostname + "/" + netns,
          .hostname = hostname,
          .machine_id = machine};
}

TEST(WorkersOnMachine, CountsEveryProcessOfTheHostNameInEveryNetworkNamespaceButVacantRanks) {
  // Host a: processes 0 and 1 in one namespace, 3 in another; host b: process 2; rank 4 vacant.
  const ProcessTable table{process(0, 2, "a", "net:[1]"), process(1, 2, "a", "net:[1]"), process(2, 2, "b", "net:[1]"),
                           process(3, 2, "a", "net:[7]"), vacant_process(4, 2)};
  EXPECT_EQ(workers_on_machine(table, 0), 6);
  EXPECT_EQ(workers_on_machine(table, 1), 6);
  EXPECT_EQ(workers_on_machine(table, 3), 6);
  EXPECT_EQ(workers_on_machine(table, 2), 2);
}

TEST(WorkersOnMachine, AProcessAloneOnItsHostCountsItsOwnWorkers) {
  const ProcessTable table{process(0, 3, "a", "net:[1]"), process(1, 3, "b", "net:[1]")};
  EXPECT_EQ(workers_on_machine(table, 0), 3);
  EXPECT_EQ(workers_on_machine(table, 1), 3);
}

TEST(WorkersOnMachine, BootIdsTellMachinesOfOneHostNameApartAndJoinContainersOfOneMachine) {
  // Processes 0 and 1: two machines both named "debian"; 2: a container of process 0's machine.
  const ProcessTable table{process(0, 1, "debian", "net:[1]", "boot-a"), process(1, 1, "debian", "net:[1]", "boot-b"),
                           process(2, 1, "c0ffee", "net:[9]", "boot-a"), process(3, 1, "debian", "net:[1]")};
  EXPECT_EQ(workers_on_machine(table, 0), 3);  // 0, the container 2, and 3 (its boot id unknown: by name)
  EXPECT_EQ(workers_on_machine(table, 1), 2);  // 1 and 3
  EXPECT_EQ(workers_on_machine(table, 2), 2);  // 2 and 0
  EXPECT_EQ(workers_on_machine(table, 3), 3);  // by name: 0, 1 and 3
}

TEST(MachineId, TravelsInAHelloAndAHelloWithoutOneReadsAsUnknown) {
  ProcessInfo p = process(3, 2, "h", "net:[1]", "0f6c-boot");
  p.ipc_endpoint = "ipc:///tmp/a.sock";
  p.tcp_endpoint = "tcp://10.0.0.1:5000";
  p.pulse_ipc_endpoint = "ipc:///tmp/b.sock";
  p.pulse_tcp_endpoint = "tcp://10.0.0.1:5001";
  p.pid = 42;
  nlohmann::json j = to_json(p);
  EXPECT_EQ(process_from_json(j).machine_id, "0f6c-boot");
  j.erase("machine_id");  // a hello without one
  const ProcessInfo older = process_from_json(j);
  EXPECT_EQ(older.machine_id, "");
  EXPECT_EQ(older.hostname, "h");
  EXPECT_EQ(older.pid, 42);
}

TEST(RingsBetween, OnlyProcessesOfOneHostIdThatBothOfferRings) {
  const ProcessInfo a = process(0, 1, "a", "net:[1]"), b = process(1, 1, "a", "net:[1]");
  EXPECT_TRUE(rings_between(a, b));
  EXPECT_FALSE(rings_between(a, process(2, 1, "a", "net:[7]")));  // another network namespace: another host
  EXPECT_FALSE(rings_between(a, process(2, 1, "b", "net:[1]")));
  ProcessInfo no_rings = b;
  no_rings.shared_memory = false;  // FAST_SHM_BYTES=0 on one side
  EXPECT_FALSE(rings_between(a, no_rings));
  EXPECT_FALSE(rings_between(no_rings, a));
  EXPECT_FALSE(rings_between(a, vacant_process(3, 1)));
}

TEST(RingsBetween, TheOfferTravelsInAHelloAndAHelloWithoutItOffersRings) {
  ProcessInfo p = process(3, 2, "h", "net:[1]");
  p.shared_memory = false;
  nlohmann::json j = to_json(p);
  EXPECT_FALSE(process_from_json(j).shared_memory);
  j.erase("shm");
  EXPECT_TRUE(process_from_json(j).shared_memory);
}

}  // namespace
}  // namespace fast::runtime::zmq
