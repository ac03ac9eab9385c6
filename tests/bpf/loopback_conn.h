// loopback_conn.h - real TCP connections on the loopback of a network namespace of the
// test's own, for the tests of the cluster exemption, whose socket lookup
// (bpf_skc_lookup_tcp) must find a connection: BPF_PROG_TEST_RUN runs the XDP program on
// the loopback device of the calling thread's namespace, where these sockets are.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>

#include "common/no_copy.h"

namespace dt::test {

// The loopback's addresses in a ScratchNetns.
constexpr const char *kLoopV4 = "198.18.9.1";
constexpr const char *kLoopV6 = "2001:2::91";

// Moves the calling thread into a new network namespace whose loopback is up with
// kLoopV4 and kLoopV6, and back to where it was on destruction (the namespace goes
// with its last socket). ok() is false, with error() saying why, if it could not.
class ScratchNetns : NoCopy {
 public:
  ScratchNetns();
  ~ScratchNetns();
  bool ok() const { return error_.empty(); }
  const std::string &error() const { return error_; }

 private:
  int saved_ = -1;  // the thread's namespace before
  std::string error_;
};

// A fixture `Base` whose tests run in a ScratchNetns: entered after Base's SetUp (a fatal
// failure if it cannot be), left before Base's TearDown. A subclass closes its sockets in
// its TearDown and then calls this one's.
template <class Base>
class InScratchNetns : public Base {
 protected:
  void SetUp() override {
    Base::SetUp();
    if (::testing::Test::HasFatalFailure()) return;
    netns_ = std::make_unique<ScratchNetns>();
    ASSERT_TRUE(netns_->ok()) << netns_->error();
  }
  void TearDown() override {
    netns_.reset();
    Base::TearDown();
  }

 private:
  std::unique_ptr<ScratchNetns> netns_;
};

// A listener on kLoopV4 or kLoopV6 (a port the kernel chose), a client connected to it
// and the accepted socket: an established connection. Closed on destruction.
class LoopbackConn : NoCopy {
 public:
  // The connection, or nullptr with *err saying why.
  static std::unique_ptr<LoopbackConn> open(bool v6, std::string *err);
  ~LoopbackConn();

  const char *addr() const { return v6_ ? kLoopV6 : kLoopV4; }
  uint16_t server_port() const { return server_port_; }  // the listener's
  uint16_t client_port() const { return client_port_; }  // the client's (ephemeral)

 private:
  LoopbackConn() = default;
  bool v6_ = false;
  int listener_ = -1, client_ = -1, accepted_ = -1;
  uint16_t server_port_ = 0, client_port_ = 0;
};

}  // namespace dt::test
