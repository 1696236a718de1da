#include "environment.hpp"

#include <array>

#include "seal_pool.hpp"

namespace fast::runtime::zmq {

namespace {
using core::EnvType;
using core::EnvVar;
constexpr std::array kTable{
    EnvVar{"FAST_RENDEZVOUS", EnvType::string, "",
           "HOST:PORT[,HOST:PORT...] of the rendezvous of a multi-process run (runtime zmq); the addresses after the "
           "first serve rejoins once the earlier ones' hosts are lost."},
    EnvVar{"FAST_WORLD_SIZE", EnvType::integer, "0", "Processes in a multi-process run; 0: not set.", 0, 1 << 20},
    EnvVar{"FAST_PROCESS_RANK", EnvType::integer, "-1",
           "This process's index in [0, FAST_WORLD_SIZE); -1: the rendezvous assigns one in arrival order.", -1,
           (1 << 20) - 1},
    EnvVar{"FAST_KEY_FILE", EnvType::path, "",
           "This process's CURVE key pair file (`fast keygen`); /dev/stdin: read from standard input (`fast "
           "launch --hosts` sends it so, never on a command line)."},
    EnvVar{"FAST_ALLOW_FILE", EnvType::path, "",
           "Allow-list of the run: the public keys admitted, one per line (`fast keygen` writes PATH.pub lines)."},
    EnvVar{"FAST_ALLOW_KEYS", EnvType::string, "",
           "Public keys admitted, comma-separated, where FAST_ALLOW_FILE is not set (`fast launch --hosts` sets "
           "it: public keys only, so they may travel on a command line)."},
    EnvVar{"FAST_INSECURE", EnvType::integer, "0",
           "1: no authentication and no encryption between processes (warns); 0: CURVE keys required.", 0, 1},
    EnvVar{"FAST_PEER_TIMEOUT", EnvType::number, "5", "Seconds a silent peer process may last before it is lost."},
    EnvVar{"FAST_RENDEZVOUS_TIMEOUT", EnvType::number, "60",
           "Seconds a process waits at the rendezvous for every process of the run."},
    EnvVar{"FAST_TRANSPORT", EnvType::string, "",
           "tcp or ipc (processes of one host only); empty: tcp (on one host ipc was slower, docs/launch.md)."},
    EnvVar{"FAST_SHM_BYTES", EnvType::integer, "-1",
           "Bytes of each shared-memory ring between two processes of one host (runtime zmq): every message to "
           "that process goes through it rather than through ZeroMQ (a message larger than the ring goes through it "
           "in parts of a quarter of it; one that finds it full waits in order for room); 0: none; -1: 256 MiB per "
           "process shared among the other processes of the host, 1 to 8 MiB per ring.",
           -1, 64LL << 30},
    EnvVar{"FAST_POLL_US", EnvType::integer, "200",
           "Microseconds a thread waiting for a message from another process polls the shared-memory rings and "
           "the direct streams itself before it sleeps (runtime zmq): spinning where the host's workers fit its "
           "cores, else giving its core away between looks; 0: never (a reader thread per ring or stream "
           "delivers every message).",
           0, 1000000},
    EnvVar{"FAST_STREAMS", EnvType::integer, "1",
           "1: data between processes that share no memory and talk over tcp goes through a direct TCP stream per "
           "pair, protected by AES-256-GCM (ChaCha20-Poly1305 without AES-NI; an XXH3 checksum under --insecure), "
           "keyed through the CURVE-encrypted hello (runtime zmq, docs/launch.md); 0: through ZeroMQ.",
           0, 1},
    EnvVar{"FAST_AES_LIBRARY", EnvType::string, "auto",
           "Library that computes the direct TCP streams' AES-256-GCM (runtime zmq, docs/launch.md): ipsec-mb "
           "(Intel's Multi-Buffer Crypto for IPsec, where this build has it and the CPU has AES instructions; about "
           "2.3 times OpenSSL's speed on a core with VAES), openssl (OpenSSL's libcrypto), or auto: ipsec-mb where "
           "offered, else openssl. Both write the same bytes, so processes with different choices work together."},
    EnvVar{"FAST_SEAL_THREADS", EnvType::integer, "-1",
           "Helper threads per process that seal and open the chunks of a large message on the direct TCP streams "
           "(AES-256-GCM, ChaCha20-Poly1305 or the --insecure checksum) beside the thread that sends or receives "
           "it, so that one message is protected on several cores (runtime zmq, docs/launch.md); 0: none, that "
           "thread seals each chunk itself; -1: automatic, with encryption what each worker's share of the "
           "machine's cores leaves beyond two, at most 2 (none on 2 cores per worker or fewer, none with --insecure).",
           -1, SealPool::kMaxSlots - 1},
    EnvVar{"FAST_READ_ALONGSIDE", EnvType::integer, "-1",
           "1: while a direct stream's messages are 256 KiB or larger, its reader thread reads them alongside the "
           "polling waiters, on a core of its own (runtime zmq, docs/launch.md); 0: it steps back while waiters "
           "poll; -1: 1 where the host has two cores per worker or more.",
           -1, 1},
    EnvVar{"FAST_HOST", EnvType::string, "",
           "Address this process binds and is reached at over tcp; empty: the address that reaches the rendezvous."},
    EnvVar{"FAST_ADVERTISE", EnvType::string, "",
           "Address given to the other processes to reach this one over tcp, when it differs from the one bound "
           "(NAT, containers: FAST_HOST or the address that reaches the rendezvous); empty: the address bound."},
    EnvVar{"FAST_PORTS", EnvType::string, "",
           "LO-HI: every port a process listens on (data, heartbeats, streams) lies in this range, so that a "
           "firewall opens just it (docs/launch.md, \"Ports and firewalls\"); empty: ports the kernel chooses."},
    EnvVar{"FAST_LAUNCHED", EnvType::integer, "0", "Set to 1 by `fast launch` in the processes it starts.", 0, 1},
    EnvVar{"FAST_LOCAL_RANK", EnvType::integer, "-1",
           "Set by `fast launch`: this process's index among the processes it starts on the same host; -1: unknown.",
           -1, 1 << 20},
    EnvVar{"FAST_LOCAL_WORLD_SIZE", EnvType::integer, "0",
           "Set by `fast launch`: the processes it starts on this process's host (libtorch's threads are sized by "
           "them); 0: unknown (with FAST_LAUNCHED=1: every process of the run).",
           0, 1 << 20},
    EnvVar{"FAST_RESTARTED", EnvType::integer, "0",
           "Set to 1 by `fast launch --restart` in a process it starts again alone: it takes its rank back in the "
           "run under way (process 0 too: it asks the rendezvous's server, a survivor, instead of serving it). Set "
           "it by hand, without FAST_PROCESS_RANK, for a process that joins a run that may grow (max_workers): it "
           "takes the lowest vacant rank, else the lowest lost one.",
           0, 1},
};
}  // namespace

core::EnvTable zmq_environment() { return kTable; }

}  // namespace fast::runtime::zmq
