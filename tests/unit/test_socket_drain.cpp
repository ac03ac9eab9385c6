// test_socket_drain.cpp - drain_socket (cluster/socket_drain.h): every message timed when it
// is read, bounded, multipart dropped whole.
#include <gtest/gtest.h>

#include <string>
#include <vector>
#include <zmq.hpp>

#include "cluster/socket_drain.h"

namespace {

// A clock that moves by one at every reading: "later" is exact.
uint64_t g_ticks = 0;
uint64_t tick_clock() { return ++g_ticks; }

struct Pair {
  zmq::context_t ctx{1};
  zmq::socket_t tx{ctx, zmq::socket_type::pair}, rx{ctx, zmq::socket_type::pair};
  Pair() {
    rx.bind("inproc://drain-test");
    tx.connect("inproc://drain-test");
  }
  void send(const std::string &s, bool more = false) {
    tx.send(zmq::buffer(s), more ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
};

TEST(SocketDrain, AMessageSentDuringTheDrainIsTimedWhenRead) {
  Pair p;
  p.send("first");
  uint64_t second_sent = 0, second_read = 0;
  const dt::DrainResult r = dt::drain_socket(
      p.rx, 100,
      [&](zmq::message_t &m, uint64_t read_ns) {
        if (m.to_string() == "first") {  // the drain is held up; a peer sends meanwhile
          second_sent = tick_clock();
          p.send("second");
        } else {
          second_read = read_ns;
        }
      },
      tick_clock);
  EXPECT_EQ(r.handled, 2u) << "the message sent during the drain is read in it";
  EXPECT_GT(second_read, second_sent) << "a message is timed when it is read, not when the drain began: "
                                         "timed earlier than it was sent, it would look faster than any before";
}

TEST(SocketDrain, StopsAtTheBound) {
  Pair p;
  for (int i = 0; i < 5; i++) p.send("m" + std::to_string(i));
  std::vector<std::string> got;
  dt::DrainResult r = dt::drain_socket(p.rx, 3, [&](zmq::message_t &m, uint64_t) { got.push_back(m.to_string()); });
  EXPECT_EQ(r.handled, 3u) << "at most max_messages a drain";
  EXPECT_EQ(got, (std::vector<std::string>{"m0", "m1", "m2"}));
  r = dt::drain_socket(p.rx, 3, [&](zmq::message_t &m, uint64_t) { got.push_back(m.to_string()); });
  EXPECT_EQ(r.handled, 2u) << "the rest at the next drain";
  r = dt::drain_socket(p.rx, 3, [&](zmq::message_t &, uint64_t) { ADD_FAILURE() << "nothing is left"; });
  EXPECT_EQ(r.handled, 0u);
  EXPECT_TRUE(r.error.empty()) << r.error;
}

TEST(SocketDrain, DropsAMultipartMessageWhole) {
  Pair p;
  p.send("part one", true);
  p.send("part two", true);
  p.send("part three");
  p.send("single");
  std::vector<std::string> got;
  const dt::DrainResult r =
      dt::drain_socket(p.rx, 10, [&](zmq::message_t &m, uint64_t) { got.push_back(m.to_string()); });
  EXPECT_EQ(r.multipart, 1u) << "one multipart message, counted once";
  EXPECT_EQ(got, (std::vector<std::string>{"single"})) << "none of its parts reaches the handler";
}

}  // namespace
