#include "hello.hpp"

#include <fmt/format.h>

#include <limits>

#include "fast/core/error.hpp"
#include "fast/wire/frame.hpp"
#include "frames.hpp"

namespace fast::runtime::zmq {

using nlohmann::json;

json to_json(const ProcessInfo& p) {
  if (p.vacant) return {{"rank", p.rank}, {"first_worker", p.first_worker}, {"workers", p.workers}, {"vacant", true}};
  return {{"rank", p.rank},
          {"first_worker", p.first_worker},
          {"workers", p.workers},
          {"host_id", p.host_id},
          {"hostname", p.hostname},
          {"machine_id", p.machine_id},
          {"ipc", p.ipc_endpoint},
          {"tcp", p.tcp_endpoint},
          {"pulse_ipc", p.pulse_ipc_endpoint},
          {"pulse_tcp", p.pulse_tcp_endpoint},
          {"public_key", p.public_key},
          {"pid", p.pid},
          {"shm", p.shared_memory}};
}

ProcessInfo process_from_json(const json& j) {
  try {
    ProcessInfo p;
    const char* what = "hello: process description";
    // -1: a process that leaves its rank to the rendezvous (its hello before the answer).
    p.rank = json_int<int>(j, "rank", -1, kMaxProcesses - 1, what);
    p.first_worker = json_int<int>(j, "first_worker", 0, (1LL << 30) - 1, what);
    p.workers = json_int<int>(j, "workers", 1, kMaxProcesses, what);
    if (j.contains("vacant")) {
      FAST_ENFORCE(j.at("vacant") == true && p.rank >= 0, "{}: vacant: expected true, with a rank", what);
      return vacant_process(p.rank, p.workers);
    }
    p.host_id = j.at("host_id").get<std::string>();
    p.hostname = j.at("hostname").get<std::string>();
    p.machine_id = j.value("machine_id", std::string());
    p.ipc_endpoint = j.at("ipc").get<std::string>();
    p.tcp_endpoint = j.at("tcp").get<std::string>();
    p.pulse_ipc_endpoint = j.at("pulse_ipc").get<std::string>();
    p.pulse_tcp_endpoint = j.at("pulse_tcp").get<std::string>();
    p.public_key = j.at("public_key").get<std::string>();
    p.pid = json_int<long>(j, "pid", 0, std::numeric_limits<std::int32_t>::max(), what);
    p.shared_memory = j.value("shm", true);
    return p;
  } catch (const json::exception& e) {
    FAST_THROW(core::InvalidArgument, "hello: malformed process description: {}", e.what());
  }
}

std::vector<::zmq::message_t> hello_parts(const json& body) {
  const std::string text = body.dump();
  FAST_ENFORCE(text.size() <= kMaxHelloBytes, "hello: message of {} bytes exceeds {}", text.size(), kMaxHelloBytes);
  std::vector<::zmq::message_t> parts;
  parts.push_back(header_message(
      {.kind = wire::FrameKind::hello, .dtype = core::DType::u8, .count = text.size(), .payload_bytes = text.size()}));
  parts.emplace_back(text.data(), text.size());
  return parts;
}

json read_hello(std::vector<::zmq::message_t>& parts, std::size_t first) {
  FAST_ENFORCE(parts.size() == first + 2, "hello: expected a header and a payload, got {} parts", parts.size() - first);
  const wire::FrameHeader h = wire::decode_header(bytes_of(parts[first]), {.max_payload_bytes = kMaxHelloBytes});
  FAST_ENFORCE(h.kind == wire::FrameKind::hello, "hello: frame kind: expected hello, got {}", static_cast<int>(h.kind));
  wire::check_payload(h, bytes_of(parts[first + 1]));
  try {
    return json::parse(parts[first + 1].to_string_view());
  } catch (const json::exception& e) {
    FAST_THROW(core::InvalidArgument, "hello: malformed message: {}", e.what());
  }
}

}  // namespace fast::runtime::zmq
