// reload.cpp - SIGHUP: the rules file re-read and installed, in whole or in part.
#include "daemon/reload.h"

#include <cstring>

#include "cluster/cluster.h"
#include "common/log.h"
#include "daemon/adaptive_driver.h"
#include "daemon/lists_install.h"
#include "daemon/privileges.h"
#include "dataplane/kernel_probe.h"
#include "host/synproxy.h"
#include "rules/tags.h"

namespace dt {
namespace {

// `next` is in the maps already: the tag rules, the cluster and the adaptive limits
// follow. A refused tag rule set keeps the previous one (and its limits).
std::string install_rules(ReloadTargets t, LoadedRules next) {
  const RunOptions &opt = t.config.opt;
  std::vector<TagRule> next_tags = tag_rules_of(next, opt);
  std::string tag_err;
  const bool tags_ok = check_strict(next_tags, opt, &tag_err) && t.tags.replace_rules(next_tags, &tag_err);
  t.config.rules = std::move(next);
  if (tags_ok) t.config.tag_rules = std::move(next_tags);
  if (t.cluster) {
    t.cluster->set_rules(t.config.rules.names, t.config.rules.throttles);
    t.cluster->set_rule_bursts(rule_burst_hits(t.config.rules.compiled.policies));
    t.cluster->set_prefix_levels(prefix_level_keys(t.config.rules));
    t.cluster->set_dest_rules(dest_rule_ids(t.config.rules));
  }
  // The tag rules in force: the new ones, or the previous ones if those were refused.
  std::string adaptive_err;
  const bool adaptive_ok =
      t.adaptive.configure(t.config.rules, t.tags.rules(), !t.cluster, opt.period_ns, &adaptive_err);
  if (tags_ok && adaptive_ok) {
    const std::string summary = describe_run_rules(t.config);
    DT_INFO("reloaded %s: %s", opt.rules_file.c_str(), summary.c_str());
    if (const std::string dry = describe_dry_run(t.config); !dry.empty()) DT_INFO("%s", dry.c_str());
    return "ok " + summary;
  }
  const std::string why =
      !tags_ok ? "the packet rules are in force, but the tag rules were refused (the previous ones stay): " + tag_err
               : "the rules are in force, but the adaptive limits could not be applied: " + adaptive_err;
  DT_ERROR("reloaded %s in part: %s", opt.rules_file.c_str(), why.c_str());
  return "partial " + why;
}

// The SYNPROXY table for `ports` (the next rules' syn_cookies ports, not empty), before the
// maps change: replaced, or installed if the agent may. "" or why not (nothing changed).
std::string prepare_synproxy(ReloadTargets t, const std::vector<PortRange> &ports) {
  std::string err;
  if (t.synproxy) {
    if (!t.synproxy->replace(ports, &err)) return "syn_cookies: " + err;
    DT_INFO("reload: %s", t.synproxy->describe().c_str());
    return "";
  }
  if (!t.synproxy_allowed)
    return "syn_cookies rules need netfilter's SYNPROXY table, which the agent sets up at start only when a rule "
           "has syn_cookies (it dropped CAP_NET_ADMIN): restart the agent with these rules";
  t.synproxy = HostSynproxy::install(ports, &err);
  if (!t.synproxy) return "syn_cookies: " + err;
  DT_INFO("reload: %s", t.synproxy->describe().c_str());
  return "";
}

// The new rules are in the maps: the table goes if none of them has syn_cookies, else covers
// their ports alone (prepared for `both`, theirs and the old rules').
void follow_synproxy(ReloadTargets t, const std::vector<PortRange> &ports, const std::vector<PortRange> &both) {
  if (!t.synproxy) return;
  std::string err;
  if (!ports.empty()) {
    if (ports == both) return;
    if (!t.synproxy->replace(ports, &err)) DT_WARN("reload: SYNPROXY table for the new ports only: %s", err.c_str());
    else DT_INFO("reload: %s", t.synproxy->describe().c_str());
    return;
  }
  if (!t.synproxy->remove(&err)) DT_WARN("reload: removing the SYNPROXY table: %s", err.c_str());
  else
    DT_INFO(
        "reload: no rule has syn_cookies any more: nftables table inet %s removed, "
        "net.netfilter.nf_conntrack_tcp_loose restored",
        kSynproxyTable);
  t.synproxy.reset();
}

}  // namespace

std::string reload_rules(ReloadTargets t) {
  const RunOptions &opt = t.config.opt;
  LoadedRules next;
  std::string why;
  if (opt.rules_file.empty()) {
    why = "nothing to reload: the agent runs without --rules, --peers-file or peers in --config";
  } else if (load_rules(opt.rate, opt.burst, opt.bytes, opt.rules_file, &next, &why, &t.config.rules,
                        opt.prefix_limits)) {
    if (opt.dry_run) set_all_dry_run(&next);  // --dry-run holds for the new rules too
    if (why = check_syn_cookies(syn_cookie_rule_names(next), opt.hook == AttachHook::Tc); !why.empty()) {
      DT_ERROR("reload failed, the previous rules stay in force: %s", why.c_str());
      return "error " + why;
    }
    // Until the maps change, the table covers the old rules' ports and the new ones.
    const std::vector<PortRange> ports = merge_port_ranges(syn_cookie_ports(next.set.rules));
    std::vector<PortRange> both = syn_cookie_ports(t.config.rules.set.rules);
    both.insert(both.end(), ports.begin(), ports.end());
    if (!ports.empty() && !(why = prepare_synproxy(t, both)).empty()) {
      DT_ERROR("reload failed, the previous rules stay in force: %s", why.c_str());
      return "error " + why;
    }
    // The lists first: a list the kernel cannot take leaves everything as it was.
    if (!install_lists(t.maps.lists, next, &t.config.rules, &why)) {
      DT_ERROR("reload failed, the previous rules and lists stay in force: %s", why.c_str());
      return "error " + why;
    }
    const int rc = publish_rules(t.maps, next.compiled.policies, next.compiled.lpm, next.names, next.compiled.prefix,
                                 next.compiled.cond);
    if (rc == 0) {
      follow_synproxy(t, ports, merge_port_ranges(both));
      return install_rules(t, std::move(next));
    }
    why = std::string("cannot write the rules to the maps: ") + strerror(-rc) + refused_after_drop(rc);
  }
  DT_ERROR("reload failed, the previous rules stay in force: %s", why.c_str());
  return "error " + why;
}

std::string reload_peers(ReloadTargets t) {
  std::vector<std::string> next;
  std::string why;
  PeersChange change;
  PeerSet verified;
  const size_t before = t.cluster->peer_endpoints().size();
  if (load_peer_verified(t.config.opt, &verified, &why) && load_peers(t.config.opt, true, &next, &why) &&
      t.cluster->update_peers(next, &change, &why)) {
    t.config.peers = t.cluster->peer_endpoints();
    std::string summary = describe_peers_change(change);
    if (change.verified_withdrawn)
      summary += "; " + std::to_string(change.verified_withdrawn) + " verified source" +
                 (change.verified_withdrawn == 1 ? "" : "s") + " of the removed peers deleted";
    if (const std::string v = describe_peer_set_change("--peer-verified", t.cluster->peer_verified(), verified);
        !v.empty()) {
      const size_t withdrawn = t.cluster->set_peer_verified(verified);
      t.config.opt.peer_verified = verified;
      summary += "; " + v + ", " + std::to_string(withdrawn) + " verified source" + (withdrawn == 1 ? "" : "s") +
                 " of the peers no longer listed deleted";
    }
    DT_INFO("reloaded %s", summary.c_str());
    return "ok " + summary;
  }
  why = "peers: the previous " + std::to_string(before) + (before == 1 ? " peer stays: " : " peers stay: ") + why;
  DT_ERROR("reload of the peers failed: %s", why.c_str());
  return "error " + why;
}

// Peers written into the --config file of an agent that runs without a cluster: a
// reload cannot start one, and says so ("" if there are none).
static std::string peers_without_cluster(const RunOptions &opt) {
  std::vector<std::string> now;
  std::string err;
  if (!opt.config_peers || !read_config_peers(opt.config_file, &now, &err) || now.empty()) return "";
  DT_WARN("%s has peers now, but this agent runs without a cluster: restart it to join one", opt.config_file.c_str());
  return "peers: ignored, the agent runs without a cluster (restart it to join one)";
}

std::string reload_all(ReloadTargets t) {
  const RunOptions &opt = t.config.opt;
  // With --curve-key the keys are read again even when the peers cannot change.
  // --peer-verified from the --config file is read again with them.
  const bool peers =
      t.cluster && (!opt.peers_file.empty() || opt.config_peers || opt.config_peer_verified || !opt.curve_key.empty());
  if (!peers) {
    const std::string note = t.cluster ? "" : peers_without_cluster(opt);
    if (note.empty()) return reload_rules(t);
    if (opt.rules_file.empty()) return "error " + note;
    const std::string r = reload_rules(t);
    return (r.rfind("error ", 0) == 0 ? "error " : "partial ") + r.substr(r.find(' ') + 1) + "; " + note;
  }
  const std::string p = reload_peers(t);
  if (opt.rules_file.empty()) return p;
  const std::string r = reload_rules(t);
  auto status = [](const std::string &o) { return o.substr(0, o.find(' ')); };
  auto text = [](const std::string &o) { return o.substr(o.find(' ') + 1); };
  const std::string rs = status(r), ps = status(p);
  const std::string rules_text = rs == "error" ? "rules: the previous ones stay in force: " + text(r) : text(r);
  const std::string outcome = rs == "ok" && ps == "ok" ? "ok" : rs == "error" && ps == "error" ? "error" : "partial";
  return outcome + " " + rules_text + "; " + text(p);
}

}  // namespace dt
