// run_config.cpp - load and check the daemon's configuration without a dataplane.
#include "daemon/run_config.h"

#include <cstdio>
#include <set>

#include "adaptive/adaptive.h"
#include "cluster/curve.h"
#include "common/peers_file.h"
#include "common/program_name.h"
#include "daemon/lists_install.h"
#include "dataplane/kernel_probe.h"

namespace dt {

std::vector<TagRule> tag_rules_of(const LoadedRules &r, const RunOptions &opt) {
  std::vector<TagRule> out = r.set.tags;
  for (const auto &spec : opt.tag_rules) {
    TagRule t;
    std::string err;
    if (parse_tag_rule(spec, &t, &err)) out.push_back(t);  // validated by the CLI already
  }
  return out;
}

bool check_strict(const std::vector<TagRule> &rules, const RunOptions &opt, std::string *err) {
  for (const TagRule &r : rules) {
    if (r.strict && opt.redis.empty()) {
      *err = "tag rule '" + r.prefix + "' is strict, which needs --redis ADDR";
      return false;
    }
  }
  return true;
}

bool check_tag_rules(const std::vector<TagRule> &rules, const RunOptions &opt, std::string *err) {
  if (!check_strict(rules, opt, err)) return false;
  TagTable::Options scratch_options;
  scratch_options.max_buckets = 1;  // never used: only its rule check runs
  TagTable scratch(scratch_options);
  return scratch.replace_rules(rules, err);
}

bool check_adaptive_rules(const LoadedRules &rules, const std::vector<TagRule> &tag_rules, std::string *err) {
  std::string why;
  for (const PacketRule &r : rules.set.rules) {
    if (r.adaptive.enabled && !validate_adaptive_params(r.adaptive.params, &why)) {
      *err = "adaptive rules: rule '" + r.name + "': " + why;
      return false;
    }
  }
  for (const TagRule &t : tag_rules) {
    if (t.adaptive.enabled && !validate_adaptive_params(t.adaptive.params, &why)) {
      *err = "adaptive rules: tag rule '" + t.prefix + "': " + why;
      return false;
    }
  }
  return true;
}

bool load_peers(const RunOptions &opt, bool reread, std::vector<std::string> *out, std::string *err) {
  std::vector<std::string> peers;
  if (reread && opt.config_peers && !opt.config_file.empty()) {
    if (!read_config_peers(opt.config_file, &peers, err)) return false;
  } else {
    peers = opt.peers;
  }
  if (!opt.peers_file.empty() && !read_peers_file(opt.peers_file, &peers, err)) return false;
  std::set<std::string> seen;
  out->clear();
  for (auto &p : peers)
    if (seen.insert(p).second) out->push_back(std::move(p));
  return true;
}

bool load_peer_verified(const RunOptions &opt, PeerSet *out, std::string *err) {
  if (!opt.config_peer_verified || opt.config_file.empty()) return *out = opt.peer_verified, true;
  return read_config_peer_verified(opt.config_file, out, err);
}

bool load_run_config(const RunOptions &opt, RunConfig *out, std::string *err) {
  out->opt = opt;
  // --curve-key: the node id is the key's (an explicit --node-id must be the same).
  if (!opt.curve_key.empty() && !bind_node_id_to_key(opt.curve_key, &out->opt.node_id, err)) return false;
  if (!load_peers(opt, false, &out->peers, err)) return false;
  if (!check_report_max_age(opt, err)) return false;
  if (opt.early_report_ns && opt.early_report_ns != UINT64_MAX && opt.early_report_ns >= opt.period_ns)
    return *err = "--early-report must be shorter than the report period (--period), or off", false;
  if (!load_rules(opt.rate, opt.burst, opt.bytes, opt.rules_file, &out->rules, err, nullptr, opt.prefix_limits))
    return false;
  if (opt.dry_run) set_all_dry_run(&out->rules);
  if (std::string why = check_syn_cookies(syn_cookie_rule_names(out->rules), opt.hook == AttachHook::Tc); !why.empty())
    return *err = why, false;
  out->tag_rules = tag_rules_of(out->rules, opt);
  return check_tag_rules(out->tag_rules, opt, err) && check_adaptive_rules(out->rules, out->tag_rules, err);
}

bool check_report_max_age(const RunOptions &opt, std::string *err) {
  const uint64_t age = opt.report_max_age_ns;
  if (age == 0 || age == UINT64_MAX || age >= opt.period_ns) return true;
  char buf[256];
  snprintf(buf, sizeof buf,
           "--report-max-age %gms is shorter than the report period (%gms): every report would be stale; "
           "give at least the period, or off",
           age / 1e6, opt.period_ns / 1e6);
  *err = buf;
  return false;
}

std::string describe_dry_run(const RunConfig &c) {
  const std::string what = "what enforcing would drop is counted as would-drop (" + command_name("stats") + ", " +
                           command_name("top") + ", dthrottle_packets_total{verdict=\"would_drop\"})";
  if (c.opt.dry_run) return std::string("dry run (--dry-run): nothing is dropped; ") + what;
  const std::vector<std::string> names = dry_run_rule_names(c.rules);
  if (names.empty()) return "";
  std::string list;
  for (const auto &n : names) list += (list.empty() ? "" : ", ") + n;
  return "dry run for rule" + std::string(names.size() > 1 ? "s " : " ") + list + ": nothing they match is dropped; " +
         what;
}

std::string describe_run_rules(const RunConfig &c) {
  const std::string lists = describe_lists(c.rules);
  return describe_rules(c.rules, c.tag_rules) + (lists.empty() ? "" : "; " + lists);
}

}  // namespace dt
