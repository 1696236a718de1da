#pragma once
// Hello messages (private header of the zmq runtime): wire/ frames of kind `hello` whose payload is
// a JSON object of at most kMaxHelloBytes. The rendezvous exchanges them (a process's hello, the
// table in reply), and so does a rejoin (rendezvous.hpp, transport.hpp): the announce of a
// process that takes a lost rank back, and each process's acknowledgement of it.
// Errors: InvalidArgument naming what is malformed (the caller logs and drops the message).

#include <zmq.hpp>

#include <cstddef>
#include <vector>

#include <nlohmann/json.hpp>

#include "process_table.hpp"

namespace fast::runtime::zmq {

inline constexpr std::size_t kMaxHelloBytes = 64 * 1024;

// [header, payload] of a hello frame holding body (InvalidArgument over kMaxHelloBytes).
std::vector<::zmq::message_t> hello_parts(const nlohmann::json& body);
// The JSON body of the hello frame in parts[first], parts[first + 1] (nothing may follow),
// validated: frame header, kind, payload checksum and length, JSON syntax.
nlohmann::json read_hello(std::vector<::zmq::message_t>& parts, std::size_t first);

nlohmann::json to_json(const ProcessInfo& p);
// InvalidArgument when a field is missing or of the wrong type.
ProcessInfo process_from_json(const nlohmann::json& j);

}  // namespace fast::runtime::zmq
