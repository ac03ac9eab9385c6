// socket_drain.cpp - see socket_drain.h.
#include "cluster/socket_drain.h"

namespace dt {

DrainResult drain_socket(zmq::socket_t &s, size_t max_messages, const DrainHandler &on_message, DrainClock clock) {
  DrainResult r;
  for (size_t i = 0; i < max_messages; i++) {
    zmq::message_t msg;
    try {
      if (!s.recv(msg, zmq::recv_flags::dontwait)) return r;
      if (msg.more()) {  // the rest of it, then the next message
        while (msg.more() && s.recv(msg, zmq::recv_flags::dontwait)) {
        }
        r.multipart++;
        continue;
      }
    } catch (const zmq::error_t &e) {
      r.error = e.what();
      return r;
    }
    on_message(msg, clock());
    r.handled++;
  }
  return r;
}

}  // namespace dt
