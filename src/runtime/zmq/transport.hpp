#pragma once
// ZmqTransport: the zmq runtime's link between the workers of this process and those of the
// others (engine/transport.hpp). One I/O thread owns every socket:
//   - a ROUTER bound on ipc:// and tcp:// receives every frame sent to this process's workers;
//   - one DEALER per other process (routing id "p<rank>") sends to it, over ipc:// when both share
//     a host and network namespace, else tcp:// (Settings::transport forces one);
//   - the heartbeats have sockets of their own, the same way: a ROUTER (`pulse_`) and a DEALER per
//     other process, whose connections run on the context's second I/O thread (kPulseAffinity), so
//     that no data message, however large or however slow its link, holds a heartbeat back;
//   - with CURVE (the default) every connection is authenticated and encrypted; a frame must come
//     with the key of the process its source rank belongs to (or it is dropped and logged).
// Frames are wire/ frames (header part + payload part), validated before anything is delivered:
// a malformed frame is logged and dropped, never delivered, never a crash.
//
// Sends go from the sending thread straight to the peer's socket (PeerLink), not through the I/O
// thread. Send completion: a payload under kZeroCopyBytes is copied and its Work completes at
// once; a larger one is handed to ZeroMQ without a copy and its Work completes when ZeroMQ
// releases it.
//
// Shared memory (transport_shared.cpp, shared_ring.hpp): at start (and when a rank is taken back)
// this process offers every process of its host (same host_id) a ring (its capacity:
// ring_capacity()), in a hello frame {"shm": {id, fd, bytes}}; the peer maps it, starts a reader
// thread for it and answers {"shm_ready": id} (or {"shm_refused": id}, and logs why). From then on
// every data message to that process is a record in the ring (the frame header, then the payload)
// and its Work completes at once; no frame crosses ZeroMQ for it. The reader sleeps on the ring's
// futex until the sender publishes, and delivers the records in order.
// A message larger than the ring goes through it in parts (send_fragments, assemble); one that
// finds the ring full waits for room in order (OutboundShared::pending). Order per (source, tag) holds across the two
// paths: each record carries how many data frames its sender had sent to this process through ZeroMQ before it, and is
// delivered only once that many were handled here; and before any frame from a process is handled, the records that
// process published before sending it are delivered. (A data frame that cannot be decoded is not counted: a sender
// whose frames fail to decode stalls its own records behind them.) A record that breaks the ring's rules counts its
// sender lost.
//
// Streams (transport_stream.cpp, stream.hpp): between processes that share no ring and talk over
// tcp:// (other hosts, or FAST_TRANSPORT=tcp with FAST_SHM_BYTES=0), data leaves ZeroMQ for a
// direct TCP stream per ordered pair. At start (and when a rank is taken back) this process
// listens on one ephemeral port and offers each such process, in a hello frame (CURVE-encrypted
// unless --insecure), {"stream": {id, port, protection, key}}: a fresh random 256-bit key for the
// direction peer -> this process, and the protection (this CPU's fastest AEAD: AES-256-GCM with
// AES-NI, else ChaCha20-Poly1305; under --insecure an XXH3 checksum). The peer connects, sends the
// preamble and an `open` record sealed under that key — a connection whose first record does not
// open is closed and logged, so the port admits only the processes the hello reached — and from
// then on sends every data message and its bye as records on the stream, from the sending thread
// (the Work completes at once: the kernel holds the bytes; while the socket is full the sender
// polls, reading what the peer sends, then blocks as a waiter does). A thread per accepted stream
// reads the records, opens them chunk by chunk into a buffer of the message, and delivers them;
// where waiters poll (polls_in_caller), a waiter reads them itself, as MPI's progress does, and
// the stream's thread steps back while a waiter polled within kStreamGrace, so that a message
// crosses no thread. Order: the
// `open` record carries how many data frames went through ZeroMQ before it; its data waits until
// that many were handled here. A record that fails to open (tampered, replayed, reordered, wrong
// key) or a stream cut in the middle of a record counts its sender lost, naming why. Where the
// stream cannot be set up, messages keep going through ZeroMQ (logged).
//
// Lost peers: every process sends a heartbeat to every other every min(peer_timeout / 4, 1 s), on
// the heartbeat sockets; a process not heard from (any frame counts, on either socket) for
// peer_timeout seconds, one that sent `bye` with an error, or one that ended cleanly (`bye` without
// error) is lost: receives from its workers fail with PeerLost naming the worker, its process,
// host and pid, and why; sends to them throw it. A heartbeat is dropped rather than queued when
// its socket holds kPulseBacklog of them already (a peer that stopped reading); the heartbeat
// ROUTER likewise holds at most kPulseBacklog per peer before ZeroMQ stops reading that connection.
//
// Rejoins (runs that tolerate losses; docs/faults.md): the process that served the rendezvous
// keeps its socket (serve_rejoins) and answers hellos that arrive during the run. A hello for a
// rank r > 0 (or -1: the lowest lost rank) of the same world size and workers per process, signed
// by the key it names, waits until this process counts r lost (refused after peer_timeout + 2 s
// if r stays live, at once if r ended its work cleanly). Then it is announced to every other live process (a hello
// frame
// {"rejoin": info}); each one revives r (revive(): the new endpoints and key, a new link, the
// predecessor's queued messages dropped, alive(r) true again) and acknowledges ({"ack": r}).
// Rejoins are announced one at a time (each newcomer knows the earlier ones); a hello for a rank
// already being taken back replaces the earlier newcomer, which is refused; acknowledgements name
// the newcomer's pid. Once every live process acknowledged (or was lost), this process revives r
// and answers the newcomer with the table, "rejoin": true and the losses and rejoins so far (inherit_membership),
// so the newcomer's first frame finds every process ready for it. When a process is lost, the
// lowest live process on process 0's host tries to bind the rendezvous address (take_over_desk:
// at each loss and once a second after, and only once the process serving it is lost, not when it ended its work
// cleanly; it succeeds once that process is gone and when the address is one of this host's) and serves the rejoins
// from then on, rank 0's included, with the same protocol: its announcements and the acknowledgements to it name it as
// the sender. Where no process of that host is live, the next address of --rendezvous whose host
// has a live process is served likewise (Settings::rendezvous_fallbacks). A new server tells every
// live process ({"desk": rank}); a desk answers a probe ({"serving": rank}), by which a newcomer
// finds it. A newcomer checks the server's key against the allow-list's key at the address's
// position, so the new server must hold that key (one key per run under fast launch, one per host
// with fast keygen).
//
// Own stalls (transport_stall.cpp): when this process's I/O thread was held up longer than half
// the peer timeout on the steady clock (the process was stopped by a signal, frozen, or starved of
// CPU; a pause that stops that clock too is not seen), the others may
// have counted it lost meanwhile and gone on. It then counts nobody lost for its silence: the
// silence of every live peer is counted from the end of the stall, and it asks each whether it
// still counts it in (a hello {"still_member": true}). A peer that does answers {"member": true}
// (the check ends); one that counted it lost answers {"counted_lost": why} through a socket of its
// own (its link is closed), at most once a second. Told so, or answered by nobody within the peer
// timeout (at least 1 s), this process leaves the run: every wait of its workers throws
// RemoteError naming why (exit code 5), it serves no rendezvous and finish() waits for nobody, so
// that a process started again takes its rank back rather than two groups training apart. Not
// covered: a process cut off by the network without a stall of its own counts the others lost
// after the peer timeout as they count it, and goes on alone.
//
// Thread-safety: send/alive/ensure_alive/where from any worker thread; the rest from the thread
// that runs the process's world.

#include <zmq.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "../completion.hpp"
#include "../engine/buffer_pool.hpp"
#include "../engine/local_world.hpp"
#include "../engine/pause.hpp"
#include "../engine/transport.hpp"
#include "fast/wire/frame.hpp"
#include "handshake_monitor.hpp"
#include "handshake_slots.hpp"
#include "peer_link.hpp"
#include "process_table.hpp"
#include "settings.hpp"
#include "shared_ring.hpp"
#include "stream.hpp"

namespace fast::runtime::zmq {

using engine::BufferPool;

// What a data message between two processes costs where it does not go through shared memory
// (TCP streams, or ZeroMQ's sockets): about 25 us of fixed cost (system calls and the waiter's
// wake-up; over loopback on the 2-core reference machine, benchmark (e), 15-20 us, between hosts
// more), a 10 Gbit/s link, local passes as the default model's. For pair_network_model only: with
// it, a two-process all-reduce sends one message each way (recursive doubling) instead of the
// ring's two up to about 400 KB (25 us x 16 GB/s).
inline constexpr NetworkModel kMessageModel{
    .latency_seconds = 25e-6, .bandwidth_bytes_per_second = 1.25e9, .local_bytes_per_second = 16e9};

class ZmqTransport final : public engine::Transport {
 public:
  static constexpr std::size_t kZeroCopyBytes = 64 * 1024;
  // The context's I/O threads (ZMQ_AFFINITY masks; the context has two): data, heartbeats.
  static constexpr std::uint64_t kDataAffinity = 1, kPulseAffinity = 2;
  static constexpr int kPulseBacklog = 16;         // heartbeats a pulse socket may hold for its peer
  static constexpr int kMaxFramesPerWakeUp = 256;  // read from one socket before the loop looks at the others
  // A ring record's body: the frame header, how many data frames went through ZeroMQ before it
  // (u64), then the payload (transport_shared.cpp).
  static constexpr std::size_t kRecordHeadBytes = wire::kHeaderBytes + sizeof(std::uint64_t);

  // router, pulse: this process's bound data and heartbeat sockets (moved in). table: every
  // process, from the rendezvous.
  ZmqTransport(::zmq::context_t& context, const Settings& settings, ProcessTable table, int process,
               ::zmq::socket_t router, ::zmq::socket_t pulse);
  ~ZmqTransport() override;

  // Starts the I/O thread, delivering into `world`. on_lost(reason) runs on the I/O thread when a
  // process is lost other than by a clean end.
  // Returns once every ring offered to a process of this host was mapped or refused by it (or
  // that process is lost), at most min(peer timeout, 10 s) after: the workers' first messages
  // then take the same path as the later ones.
  void start(engine::LocalWorld& world, std::function<void(const std::string&)> on_lost);
  // Process 0 of a run that tolerates losses: answer rejoin hellos on `desk` (the rendezvous
  // socket, moved in). Before start().
  void serve_rejoins(::zmq::socket_t desk);
  // A process that takes a rank back: the workers lost and taken back before it came, as the
  // rendezvous's answer lists them (RendezvousResult::lost_workers, rejoined_workers; its own rank
  // among both), become membership events marked before_join, so that runtime::ever_lost and
  // runtime::successor answer here as on the survivors and the summary lists every rejoin. At most
  // kMaxInheritedRejoins rejoins are passed on, the latest. Before start().
  void inherit_membership(const std::vector<int>& lost, const std::vector<int>& rejoined);
  // A newcomer: the process that let it in serves the rendezvous (RendezvousResult::desk_process).
  // Before start().
  void set_desk_process(int process);
  // This process's workers returned: tells every process (bye, with `error` when one failed) and
  // waits until every other process ended or was lost, at most `limit_seconds`.
  void finish(const std::string& error, double limit_seconds);
  // Joins the I/O thread; sockets close with a short linger so the last frames leave.
  void stop();

  core::Work send(int src, int dst, Tag tag, core::ConstView data) override;
  bool alive(int rank) const override;
  void ensure_alive(int rank) const override;
  // Waits until every other process was heard from after the call, or is lost (at most the peer
  // timeout + 1 s).
  void settle_lost_peers() override;
  std::vector<MembershipEvent> membership_events() const override;
  // kMessageModel where the processes of workers a and b do not both offer each other
  // shared-memory rings (other hosts, or FAST_SHM_BYTES=0 on either), from the process table.
  std::optional<NetworkModel> pair_network_model(int a, int b) const override;
  // Progress in the caller (engine/transport.hpp): a waiting worker delivers the records of the
  // rings mapped from this host's processes itself. The rings' `polled` words are set while no
  // thread of this process blocks waiting (the next waiter looks at the rings anyway), so that
  // their senders leave the readers asleep; a thread about to block clears them first
  // (transport_shared.cpp). progress_wanted (try_recv found nothing) polls once.
  // Whenever FAST_POLL_US > 0, however many workers share the machine's cores: where they fit
  // (spin_pays_; workers_on_machine: the same boot id, else host name) a waiter pauses between
  // looks, elsewhere it yields its core between them (pause_between_looks). With 4 processes on 2
  // cores the 4 KiB all-reduce on one host took 20-32 us polling against 126-130 us with the reader
  // threads delivering, and training ran as fast or faster (docs/benchmarks.md, (e)).
  bool polls_in_caller() const override { return settings_.poll_seconds > 0; }
  void poll() override;
  void sleep_begin() override;
  void sleep_end() override;
  void progress_wanted() override {
    if (polls_in_caller()) poll();
  }
  bool spin_pays() const override { return spin_pays_; }
  // What a polling thread does between two looks (engine/pause.hpp): a pause where the machine's
  // workers fit its cores (spin_pays_), else gives its core away.
  void pause_between_looks() const { engine::pause_between_looks(spin_pays_); }
  // Some stream's record is partly read (transport_stream.cpp).
  bool receiving() const override;
  double poll_budget() const override { return settings_.poll_seconds; }

 private:
  // The Work of a queued send: its waiter polls the transport (which copies queued messages into
  // rings as they free up, and delivers what arrives) before it sleeps on the completion.
  class PolledWork final : public core::WorkImpl {
   public:
    PolledWork(ZmqTransport& transport, std::shared_ptr<detail::Completion> done)
        : transport_(transport), done_(std::move(done)) {}
    bool completed() const override { return done_->completed(); }
    bool wait_for(double timeout_seconds) override;
    std::exception_ptr error() const override { return done_->error(); }

   private:
    ZmqTransport& transport_;  // outlives the Work: queued sends are completed by stop()
    std::shared_ptr<detail::Completion> done_;
  };

  struct PeerState {
    double last_heard = 0;  // on the transport's clock
    bool ended = false;     // said bye without error
    bool lost = false;      // lost in any way, ended included
    // When it said bye with an error (transport's clock; < 0: it did not): it waits for our bye
    // in its finish() until then + a peer timeout, so its link stays open for our bye.
    double failed_bye_at = -1;
    std::string reason;
  };

  // A rejoin hello being answered (the process serving the rendezvous; I/O thread only).
  struct PendingRejoin {
    std::string id;          // the newcomer's routing id on the desk
    ProcessInfo info;        // with its rank chosen
    double since = 0;        // when the hello arrived
    bool announced = false;  // the others were told; waiting for `awaiting`
    std::vector<int> awaiting;
  };

  int process_of(int rank) const;
  // Sends a frame to `process` through its link; wakes the I/O thread when it had to be queued.
  void send_frame(int process, Frame frame);
  void loop();
  void flush_links();
  // Sends what waits for room in each shared-memory ring (I/O thread).
  void flush_rings();
  // The rendezvous's socket, once per turn of loop(): released when this process left the run
  // (its newcomers refused), bound when this process should serve it now (take_over_desk).
  // `items`: loop()'s poll items of the desk and of its handshake monitor; `polled`: how many items
  // loop() polls; both updated to match (watch_desk).
  void tend_desk(::zmq::pollitem_t* items, int& polled);
  // Monitors the desk's handshakes (desk_monitor_) while there is a desk, and sets `items` and
  // `polled` as tend_desk says.
  void watch_desk(::zmq::pollitem_t* items, int& polled);
  void receive_all();
  void receive_one(std::vector<::zmq::message_t>& parts);
  // A decoded header from `sender` (a frame or a ring record): src among its workers and, for
  // data, dst among this process's. wire::FrameError otherwise.
  void check_endpoints(const ProcessInfo& sender, const wire::FrameHeader& header) const;
  void deliver_data(const wire::FrameHeader& header, ::zmq::message_t payload);
  // A heartbeat, bye or hello frame to `peer` carrying `text` (a bye's error, a hello's JSON; empty
  // for a heartbeat).
  Frame control_frame(wire::FrameKind kind, const ProcessInfo& peer, const std::string& text) const;
  // The heartbeat sockets (transport_pulse.cpp; I/O thread only, after start()).
  std::unique_ptr<::zmq::socket_t> make_pulse_dealer(const ProcessInfo& peer);
  void send_heartbeats();
  void receive_pulses();
  // The process a frame [routing id, header, payload] comes from, checked: a process of this run
  // other than this one, with 3 parts, and (CURVE) signed with that process's key. Throws
  // core::InvalidArgument naming what is wrong.
  int authenticated_sender(const std::vector<::zmq::message_t>& parts) const;
  // The last frame a process was heard from arrived now.
  void heard_from(int process);
  void check_peers();
  // Whether `process`, which said bye with an error, has left by now: it waited a peer timeout for
  // our bye without our heartbeats (PeerState::failed_bye_at).
  bool gone_after_its_failure(int process) const;
  // `clean`: it said bye without error; `said_bye`: it said bye (an error or not): alive, it waits
  // for our bye, and its link stays open for it.
  void mark_lost(int process, const std::string& why, bool clean, bool said_bye = false);
  // `process` said bye with `reason` ("" when its workers ended): mark_lost with said_bye. A
  // failure that repeats another process's ("worker 0 (...) failed: worker 2 (...) lost: ...") is
  // told by its innermost "worker N (...)" clause alone, so that news passed on from process to
  // process names its root once instead of nesting a level per process.
  void mark_said_bye(int process, const std::string& reason);
  // Own stalls (transport_stall.cpp; I/O thread). watch_own_stall: from check_peers, with the time
  // now; false once this process left the run (then nobody is counted lost).
  bool watch_own_stall(double now);
  void begin_stall_check(double held, double now);
  void on_membership_query(int from);  // a {"still_member"} hello from `from`
  // Leaves the run (see the contract above): logs `why` and aborts every local wait; once.
  void expel_self(const std::string& why);
  void open_dealers();
  void await_rings();  // start()'s wait for the rings' answers
  // A DEALER to `peer` on the I/O thread(s) `affinity`, with this process's routing id and (CURVE)
  // keys; not connected yet.
  std::unique_ptr<::zmq::socket_t> new_dealer(std::uint64_t affinity, const ProcessInfo& peer);
  std::unique_ptr<::zmq::socket_t> make_dealer(const ProcessInfo& peer);
  double clock() const;
  // Rejoins (transport_rejoin.cpp).
  // Binds the rendezvous address where this process should serve it now (see the contract above);
  // true when it did (desk_ set). Tries at each new loss, and once a second while the server is
  // lost (its address may still be bound by a process counted lost that still runs).
  bool take_over_desk();
  // Reads the hellos waiting at the rendezvous (at most kMaxHellosPerWakeUp): answers probes and,
  // once finishing, every newcomer; queues each fitting one in pending_; refuses the others.
  void receive_rejoin_hellos();
  // The newcomer a rejoin hello describes (its rank chosen when it names none), after checking it
  // fits the run: world size, processes, workers per process, the key it connected with (`frame`,
  // the hello's ZeroMQ frame), a rank to take back, an answer that fits a hello. InvalidArgument
  // naming what does not fit. I/O thread.
  ProcessInfo checked_rejoin_hello(const nlohmann::json& hello, const ::zmq::message_t& frame) const;
  // A newer process for a rank being taken back replaces the earlier one, which most likely died
  // during its rejoin (fast launch --restart started another): that one is refused (should it
  // still run, it is told why) and leaves pending_.
  void drop_earlier_newcomer(const ProcessInfo& info);
  void progress_rejoins();
  // Whether `process` runs on the host of rendezvous address `address`: process 0's host for the
  // first, else the host named by the address: its data endpoint's address is the address's host
  // or one it resolves to, or its host name is the address's host.
  bool on_rendezvous_host(int process, std::size_t address) const;
  // The workers with a loss among events_ (seen here or inherited) or of a process that ended
  // cleanly, ascending, each once; and those
  // taken back, in order, the latest kMaxInheritedRejoins: what a newcomer is told with its rank
  // (inherit_membership). Take peers_mutex_.
  std::vector<int> ever_lost() const;
  std::vector<int> rejoined() const;
  void answer_newcomer(const std::string& id, const nlohmann::json& body);
  // The answer to newcomer `info` (its rank chosen): the table with it in its rank's entry, the
  // workers lost (ranks still vacant left out: the table names them) and taken back so far. Takes
  // peers_mutex_.
  nlohmann::json rejoin_answer(const ProcessInfo& info) const;
  // For a newcomer that names no rank: the lowest vacant rank that no other newcomer is taking,
  // else the lowest such lost one (a lost rank may be about to come back: fast launch --restart
  // starts its process again); -1 when none. I/O thread; takes peers_mutex_.
  int free_rank() const;
  // Sends rejoin_answer once every live process revived the newcomer's rank; logged, not thrown,
  // when it cannot be sent (receive_rejoin_hellos checked its size before the announce).
  void answer_rejoin(const PendingRejoin& p);
  void on_hello_frame(int from, const ::zmq::message_t& payload);
  void revive(const ProcessInfo& info);
  void send_hello(int process, const nlohmann::json& body);
  // Shared memory (transport_shared.cpp).
  struct OutboundShared;
  struct InboundShared;
  void offer_ring(int process);
  void retire_ring(int process);
  // Puts the message in the ring to `out`'s process, if ready and with room (out.mutex held).
  bool send_shared(OutboundShared& out, wire::FrameHeader header, core::ConstView data);
  // send() to a process without a stream: through its ring, its queue or ZeroMQ (out.mutex held).
  core::Work send_ordered(OutboundShared& out, int process, const wire::FrameHeader& header, core::ConstView data);
  // A message larger than fragment_bytes(out) goes through the ring in parts of that size, one
  // record each, consecutive (out.mutex held): those that find no room wait in `pending`, and the
  // returned Work completes once the last is copied in.
  core::Work send_fragments(OutboundShared& out, int process, const wire::FrameHeader& header, core::ConstView data);
  static std::size_t fragment_bytes(const OutboundShared& out);
  // drain(): a record holding part of a message (its header's payload_bytes larger than the
  // record's payload): copied into the message being assembled, delivered once whole.
  void assemble(InboundShared& in, const wire::FrameHeader& header, std::span<const std::byte> part);
  // Sends the message to `process` as a ZeroMQ frame, counted in out.zmq_data (out.mutex held).
  // `done`, when given, completes once ZeroMQ no longer needs `data`; else the returned Work does.
  core::Work send_zmq(OutboundShared& out, int process, wire::FrameHeader header, core::ConstView data,
                      std::shared_ptr<detail::Completion> done = nullptr);
  // Sends the queued messages to `process` that the ring now has room for, in order (out.mutex
  // held); from send(), poll() and the I/O thread.
  void flush_pending(int process, OutboundShared& out);
  // After queueing a message that found the ring to `process` full (out.mutex held): asks the
  // receiver to tell when it releases room (OutboundRing::want_room; its release then rings the
  // bell of its own ring to this process, whose reader calls flush_waiting()), and sends what the
  // ring took meanwhile. Without it the queue waited for the I/O thread's next turn (1 ms).
  void wait_for_room(int process, OutboundShared& out);
  // flush_pending() for `process` if messages wait and no other thread holds its lock (any thread).
  void flush_waiting(int process);
  // The receiver's side of wait_for_room(): room was released in the ring of `out`'s process to
  // this one; rings the bell of this process's ring to it (any thread; never blocks).
  static void tell_room(OutboundShared& out);
  // Completes and drops every queued message to `process` (lost, or its rank taken back).
  void drop_pending(OutboundShared& out);
  // Whether some ring has queued messages (the I/O thread then looks every millisecond).
  bool any_pending() const;
  void on_shared_hello(int from, const nlohmann::json& body);
  void start_reader(int from);
  void stop_reader(InboundShared& in);
  // Delivers the records of `from`'s ring that are due (in.mutex held).
  void drain(int from, InboundShared& in);
  // Around a frame from `from` (I/O thread): before, the records published before it are
  // delivered; after a data frame (delivered or dropped), it is counted and the records that
  // waited for it follow.
  void settle_ring(int from, bool counted_data_frame);

  ::zmq::context_t& context_;
  Settings settings_;
  ProcessTable table_;  // an entry is replaced, under peers_mutex_, when its process is revived
  int process_;
  const int workers_per_process_;  // every process's (table_[0].workers at the start): read without a lock
  ::zmq::socket_t router_;
  ::zmq::socket_t pulse_;                                      // heartbeats from the other processes
  std::vector<std::unique_ptr<PeerLink>> links_;               // by process (null for this one); fixed after start()
  std::vector<std::unique_ptr<::zmq::socket_t>> pulse_links_;  // by process: heartbeats to it (null:
                                                               // this one, or lost); I/O thread
  int wake_fd_ = -1;                                           // eventfd: a link queued frames, or stop
  engine::LocalWorld* world_ = nullptr;
  std::function<void(const std::string&)> on_lost_;

  mutable std::mutex peers_mutex_;
  std::condition_variable peers_cv_;
  std::vector<PeerState> peers_;               // by process
  std::unique_ptr<std::atomic<bool>[]> lost_;  // by process: fast path of alive()
  std::vector<MembershipEvent> events_;        // under peers_mutex_

  // Shared memory with processes of this host.
  struct OutboundShared {
    std::mutex mutex;                    // guards the rest; held across each data send, so records and
                                         // ZeroMQ data frames to the process are ordered as counted
    std::unique_ptr<OutboundRing> ring;  // offered to the peer (null: none)
    std::uint64_t id = 0;                // the offer's id
    bool ready = false;                  // the peer mapped it: messages go through it
    std::uint64_t zmq_data = 0;          // data frames sent to the process through ZeroMQ
    // Messages waiting for room in the ring, oldest first: a message that finds the ring full (or
    // others waiting) is queued, its memory read in place, and its Work completes when it is
    // copied in; the parts of one larger than the ring wait here too, the last one completing
    // its Work. So every message to the process leaves in the order sent.
    struct Pending {
      wire::FrameHeader header;
      core::ConstView data;                      // the message's payload, or a fragment's part of it
      std::shared_ptr<detail::Completion> done;  // null for a fragment other than the last
      bool fits = true;                          // fits the ring; else it goes through ZeroMQ when its turn comes
      bool fragment = false;                     // a part of a message larger than a fragment (fragment_bytes())
    };
    std::deque<Pending> pending;
    std::atomic<bool> has_pending{false};  // !pending.empty(), readable without the mutex
  };
  struct InboundShared {
    std::mutex mutex;                   // serialises drain() between the reader and the I/O thread
    std::shared_ptr<InboundRing> ring;  // under mutex: the process's ring, mapped (null: none)
    std::atomic<bool> mapped{false};    // ring is not null (set under mutex; read by poll() without it)
    std::uint64_t zmq_data = 0;         // under mutex: data frames from the process handled
    std::atomic<bool> stop{false};      // the reader ends
    std::atomic<bool> failed{false};    // the ring broke a rule: `failure` says how
    std::string failure;                // written before `failed` is set
    std::thread reader;                 // started and joined by the I/O thread (stop() at the end)
    // A message coming in fragments (under mutex): its header, its buffer, the bytes so far.
    wire::FrameHeader assembling;
    std::shared_ptr<std::byte> assembled;
    std::uint64_t assembled_bytes = 0;
    std::shared_ptr<BufferPool> assembly_pool;  // such messages' buffers, reused
  };
  std::vector<std::shared_ptr<OutboundShared>> outbound_;  // by process; fixed after start()
  std::vector<std::shared_ptr<InboundShared>> inbound_;    // by process; fixed after start() (reset in place)
  // Progress in the caller: how many threads block waiting now (under poll_mutex_, taken before
  // any InboundShared::mutex); whether the rings' `polled` words are set (written under
  // poll_mutex_); whether waiters may spin (the host's workers fit its cores).
  std::mutex poll_mutex_;
  int sleepers_ = 0;
  std::atomic<bool> polled_{false};
  // The streams' threads wait on polled_cv_ (with poll_mutex_) while waiters poll; publish_polled
  // (false) wakes them. last_poll_: when poll() last ran (steady clock, ns).
  std::condition_variable polled_cv_;
  std::atomic<std::int64_t> last_poll_{0};
  static constexpr std::chrono::milliseconds kStreamGrace{2};
  bool spin_pays_ = false;  // set by the constructor
  // Whether a stream's reader thread reads alongside polling waiters instead of stepping back
  // while its messages are large (StreamIn::large): FAST_READ_ALONGSIDE, by default where the machine
  // has two cores per worker (set by the constructor), so that it reads and opens the next message
  // on a core of its own while the worker computes or sends (transport_stream.cpp, read_stream).
  bool readers_alongside_ = false;
  // Sets every mapped ring's `polled` word to `on` (poll_mutex_ held).
  void publish_polled(bool on);
  // Delivers the due records of every mapped ring, waiting for each ring's lock.
  void drain_all();
  std::atomic<std::uint64_t> next_ring_id_{1};

  // Streams (transport_stream.cpp).
  struct StreamOut {
    std::atomic<bool> ready{false};        // set once, under OutboundShared::mutex: data goes through `writer`
    std::mutex mutex;                      // serialises writes
    std::unique_ptr<StreamWriter> writer;  // under mutex
    std::atomic<bool> failed{false};       // a write failed: `failure` says how (then lost)
    std::string failure;                   // written under mutex, before `failed`
  };
  struct StreamIn {
    // The connected stream's reading, by its thread or a polling waiter: under read_mutex, one
    // record at a time. `reader` is set by the stream's thread once the stream is open (null
    // again before it ends); `readable` mirrors reader != null for poll()'s look without the lock.
    std::mutex read_mutex;
    StreamReader* reader = nullptr;
    StreamReader::Allocate allocate;  // its messages' buffers (from a BufferPool)
    std::uint64_t read_offer = 0;     // the offer the reader opened
    std::uint64_t after = 0;          // the `open` record's count of data frames through ZeroMQ
    bool waited = false;              // that many were handled here
    std::atomic<bool> readable{false};
    std::atomic<int> read_fd{-1};      // reader's socket while `reader` is set, for a writer's wait
    std::atomic<bool> partial{false};  // reader is in the middle of a record (receiving())
    std::atomic<bool> large{false};    // the last record delivered had at least kAlongsideBytes
    std::mutex mutex;                  // guards the offer
    std::uint64_t offer = 0;           // the id offered (0: none); a reader of another id ends
    Sealer::Key key{};
    Protection protection = Protection::checksum;
    bool connected = false;           // an `open` record under this offer arrived
    std::atomic<bool> failed{false};  // the stream broke: `failure` says how (then lost)
    std::atomic<bool> bye{false};     // a bye arrived: `bye_text` (then lost, cleanly when empty)
    std::string failure, bye_text;    // written before their flag
  };
  std::unique_ptr<SealPool> seal_pool_;                 // the streams' helpers (outlives every stream)
  std::vector<std::unique_ptr<StreamOut>> stream_out_;  // by process; fixed after start()
  std::vector<std::unique_ptr<StreamIn>> stream_in_;    // by process; fixed after start()
  int stream_fd_ = -1;                                  // listening socket (-1: no stream)
  int stream_port_ = 0;
  struct StreamThread {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;  // set by the thread as it returns
  };
  std::mutex stream_threads_mutex_;
  std::vector<StreamThread> stream_threads_;  // connectors and readers; the ended ones joined as others
                                              // start, the rest by stop()
  // Starts `body` as a stream thread (after joining those that ended).
  void start_stream_thread(std::function<void()> body);
  // Accepted stream connections not yet authenticated, 16 at once (handshake_slots.hpp).
  HandshakeSlots handshake_slots_{16, StreamPreamble::kBytes};
  // Whether data to `process` should go through a stream (tcp, no ring).
  bool wants_stream(int process) const;
  void open_streams();  // start(): listen and offer
  void offer_stream(int process);
  void on_stream_offer(int from, const nlohmann::json& offer);  // I/O thread: connect (in a thread)
  // A stream thread: connects to `process`'s offer and makes it the stream to it, trying again
  // while the peer drops the connection before it accepts it (stream.hpp), for at most
  // min(peer timeout, 10 s); else logs why and leaves messages to ZeroMQ.
  void connect_stream_to(int process, std::string host, int port, std::uint64_t offer, Protection protection,
                         Sealer::Key key);
  struct StreamOffer {
    std::uint64_t id;
    Protection protection;
    Sealer::Key key;
  };
  // One try of connect_stream_to, connecting within `seconds`: true once the stream is ready; false
  // when the peer dropped the connection before it accepted it; core::Error otherwise.
  bool try_stream_to(int process, const ProcessInfo& peer, const std::string& host, int port, const StreamOffer& offer,
                     double seconds, const StopCheck& stop);
  void accept_stream();                            // I/O thread: the listening socket is readable
  void serve_stream(int fd, std::string address, std::uint64_t slot);  // an accepted connection's thread
  // The stream's thread, once the stream is open: reads its records until it ends, stepping back
  // while waiters poll.
  void read_stream(int from, std::uint64_t offer, StreamReader& reader, std::uint64_t after);
  // Reads what `from`'s stream holds now, without blocking, and delivers the records it completes
  // (in.read_mutex held, in.reader set): false at the stream's clean end. core::Error when it
  // breaks.
  bool read_available(int from, StreamIn& in);
  void deliver_record(int from, StreamIn& in, StreamReader::Record& record);
  // A stream that broke: counts its process lost (unless the transport stops or the rank was taken
  // back meanwhile) with `what` as the reason.
  void stream_broke(int from, StreamIn& in, std::uint64_t offer, const std::string& what);
  // Reads every record that is there, of every open stream not being read (from poll()).
  void poll_streams();
  // Whether a waiter polled within kStreamGrace (the streams' threads step back then).
  bool waiters_poll() const;
  // The stream writers' WriteWait: until the socket takes bytes (at most kSocketTimeoutMs), reads
  // what the peers send, polling, then blocked on the sockets (transport_stream.cpp).
  void wait_writable(int fd);
  // A StopCheck's answer for the reading of `from`'s stream opened under `offer`.
  std::string stream_read_stop(int from, std::uint64_t offer);
  void retire_stream(int process);
  void check_streams(int process);  // check_peers(): a failed stream or a bye
  core::Work send_stream(StreamOut& out, int process, const wire::FrameHeader& header, core::ConstView data);
  bool bye_through_stream(int process, const std::string& text);
  void stop_streams();
  std::string stream_stop(int process) const;  // a StopCheck's answer for a stream with `process`

  std::optional<::zmq::socket_t> desk_;  // the rendezvous socket, for rejoins (process 0, or its successor)
  // The connections desk_ refused at the handshake, logged (I/O thread; destroyed before desk_).
  std::optional<HandshakeMonitor> desk_monitor_;
  int losses_seen_ = 0;                  // take_over_desk: lost processes counted at its last try (I/O thread)
  double next_desk_try_ = 0;             // take_over_desk: when it tries again without a new loss (I/O thread)
  // The process that serves the rendezvous, as this one last heard: 0 at the start; the sender of a
  // rejoin announcement or of a {"desk"} hello; this process once it took over; for a newcomer, the
  // one that let it in. take_over_desk tries only once it is lost, so that one address is served at
  // a time. I/O thread only (set before start() for a newcomer).
  int desk_process_ = 0;
  std::deque<PendingRejoin> pending_;    // I/O thread only

  // Own stalls (transport_stall.cpp; I/O thread only but expelled_).
  struct StallCheck {
    double since = 0, until = 0;  // asked at `since`; answers awaited until `until`
    double held_up = 0;           // seconds the I/O thread was held up
    std::vector<int> asked;       // the processes asked
    bool answered = false;        // one answered that it counts this process in
  };
  std::optional<StallCheck> stall_check_;
  double last_check_ = 0;              // when check_peers last ran
  std::vector<double> told_lost_at_;   // by process: when it was last told it is counted lost (0: never)
  std::atomic<bool> expelled_{false};  // this process left the run (expel_self)
  // finish() began: this process's workers are done. The rendezvous's server refuses newcomers
  // ("the run is ending", or "failed" when they failed); a rank revived from then on is told bye at
  // once (revive()).
  std::atomic<bool> finishing_{false};
  // finish()'s error: its workers' first error, "" when they ended well. Written once, before
  // finishing_ is set; read only once finishing_ is seen set (I/O thread).
  std::string finish_error_;

  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace fast::runtime::zmq
