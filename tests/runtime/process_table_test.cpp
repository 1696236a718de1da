// workers_on_machine (src/runtime/zmq/process_table.hpp): the workers of the processes on the given
// process's machine (equal boot ids, else equal host names), whatever their network namespace,
// vacant ranks aside.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace fast::runtime::zmq
