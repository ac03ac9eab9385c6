// socket_drain.h - reads what waits on a ZeroMQ socket, a bounded number of messages, each
// timed when it is read. A drain can be held up for seconds (a starved CPU, a slow map
// update); a message sent meanwhile but timed at the drain's start would look faster than
// any before it, and the peer tracker judges every later report of its sender against that
// (peer_tracker.h: the clock offset is the fastest delivery seen).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <zmq.hpp>

#include "common/clock.h"

namespace dt {

struct DrainResult {
  size_t handled = 0;    // single-part messages given to the handler
  size_t multipart = 0;  // multipart messages read whole and dropped (we never send one)
  std::string error;     // a failed receive ended the drain
};

// `read_ns`: the clock when the message was read (after its receive returned).
using DrainHandler = std::function<void(zmq::message_t &msg, uint64_t read_ns)>;
using DrainClock = uint64_t (*)();

// Until the socket has nothing waiting or max_messages were read (so a flood cannot starve
// the caller's timers).
DrainResult drain_socket(zmq::socket_t &s, size_t max_messages, const DrainHandler &on_message,
                         DrainClock clock = mono_now_ns);

}  // namespace dt
