// test_privileges.cpp - the capabilities the agent keeps after setup (daemon/privileges.h):
// which ones for which needs, and the drop itself, in a child process (a death test, so that
// this process keeps its own), including a thread started before the drop.
#include <dirent.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sys/capability.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "daemon/privileges.h"

namespace {

TEST(Privileges, KeptForWhatTheAgentStillDoes) {
  EXPECT_TRUE(dt::capabilities_to_keep({}).empty());
  dt::PrivilegeNeeds clsact;
  clsact.clsact_detach = true;
  const auto kept = dt::capabilities_to_keep(clsact);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].cap, CAP_NET_ADMIN);
  dt::PrivilegeNeeds both = clsact;
  both.bpf_gated = true;
  EXPECT_EQ(dt::capability_names(1ull << CAP_NET_ADMIN | 1ull << CAP_BPF), "CAP_NET_ADMIN,CAP_BPF");
  EXPECT_EQ(dt::capabilities_to_keep(both).size(), 2u);
  dt::PrivilegeNeeds lists;
  lists.new_maps = true;
  lists.bpf_gated = true;
  const auto for_lists = dt::capabilities_to_keep(lists);
  ASSERT_EQ(for_lists.size(), 1u) << "CAP_BPF once, whichever needs it";
  EXPECT_EQ(for_lists[0].cap, CAP_BPF);
  EXPECT_EQ(dt::describe_capabilities({}), "none");
  EXPECT_NE(dt::describe_capabilities(kept).find("CAP_NET_ADMIN (removes the clsact filter"), std::string::npos);
}

TEST(Privileges, LeavingTheDispatcherKeepsNetAdminAndSysAdmin) {
  dt::PrivilegeNeeds multi;
  multi.dispatcher_detach = true;
  multi.new_maps = true;
  const auto kept = dt::capabilities_to_keep(multi);
  ASSERT_EQ(kept.size(), 3u) << dt::describe_capabilities(kept);
  EXPECT_EQ(kept[0].cap, CAP_NET_ADMIN);
  EXPECT_EQ(kept[1].cap, CAP_SYS_ADMIN);
  EXPECT_EQ(kept[2].cap, CAP_BPF);
  EXPECT_NE(std::string(kept[1].why).find("libxdp's dispatcher"), std::string::npos) << kept[1].why;
}

TEST(Privileges, NetAdminOnceForTheSynproxyTableAndTheClsactFilter) {
  dt::PrivilegeNeeds synproxy;
  synproxy.synproxy = true;
  const auto alone = dt::capabilities_to_keep(synproxy);
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_EQ(alone[0].cap, CAP_NET_ADMIN);
  EXPECT_NE(std::string(alone[0].why).find("SYNPROXY table"), std::string::npos) << alone[0].why;
  synproxy.clsact_detach = true;
  const auto both = dt::capabilities_to_keep(synproxy);
  ASSERT_EQ(both.size(), 1u) << "CAP_NET_ADMIN once, whichever needs it";
  EXPECT_NE(std::string(both[0].why).find("clsact filter"), std::string::npos) << both[0].why;
  EXPECT_NE(std::string(both[0].why).find("SYNPROXY table"), std::string::npos) << both[0].why;
}

TEST(Privileges, ARefusalAfterTheDropSaysWhy) {
  EXPECT_EQ(dt::refused_after_drop(-ENOENT), "");
  EXPECT_NE(dt::refused_after_drop(-EPERM).find("dropped its capabilities"), std::string::npos);
}

// Every thread's CapEff, CapPrm and CapBnd equal `mask`, with NoNewPrivs: 0 if so.
int threads_hold_exactly(uint64_t mask) {
  DIR *d = opendir("/proc/self/task");
  int threads = 0, wrong = 0;
  while (dirent *e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(std::string("/proc/self/task/") + e->d_name + "/status");
    std::string line;
    threads++;
    while (std::getline(in, line))
      for (const char *key : {"CapEff:", "CapPrm:", "CapBnd:", "NoNewPrivs:"})
        if (line.rfind(key, 0) == 0) {
          const uint64_t v = std::stoull(line.substr(strlen(key)), nullptr, key[0] == 'N' ? 10 : 16);
          wrong += key[0] == 'N' ? v != 1 : v != mask;
        }
  }
  closedir(d);
  return threads >= 2 && wrong == 0 ? 0 : 1;
}

// In the death test's child: a thread started before the drop (like the query server's), the
// drop keeping CAP_NET_ADMIN, then every thread's sets checked; exits 0 if they are right.
[[noreturn]] void drop_with_a_thread_started_before() {
  int wake[2];
  if (pipe(wake) != 0) _exit(3);
  std::thread earlier([fd = wake[0]] {
    char c;
    if (read(fd, &c, 1) < 0) _exit(4);
  });
  dt::PrivilegeNeeds needs;
  needs.clsact_detach = true;
  std::string warning, err;
  if (!dt::drop_privileges(dt::capabilities_to_keep(needs), &warning, &err)) {
    fprintf(stderr, "%s\n", err.c_str());
    _exit(2);
  }
  const int rc = threads_hold_exactly(1ull << CAP_NET_ADMIN);
  if (write(wake[1], "x", 1) != 1) _exit(5);
  earlier.join();
  _exit(rc);
}

TEST(PrivilegesDeathTest, DropsInEveryThreadAndKeepsOnlyWhatIsAsked) {
  cap_t caps = cap_get_proc();
  cap_flag_value_t setpcap = CAP_CLEAR;
  cap_get_flag(caps, CAP_SETPCAP, CAP_EFFECTIVE, &setpcap);
  cap_free(caps);
  if (setpcap != CAP_SET) GTEST_SKIP() << "needs root (CAP_SETPCAP) to drop the bounding set";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(drop_with_a_thread_started_before(), testing::ExitedWithCode(0), "");
}

}  // namespace
