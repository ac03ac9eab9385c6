// synproxy.h - the host side of SYN cookies answered in XDP: the listener's host accepts
// the handshake's ACK that carries an XDP-made cookie through netfilter's SYNPROXY.
//
// The XDP program answers a SYN with a SYN-ACK whose sequence number is a kernel syncookie
// (bpf_tcp_raw_gen_syncookie_ipv4/6); the host never saw that SYN, so the client's ACK has
// no conntrack entry. With net.netfilter.nf_conntrack_tcp_loose = 0 conntrack calls such an
// ACK invalid instead of picking it up mid-stream, and this nftables table hands it to
// SYNPROXY, which checks the cookie (the same kernel secret made it), opens the connection
// to the real listener and translates sequence numbers from then on:
//
//   table inet dthrottle_synproxy {
//     chain input {
//       type filter hook input priority filter; policy accept;
//       tcp dport { 80, 8000-8080 } ct state invalid synproxy mss 1460 wscale 7 timestamp sack-perm
//       tcp dport { 80, 8000-8080 } ct state invalid drop
//     }
//   }
//
// SYNs the XDP program lets through create conntrack entries as usual and never meet
// SYNPROXY. The cost: a connection to those ports that conntrack did not see begin (one
// open before conntrack was loaded in the namespace) is invalid from then on and dropped. Tables are per network
// namespace: agents in two namespaces each have their own; installing replaces a table a crashed run left (and removing
// one that is gone is no error). At exit the table goes and the sysctl gets its old value back.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/no_copy.h"
#include "rules/rules.h"

namespace dt {

// A TCP destination port range, both ends included (1..65535).
struct PortRange {
  uint16_t lo = 0, hi = 0;
  bool operator==(const PortRange &o) const { return lo == o.lo && hi == o.hi; }
};

// The table's name (family inet), one per network namespace.
extern const char kSynproxyTable[];
// Where the namespace's conntrack TCP pick-up setting lives.
extern const char kTcpLoosePath[];

// The TCP destination ports of the rules that answer SYNs with cookies (syn_cookies = true):
// a rule without a port range stands for 1-65535. Empty while no rule says so.
std::vector<PortRange> syn_cookie_ports(const std::vector<PacketRule> &rules);

// Sorted, overlapping and adjacent ranges merged; empty or reversed ones (lo 0, lo > hi) dropped.
std::vector<PortRange> merge_port_ranges(std::vector<PortRange> ranges);

// "80, 8000-8080": an nft set of `ranges` (already merged).
std::string nft_port_set(const std::vector<PortRange> &ranges);

// The nft -f text that replaces the table (a stale one from a crashed run included) with
// the two rules for `ports` (not empty, already merged).
std::string synproxy_table_text(const std::vector<PortRange> &ports);
// The nft -f text that removes the table, present or not.
std::string synproxy_removal_text();

// Runs nft -f TEXT through libnftables in this thread's network namespace; false with
// nft's message in *err. What nft prints (a listing) goes to *out if given.
bool run_nft(const std::string &text, std::string *err, std::string *out = nullptr);

// The table and the sysctl, owned: removed and restored by remove() or the destructor
// (unless keep_on_exit()). Needs CAP_NET_ADMIN to install, replace and remove.
class HostSynproxy : NoCopy {
 public:
  // Installs the table for `ports` (merged here), then sets nf_conntrack_tcp_loose to 0
  // (nf_conntrack is loaded by then: the table's ct rules need it). Null with *err
  // (and nothing left behind) on failure.
  static std::unique_ptr<HostSynproxy> install(const std::vector<PortRange> &ports, std::string *err);
  ~HostSynproxy();

  // New ports (a reload): the table replaced in one transaction.
  bool replace(const std::vector<PortRange> &ports, std::string *err);
  // Deletes the table and restores the sysctl; false with *err naming what failed (the
  // rest is still done). Once only: later calls return true.
  bool remove(std::string *err);
  // Leaves both in place at exit (--keep: the XDP program goes on answering with cookies).
  void keep_on_exit() { keep_ = true; }

  // One line for the log: what was installed.
  std::string describe() const;

 private:
  HostSynproxy(std::vector<PortRange> ports, std::string old_loose)
      : ports_(std::move(ports)), old_loose_(std::move(old_loose)) {}
  std::vector<PortRange> ports_;
  std::string old_loose_;  // "1" on a default host
  bool removed_ = false, keep_ = false;
};

}  // namespace dt
