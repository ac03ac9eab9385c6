// synproxy.cpp - the SYNPROXY table and the conntrack sysctl (synproxy.h).
#include "host/synproxy.h"

#include <netinet/in.h>
#include <nftables/libnftables.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/log.h"

namespace dt {

const char kSynproxyTable[] = "dthrottle_synproxy";
const char kTcpLoosePath[] = "/proc/sys/net/netfilter/nf_conntrack_tcp_loose";

namespace {

// Whether a rule answers SYNs with cookies (syn_cookies = true).
bool answers_with_cookies(const PacketRule &r) { return r.syn_cookies; }

// The sysctl's value ("1\n" -> "1"); false with *err.
bool read_sysctl(const char *path, std::string *value, std::string *err) {
  FILE *f = fopen(path, "re");
  char line[32] = {};
  const bool ok = f && fgets(line, sizeof line, f);
  const int saved = errno;
  if (f) fclose(f);
  if (!ok) return *err = std::string("cannot read ") + path + ": " + strerror(saved), false;
  *value = line;
  while (!value->empty() && (value->back() == '\n' || value->back() == ' ')) value->pop_back();
  return true;
}

// A read-only /proc/sys (systemd's ProtectKernelTunables=yes) gets a hint: set it beforehand.
bool write_sysctl(const char *path, const std::string &value, std::string *err) {
  FILE *f = fopen(path, "we");
  if (!f && errno == EROFS)
    return *err = std::string(path) + " is read-only here (systemd's ProtectKernelTunables=yes?): set " +
                  "net.netfilter.nf_conntrack_tcp_loose = " + value + " before the agent starts (sysctl.d)",
           false;
  if (!f) return *err = std::string("cannot open ") + path + ": " + strerror(errno), false;
  const bool ok = fputs((value + "\n").c_str(), f) >= 0;
  const int saved = errno;
  if (fclose(f) != 0 || !ok)
    return *err = std::string("cannot write ") + path + ": " + strerror(ok ? errno : saved), false;
  return true;
}

}  // namespace

std::vector<PortRange> syn_cookie_ports(const std::vector<PacketRule> &rules) {
  std::vector<PortRange> ports;
  for (const PacketRule &r : rules) {
    if (!answers_with_cookies(r) || (r.proto != 0 && r.proto != IPPROTO_TCP)) continue;
    ports.push_back(r.dport_lo == 0 && r.dport_hi == 0 ? PortRange{1, 65535} : PortRange{r.dport_lo, r.dport_hi});
  }
  return merge_port_ranges(std::move(ports));
}

std::vector<PortRange> merge_port_ranges(std::vector<PortRange> ranges) {
  ranges.erase(
      std::remove_if(ranges.begin(), ranges.end(), [](const PortRange &r) { return r.lo == 0 || r.lo > r.hi; }),
      ranges.end());
  std::sort(ranges.begin(), ranges.end(), [](const PortRange &a, const PortRange &b) { return a.lo < b.lo; });
  std::vector<PortRange> merged;
  for (const PortRange &r : ranges) {
    if (!merged.empty() && static_cast<uint32_t>(r.lo) <= static_cast<uint32_t>(merged.back().hi) + 1)
      merged.back().hi = std::max(merged.back().hi, r.hi);
    else merged.push_back(r);
  }
  return merged;
}

std::string nft_port_set(const std::vector<PortRange> &ranges) {
  std::string s;
  for (const PortRange &r : ranges) {
    if (!s.empty()) s += ", ";
    s += std::to_string(r.lo);
    if (r.hi != r.lo) s += "-" + std::to_string(r.hi);
  }
  return s;
}

std::string synproxy_table_text(const std::vector<PortRange> &ports) {
  const std::string t = std::string("table inet ") + kSynproxyTable;
  const std::string match = "    tcp dport { " + nft_port_set(ports) + " } ct state invalid ";
  // "table X" then "delete table X": replaces a table that is there and creates none that is not.
  return t + "\ndelete " + t + "\n" + t + " {\n  chain input {\n" +
         "    type filter hook input priority filter; policy accept;\n" + match +
         "synproxy mss 1460 wscale 7 timestamp sack-perm\n" + match + "drop\n  }\n}\n";
}

std::string synproxy_removal_text() {
  const std::string t = std::string("table inet ") + kSynproxyTable;
  return t + "\ndelete " + t + "\n";
}

bool run_nft(const std::string &text, std::string *err, std::string *out) {
  nft_ctx *ctx = nft_ctx_new(NFT_CTX_DEFAULT);
  if (!ctx) return *err = "libnftables: cannot create a context", false;
  nft_ctx_buffer_output(ctx);
  nft_ctx_buffer_error(ctx);
  const bool ok = nft_run_cmd_from_buffer(ctx, text.c_str()) == 0;
  if (out) *out = nft_ctx_get_output_buffer(ctx);
  if (!ok) {
    std::string msg = nft_ctx_get_error_buffer(ctx);
    while (!msg.empty() && msg.back() == '\n') msg.pop_back();
    *err = "nftables refused the table " + std::string(kSynproxyTable) + ": " + (msg.empty() ? "no reason given" : msg);
  }
  nft_ctx_free(ctx);
  return ok;
}

std::unique_ptr<HostSynproxy> HostSynproxy::install(const std::vector<PortRange> &ports, std::string *err) {
  std::vector<PortRange> merged = merge_port_ranges(ports);
  if (merged.empty()) return *err = "SYNPROXY: no TCP port to protect", nullptr;
  if (!run_nft(synproxy_table_text(merged), err)) return nullptr;
  std::string old, ignored;
  if (!read_sysctl(kTcpLoosePath, &old, err) || (old != "0" && !write_sysctl(kTcpLoosePath, "0", err))) {
    run_nft(synproxy_removal_text(), &ignored);
    return nullptr;
  }
  return std::unique_ptr<HostSynproxy>(new HostSynproxy(std::move(merged), old));
}

HostSynproxy::~HostSynproxy() {
  if (keep_) return;
  std::string err;
  if (!remove(&err)) DT_WARN("SYNPROXY removal: %s", err.c_str());
}

bool HostSynproxy::replace(const std::vector<PortRange> &ports, std::string *err) {
  std::vector<PortRange> merged = merge_port_ranges(ports);
  if (merged.empty()) return *err = "SYNPROXY: no TCP port to protect (remove it instead)", false;
  if (!run_nft(synproxy_table_text(merged), err)) return false;
  ports_ = std::move(merged);
  return true;
}

bool HostSynproxy::remove(std::string *err) {
  if (removed_) return true;
  removed_ = true;
  std::string table_err, sysctl_err;
  const bool table_ok = run_nft(synproxy_removal_text(), &table_err);
  const bool sysctl_ok = old_loose_ == "0" || write_sysctl(kTcpLoosePath, old_loose_, &sysctl_err);
  if (!table_ok) *err = table_err;
  if (!sysctl_ok) *err += (table_ok ? "" : "; ") + sysctl_err + " (to restore " + old_loose_ + ")";
  return table_ok && sysctl_ok;
}

std::string HostSynproxy::describe() const {
  return std::string("SYNPROXY for the ACKs of XDP's SYN cookies: nftables table inet ") + kSynproxyTable +
         " (tcp dport { " + nft_port_set(ports_) + " } ct state invalid: synproxy, else drop), " +
         "net.netfilter.nf_conntrack_tcp_loose 0 (was " + old_loose_ + "); both undone at exit";
}

}  // namespace dt
