// test_slot_quota.cpp - the query server's per-user connection quotas (query/slot_quota.h)
// and how TCP clients are told apart (query/peer_owner.h: the owner of a loopback client's
// socket, from sock_diag).
#include <arpa/inet.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "query/peer_owner.h"
#include "query/slot_quota.h"

namespace {

using dt::kRemotePeers;
using dt::slot_victim;
constexpr uid_t kAlice = 1000, kBob = 1001, kCarol = 1002;

TEST(SlotQuota, QuotasAreHalfForAUserAQuarterForRemoteClients) {
  EXPECT_EQ(dt::slot_quota(kAlice, 4096), 2048u);
  EXPECT_EQ(dt::slot_quota(0, 4096), 2048u);
  EXPECT_EQ(dt::slot_quota(kRemotePeers, 4096), 1024u);
  EXPECT_EQ(dt::slot_quota(kAlice, 1), 1u);
  EXPECT_EQ(dt::slot_quota(kRemotePeers, 2), 1u);
}

TEST(SlotQuota, AUserOverItsQuotaMakesRoomForAnyoneElse) {
  EXPECT_EQ(slot_victim({{kAlice, 3}, {kBob, 1}}, kCarol, 4), kAlice);
  EXPECT_EQ(slot_victim({{kAlice, 3}, {kBob, 1}}, kBob, 4), kAlice);
  EXPECT_EQ(slot_victim({{kAlice, 4}}, kAlice, 4), std::nullopt) << "a user never evicts itself";
}

TEST(SlotQuota, TwoUsersAtHalfLeaveRoomForAThird) {
  // The lock-out the old rule allowed: a user at half by the unix socket and half by TCP
  // was two holders of half each. Counted as one it is over quota; two real users at
  // half each still give way to a third, who holds nothing.
  EXPECT_EQ(slot_victim({{kAlice, 4}}, kBob, 4), kAlice);
  const auto v = slot_victim({{kAlice, 2}, {kBob, 2}}, kCarol, 4);
  ASSERT_TRUE(v.has_value());
  EXPECT_TRUE(*v == kAlice || *v == kBob);
}

TEST(SlotQuota, NoEvictionBetweenEqualShares) {
  EXPECT_EQ(slot_victim({{kAlice, 2}, {kBob, 2}}, kBob, 4), std::nullopt) << "Bob at his quota";
  EXPECT_EQ(slot_victim({{kAlice, 2}, {kBob, 1}, {kCarol, 1}}, kBob, 4), std::nullopt)
      << "Alice holds only one more than Bob";
  EXPECT_EQ(slot_victim({{kAlice, 1}, {kBob, 1}, {kCarol, 1}, {0, 1}}, 4242, 4), std::nullopt)
      << "one each: the newcomer is refused";
}

TEST(SlotQuota, RemoteClientsTogetherHoldAQuarterAgainstLocalUsers) {
  EXPECT_EQ(slot_victim({{kRemotePeers, 4}, {kAlice, 4}}, kBob, 8), kRemotePeers) << "4 of 8 is over 2";
  EXPECT_EQ(slot_victim({{kRemotePeers, 2}, {kAlice, 4}, {kBob, 2}}, kRemotePeers, 8), std::nullopt)
      << "remote clients at their quota take nothing";
  EXPECT_EQ(slot_victim({{kRemotePeers, 1}, {kAlice, 7}}, kRemotePeers, 8), kAlice) << "Alice over her half";
}

// A listener on 127.0.0.1 and a connection to it accepted, made by a child running as
// `uid`; tcp_peer_owner's answer for the accepted socket.
uid_t owner_seen_for_client_of(uid_t uid) {
  const int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  if (lfd < 0 || bind(lfd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0 || listen(lfd, 4) != 0 ||
      getsockname(lfd, reinterpret_cast<sockaddr *>(&sa), &len) != 0)
    return 4242;
  int hold[2];
  if (pipe(hold) != 0) return 4243;
  const pid_t pid = fork();
  if (pid == 0) {
    close(hold[1]);
    if (setgroups(0, nullptr) != 0 || setresgid(uid, uid, uid) != 0 || setresuid(uid, uid, uid) != 0) _exit(1);
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0) _exit(1);
    char c;
    (void)!read(hold[0], &c, 1);  // keep the connection until the parent has looked
    _exit(0);
  }
  close(hold[0]);
  const int fd = accept(lfd, nullptr, nullptr);
  const uid_t seen = fd >= 0 ? dt::tcp_peer_owner(fd) : 4244;
  close(hold[1]);
  waitpid(pid, nullptr, 0);
  if (fd >= 0) close(fd);
  close(lfd);
  return seen;
}

TEST(PeerOwner, ALoopbackClientIsItsSocketsOwner) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run a client as nobody";
  EXPECT_EQ(owner_seen_for_client_of(65534), 65534u);
  EXPECT_EQ(owner_seen_for_client_of(0), 0u);
}

TEST(PeerOwner, NotASocketIsRemote) { EXPECT_EQ(dt::tcp_peer_owner(-1), kRemotePeers); }

}  // namespace
