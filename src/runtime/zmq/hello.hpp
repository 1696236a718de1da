#pragma once
// Hello messages (private header of the zmq runtime): wire/ frames of kind `hello` whose payload is
// a JSON object of at most kMaxHelloBytes. The rendezvous exchanges them (a process's hello, the
// table in reply), and so does a rejoin (rendezvous.hpp, transport.hpp): the announce of a
// process that takes a lost rank back, and each process's acknowledgement of it.
// Errors: InvalidArgument naming what is malformed (the caller logs and drops the message).

#include <zmq.hpp>

#include <cstddef>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fast/core/parse.hpp"
#include "process_table.hpp"

namespace fast::runtime::zmq {

inline constexpr std::size_t kMaxHelloBytes = 64 * 1024;
// The most rejoins a rejoin's answer passes on to the newcomer (the latest; ZmqTransport::
// inherit_membership): bounds the answer however long the run churned.
inline constexpr std::size_t kMaxInheritedRejoins = 1024;
inline constexpr long long kMaxProcesses = 1 << 20;  // world sizes, ranks and worker counts of a message

// The integer j[key] as T within [min, max], through core/parse.hpp's checked conversion:
// InvalidArgument naming "<what>: <key>" when j is not an object, the key is missing, the value is
// not an integer (a float, a string) or lies outside the range. A message's integers never wrap.
template <typename T>
T json_int(const nlohmann::json& j, const char* key, long long min, long long max, std::string_view what) {
  const std::string name = fmt::format("{}: {}", what, key);
  FAST_ENFORCE(j.is_object() && j.contains(key), "{}: missing", name);
  const nlohmann::json& v = j.at(key);
  FAST_ENFORCE(v.is_number_integer(), "{}: expected an integer, got {}", name, v.dump().substr(0, 40));
  return v.is_number_unsigned() ? core::checked_int<T>(v.get<std::uint64_t>(), name, min, max)
                                : core::checked_int<T>(v.get<std::int64_t>(), name, min, max);
}

// [header, payload] of a hello frame holding body (InvalidArgument over kMaxHelloBytes).
std::vector<::zmq::message_t> hello_parts(const nlohmann::json& body);
// The JSON body of the hello frame in parts[first], parts[first + 1] (nothing may follow),
// validated: frame header, kind, payload checksum and length, JSON syntax.
nlohmann::json read_hello(std::vector<::zmq::message_t>& parts, std::size_t first);

nlohmann::json to_json(const ProcessInfo& p);
// InvalidArgument when a field is missing or of the wrong type.
ProcessInfo process_from_json(const nlohmann::json& j);

}  // namespace fast::runtime::zmq
