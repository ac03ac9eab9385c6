// test_synproxy.cpp - the host's SYNPROXY table for XDP's SYN cookies (host/synproxy.h):
// port ranges merged, the nft text, the table's name (without root); and, as root, the
// table and the sysctl installed, replaced and removed in a scratch network namespace of
// a thread of its own (skipped otherwise).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/capability.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "host/synproxy.h"

namespace dt {
namespace {

TEST(SynproxyPorts, MergedSortedAndInvalidDropped) {
  EXPECT_EQ(merge_port_ranges({{8080, 8090}, {80, 80}, {8085, 8100}, {81, 81}, {0, 5}, {90, 89}, {443, 443}}),
            (std::vector<PortRange>{{80, 81}, {443, 443}, {8080, 8100}}));
  EXPECT_EQ(merge_port_ranges({{1, 65535}, {80, 80}}), (std::vector<PortRange>{{1, 65535}}));
  EXPECT_EQ(merge_port_ranges({{65535, 65535}, {65534, 65534}}), (std::vector<PortRange>{{65534, 65535}}));
  EXPECT_TRUE(merge_port_ranges({}).empty());
}

TEST(SynproxyPorts, NftSetText) {
  EXPECT_EQ(nft_port_set({{80, 80}}), "80");
  EXPECT_EQ(nft_port_set({{80, 81}, {443, 443}, {8000, 8080}}), "80-81, 443, 8000-8080");
}

TEST(SynproxyPorts, OnlyTheCookieRulesPortsAreProxied) {
  PacketRule tcp;
  tcp.proto = IPPROTO_TCP, tcp.dport_lo = 80, tcp.dport_hi = 80;
  PacketRule any;
  EXPECT_TRUE(syn_cookie_ports({tcp, any}).empty()) << "no rule has syn_cookies = true";
  PacketRule cookies = tcp;
  cookies.syn_cookies = true, cookies.dport_lo = 443, cookies.dport_hi = 443;
  PacketRule every_port;
  every_port.proto = IPPROTO_TCP, every_port.syn_cookies = true;
  EXPECT_EQ(syn_cookie_ports({tcp, cookies, any}), (std::vector<PortRange>{{443, 443}}))
      << "a rule without syn_cookies adds no port";
  EXPECT_EQ(syn_cookie_ports({cookies, every_port}), (std::vector<PortRange>{{1, 65535}}))
      << "a cookie rule without a port condition proxies every port";
}

TEST(SynproxyTable, ReplacesAStaleTableWithTheTwoRules) {
  EXPECT_STREQ(kSynproxyTable, "dthrottle_synproxy");
  const std::string text = synproxy_table_text({{80, 80}, {8000, 8080}});
  EXPECT_EQ(text,
            "table inet dthrottle_synproxy\n"
            "delete table inet dthrottle_synproxy\n"
            "table inet dthrottle_synproxy {\n"
            "  chain input {\n"
            "    type filter hook input priority filter; policy accept;\n"
            "    tcp dport { 80, 8000-8080 } ct state invalid synproxy mss 1460 wscale 7 timestamp sack-perm\n"
            "    tcp dport { 80, 8000-8080 } ct state invalid drop\n"
            "  }\n"
            "}\n");
  EXPECT_EQ(synproxy_removal_text(), "table inet dthrottle_synproxy\ndelete table inet dthrottle_synproxy\n");
}

TEST(SynproxyTable, InstallRefusesNoPorts) {
  std::string err;
  EXPECT_EQ(HostSynproxy::install({{0, 0}}, &err), nullptr);
  EXPECT_NE(err.find("no TCP port"), std::string::npos) << err;
}

std::string loose() {
  char v[8] = {};
  FILE *f = fopen(kTcpLoosePath, "re");
  if (f && !fgets(v, sizeof v, f)) v[0] = '\0';
  if (f) fclose(f);
  return v;
}

// Runs in a thread that has unshared its network namespace (tables and the per-namespace
// sysctl are this thread's only): a stale table replaced, the sysctl set and restored.
void install_and_remove_in_scratch_namespace() {
  ASSERT_EQ(unshare(CLONE_NEWNET), 0) << "cannot make a scratch network namespace";
  std::string err, listing;
  // A crashed run's table (old ports); its ct rule loads nf_conntrack, so the sysctl exists.
  ASSERT_TRUE(run_nft(synproxy_table_text({{9, 9}}), &err)) << err;
  ASSERT_EQ(loose(), "1\n") << "a new namespace's " << kTcpLoosePath;
  auto sp = HostSynproxy::install({{8000, 8080}, {80, 80}}, &err);
  ASSERT_NE(sp, nullptr) << err;
  ASSERT_TRUE(run_nft("list table inet dthrottle_synproxy", &err, &listing)) << err;
  EXPECT_NE(listing.find("tcp dport { 80, 8000-8080 } ct state invalid synproxy mss 1460 wscale 7 timestamp sack-perm"),
            std::string::npos)
      << listing;
  EXPECT_NE(listing.find("tcp dport { 80, 8000-8080 } ct state invalid drop"), std::string::npos) << listing;
  EXPECT_EQ(listing.find(" 9 "), std::string::npos) << "the stale table's port stayed: " << listing;
  EXPECT_EQ(loose(), "0\n");
  EXPECT_NE(sp->describe().find("was 1"), std::string::npos) << sp->describe();
  ASSERT_TRUE(sp->replace({{443, 443}}, &err)) << err;
  ASSERT_TRUE(run_nft("list table inet dthrottle_synproxy", &err, &listing)) << err;
  EXPECT_NE(listing.find("tcp dport 443 ct state invalid synproxy"), std::string::npos) << listing;
  // The agent removes it after its privilege drop: CAP_NET_ADMIN alone (kept for it), uid 0.
  cap_t admin = cap_from_text("cap_net_admin=ep");
  ASSERT_EQ(cap_set_proc(admin), 0) << "cannot drop this thread's capabilities to CAP_NET_ADMIN";
  cap_free(admin);
  sp.reset();  // what the agent's exit does
  EXPECT_FALSE(run_nft("list table inet dthrottle_synproxy", &err, &listing)) << "the table stayed: " << listing;
  EXPECT_EQ(loose(), "1\n") << "the sysctl was not restored";
  EXPECT_TRUE(run_nft(synproxy_removal_text(), &err)) << "removing a table that is gone: " << err;
}

// Without CAP_NET_ADMIN the table cannot go; the sysctl is still restored (uid 0 writes
// /proc/sys/net with no capability) and the error says what stayed.
void removal_without_net_admin() {
  ASSERT_EQ(unshare(CLONE_NEWNET), 0) << "cannot make a scratch network namespace";
  std::string err;
  ASSERT_TRUE(run_nft(synproxy_table_text({{9, 9}}), &err)) << err;  // nf_conntrack: the sysctl exists
  auto sp = HostSynproxy::install({{80, 80}}, &err);
  ASSERT_NE(sp, nullptr) << err;
  cap_t none = cap_init();
  ASSERT_EQ(cap_set_proc(none), 0);
  cap_free(none);
  EXPECT_FALSE(sp->remove(&err));
  EXPECT_NE(err.find("nftables refused the table dthrottle_synproxy"), std::string::npos) << err;
  EXPECT_EQ(loose(), "1\n") << "the sysctl was not restored: " << err;
}

TEST(SynproxyNetns, InstalledReplacedAndRemovedInAScratchNamespace) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (a network namespace, nftables)";
  std::thread t(install_and_remove_in_scratch_namespace);
  t.join();
  std::thread u(removal_without_net_admin);
  u.join();
}

}  // namespace
}  // namespace dt
