// reload.cpp - SIGHUP: the rules file re-read and installed, in whole or in part.
#include "daemon/reload.h"

#include <cstring>

#include "cluster/cluster.h"
#include "common/log.h"
#include "daemon/adaptive_driver.h"
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
    t.cluster->set_prefix_levels(prefix_level_keys(t.config.rules));
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

}  // namespace

std::string reload_rules(ReloadTargets t) {
  const RunOptions &opt = t.config.opt;
  LoadedRules next;
  std::string why;
  if (opt.rules_file.empty()) {
    why = "nothing to reload: the agent runs without --rules";
  } else if (load_rules(opt.rate, opt.burst, opt.bytes, opt.rules_file, &next, &why, &t.config.rules, opt.prefix_limits)) {
    if (opt.dry_run) set_all_dry_run(&next);  // --dry-run holds for the new rules too
    const int rc = publish_rules(t.maps, next.compiled.policies, next.compiled.lpm, next.names, next.compiled.prefix);
    if (rc == 0) return install_rules(t, std::move(next));
    why = std::string("cannot write the rules to the maps: ") + strerror(-rc);
  }
  DT_ERROR("reload failed, the previous rules stay in force: %s", why.c_str());
  return "error " + why;
}

}  // namespace dt
