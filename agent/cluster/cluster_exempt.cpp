// cluster_exempt.cpp - the cluster_exempt map's entries from the cluster's endpoints.
#include "cluster/cluster_exempt.h"

#include <bpf/bpf.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>

#include "cluster/cluster.h"
#include "common/address.h"
#include "common/endpoint.h"

namespace dt {
namespace {

// Normalised endpoints: "tcp://host:port", "tcp://*:port" for --listen.
constexpr HostPortRules kEndpointRules{.any_host = true, .host_optional = true, .tcp_scheme = true};
constexpr size_t kListedChanges = 8;  // entries named per direction in a change's log line

bool endpoint_port(const std::string &endpoint, uint16_t *port) {
  HostPort hp;
  if (!parse_host_port(endpoint, kEndpointRules, &hp)) return false;
  *port = hp.port;
  return true;
}

// The entries of `endpoint`'s addresses for `ports` (side, port), appended to *out.
void add_entries(const std::string &endpoint, const std::vector<std::pair<uint8_t, uint16_t>> &ports,
                 std::vector<dt_exempt_key> *out, std::string *err) {
  for (const dt_key &a : resolve_endpoint_hosts({endpoint}, err))
    for (const auto &[side, port] : ports) {
      dt_exempt_key k{};
      memcpy(k.addr, a.addr, sizeof k.addr);
      k.port = port;
      k.side = side;
      out->push_back(k);
    }
}

bool same_key(const dt_exempt_key &a, const dt_exempt_key &b) { return memcmp(&a, &b, sizeof a) == 0; }

// Up to kListedChanges entries of `keys`, joined, with a count of the rest.
std::string list_entries(char sign, const std::vector<dt_exempt_key> &keys) {
  std::string s;
  for (size_t i = 0; i < keys.size() && i < kListedChanges; i++)
    s += std::string(s.empty() ? "" : ", ") + sign + exempt_key_to_string(keys[i]);
  if (keys.size() > kListedChanges) s += " and " + std::to_string(keys.size() - kListedChanges) + " more";
  return s;
}

}  // namespace

bool exempt_key_less(const dt_exempt_key &a, const dt_exempt_key &b) {
  if (int c = memcmp(a.addr, b.addr, sizeof a.addr); c != 0) return c < 0;
  if (a.side != b.side) return a.side < b.side;
  return a.port < b.port;
}

std::vector<dt_exempt_key> cluster_exempt_keys(const std::vector<std::string> &peers,
                                               const std::vector<std::string> &hubs, const std::string &listen,
                                               std::string *err) {
  std::vector<dt_exempt_key> keys;
  uint16_t listen_port = 0;
  const bool listening = !listen.empty() && endpoint_port(listen, &listen_port);
  for (const auto &p : peers) {
    uint16_t port = 0;
    if (!endpoint_port(p, &port)) continue;  // refused at start: cannot happen
    std::vector<std::pair<uint8_t, uint16_t>> ports = {{DT_EXEMPT_FROM_PORT, port}};
    if (listening) ports.push_back({DT_EXEMPT_TO_PORT, listen_port});
    add_entries(p, ports, &keys, err);
  }
  for (const auto &h : hubs) {
    uint16_t port = 0;
    if (!endpoint_port(h, &port) || port == 65535) continue;  // refused at start: cannot happen
    add_entries(h, {{DT_EXEMPT_FROM_PORT, port}, {DT_EXEMPT_FROM_PORT, static_cast<uint16_t>(port + 1)}}, &keys, err);
  }
  std::sort(keys.begin(), keys.end(), exempt_key_less);
  keys.erase(std::unique(keys.begin(), keys.end(), same_key), keys.end());
  return keys;
}

bool exempts_address(const std::vector<dt_exempt_key> &keys, const dt_key &addr) {
  dt_exempt_key first{};
  memcpy(first.addr, addr.addr, sizeof first.addr);
  auto it = std::lower_bound(keys.begin(), keys.end(), first, exempt_key_less);
  return it != keys.end() && memcmp(it->addr, addr.addr, sizeof addr.addr) == 0;
}

dt_cluster_ports cluster_ports_of(const std::vector<dt_exempt_key> &keys) {
  dt_cluster_ports p{};
  for (const auto &k : keys) {
    __u64 *bits = k.side == DT_EXEMPT_TO_PORT ? p.to_port : p.from_port;
    bits[k.port / 64] |= 1ull << (k.port % 64);
  }
  return p;
}

std::vector<dt_exempt_key> install_cluster_exempt(int exempt_fd, int ports_fd, const std::vector<dt_exempt_key> &keys,
                                                  std::string *warn) {
  std::vector<dt_exempt_key> before;
  dt_exempt_key k{}, next{};
  for (const dt_exempt_key *prev = nullptr; bpf_map_get_next_key(exempt_fd, prev, &next) == 0 &&
                                            before.size() < DT_MAX_EXEMPT;  // bounded, whatever the map does
       prev = &k) {
    before.push_back(next);
    k = next;
  }
  std::sort(before.begin(), before.end(), exempt_key_less);
  auto note = [&](const std::string &what) { *warn += (warn->empty() ? "" : "; ") + what + ": " + strerror(errno); };
  for (const auto &old : before)
    if (!std::binary_search(keys.begin(), keys.end(), old, exempt_key_less) &&
        bpf_map_delete_elem(exempt_fd, &old) != 0 && errno != ENOENT)
      note("cannot remove " + exempt_key_to_string(old));
  for (const auto &add : keys) {
    const uint32_t one = 1;
    if (bpf_map_update_elem(exempt_fd, &add, &one, BPF_ANY) != 0) note("cannot add " + exempt_key_to_string(add));
  }
  const dt_cluster_ports ports = cluster_ports_of(keys);
  const uint32_t zero = 0;
  if (bpf_map_update_elem(ports_fd, &zero, &ports, BPF_ANY) != 0) note("cannot write the cluster_ports map");
  return before;
}

std::string exempt_key_to_string(const dt_exempt_key &k) {
  dt_key a{};
  memcpy(a.addr, k.addr, sizeof a.addr);
  return key_to_string(a) + (k.side == DT_EXEMPT_TO_PORT ? " tcp to port " : " tcp from port ") +
         std::to_string(k.port);
}

std::string describe_exempt_change(const std::vector<dt_exempt_key> &before, const std::vector<dt_exempt_key> &after) {
  std::vector<dt_exempt_key> added, removed;
  std::set_difference(after.begin(), after.end(), before.begin(), before.end(), std::back_inserter(added),
                      exempt_key_less);
  std::set_difference(before.begin(), before.end(), after.begin(), after.end(), std::back_inserter(removed),
                      exempt_key_less);
  if (added.empty() && removed.empty()) return "";
  std::string s = "the cluster's own connections pass unthrottled: " + std::to_string(after.size()) +
                  (after.size() == 1 ? " entry" : " entries");
  if (!added.empty()) s += "; " + list_entries('+', added);
  if (!removed.empty()) s += "; " + list_entries('-', removed);
  return s;
}

}  // namespace dt
