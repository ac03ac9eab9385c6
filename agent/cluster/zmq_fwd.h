// zmq_fwd.h - the cppzmq classes headers name without including zmq.hpp (as <iosfwd>).
#pragma once

namespace zmq {
class context_t;
class socket_t;
}  // namespace zmq
