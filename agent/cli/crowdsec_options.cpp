// crowdsec_options.cpp - the option table of `agent crowdsec` (cli.h), the CrowdSec bouncer.
#include "cli/cli.h"
#include "cli/option_values.h"
#include "common/program_name.h"
#include "crowdsec/lapi_client.h"

namespace dt {
namespace {

const char kCrowdsecUsage[] =
    "Usage: %prog crowdsec --lapi URL --key-file FILE (--iface IFACE | --pin-dir DIR) [--poll D]\n"
    "\n"
    "A CrowdSec bouncer: pulls the decision stream of a CrowdSec Local API (first every\n"
    "active decision, then what changed, every D) and turns its `ban` decisions on\n"
    "addresses and ranges into dthrottle bans of the agent pinned in DIR, for the time the\n"
    "decision has left and with its scenario as the reason; a deleted decision lifts its\n"
    "ban. Other decisions (captcha, country, ...) are counted and left alone. Bans set\n"
    "this way are the agent's own (agent bans lists them; its peers get them too), so one\n"
    "bouncer per cluster is enough. While the LAPI cannot be reached, every ban stays\n"
    "in place and the pull is retried (D, then twice as long each time, up to 1m).\n"
    "Create the key with `cscli bouncers add NAME` and write it alone in FILE (mode 0600).\n"
    "The key and the decisions cross the network in clear over http://: a LAPI on another\n"
    "host takes https:// (verified with the system's CA certificates, or --ca-file), or\n"
    "--insecure-lapi to accept http:// all the same.\n"
    "\n";

const char kCrowdsecExample[] =
    "\nExample:\n"
    "  cscli bouncers add dthrottle -o raw > /etc/dthrottle/crowdsec.key\n"
    "  %prog crowdsec --lapi http://127.0.0.1:8080 --key-file /etc/dthrottle/crowdsec.key --iface eth0\n";

// http:// only to this host's loopback unless --insecure-lapi; the TLS files only for https://.
bool check_lapi_transport(const CrowdsecOptions &o, const LapiUrl &url, std::string *err) {
  const bool https = lapi_url_is_https(url);
  if (!https && !lapi_url_is_loopback(url) && !o.insecure_lapi)
    return *err = "--lapi " + o.lapi + ": http:// to a LAPI that is not on this host's loopback sends the API key " +
                  "and takes the decisions in clear; use https:// or, on a network you trust, add --insecure-lapi",
           false;
  if (!https && (!o.ca_file.empty() || !o.cert_file.empty() || !o.tls_key_file.empty()))
    return *err = "--ca-file, --cert and --key are for an https:// LAPI (--lapi " + o.lapi + ")", false;
  if (o.cert_file.empty() != o.tls_key_file.empty())
    return *err = "--cert and --key go together (the client certificate and its private key)", false;
  return true;
}

}  // namespace

int parse_crowdsec_command(int argc, char **argv, CrowdsecOptions *o) {
  std::vector<OptionSpec> options = with_pin_target(
      &o->iface, &o->pin_dir,
      {
          {"lapi", 0, "URL", "the Local API (api.server.listen_uri of crowdsec),\ne.g. http://127.0.0.1:8080",
           store(&o->lapi)},
          {"key-file", 0, "FILE", "the bouncer's API key (cscli bouncers add NAME)", store(&o->key_file)},
          {"ca-file", 0, "FILE", "https: the CA certificates (PEM) that verify the LAPI's\n(default: the system's)",
           store(&o->ca_file)},
          {"cert", 0, "FILE", "https: the bouncer's client certificate (PEM), with --key", store(&o->cert_file)},
          {"key", 0, "FILE", "https: the private key (PEM) of --cert", store(&o->tls_key_file)},
          {"insecure-lapi", 0, nullptr,
           "accept an http:// LAPI on another host (the API key and\nthe decisions then cross the network in clear)",
           turn_on(&o->insecure_lapi)},
          {"poll", 0, "D", "time between pulls, 200ms to 1h (default 10s)",
           duration_into(&o->poll_ns, 200'000'000, 3'600'000'000'000ull, "from 200ms to 1h")},
          {"log-level", 0, "LEVEL", "debug, info, warn or error (default info)", log_level_into(&o->log_level)},
          {"min-prefix", 0, "V4,V6",
           "refuse decisions on ranges wider than these prefix\nlengths (default 16,48); nor is any peer, hub or "
           "allowed\naddress ever banned",
           [o](const std::string &v, std::string *why) { return parse_ban_min_prefix(v, &o->min_prefix, why); }},
      },
      "set the bans of the agent pinned in /sys/fs/bpf/dthrottle/IFACE", "set the bans of the agent pinned in DIR");
  const CommandSpec spec(command_name("crowdsec"), kCrowdsecUsage, std::move(options), 0, kCrowdsecExample);
  return parse_subcommand(spec, argc, argv, [o](const std::vector<std::string> &, std::string *err) {
    if (o->lapi.empty())
      return *err = "say where the Local API is: --lapi URL (e.g. http://127.0.0.1:8080)", ParseOutcome::Error;
    LapiUrl url;
    if (!parse_lapi_url(o->lapi, &url, err)) return *err = "--lapi: " + *err, ParseOutcome::Error;
    if (!check_lapi_transport(*o, url, err)) return ParseOutcome::Error;
    if (o->key_file.empty())
      return *err = "give the bouncer's API key: --key-file FILE (from cscli bouncers add NAME)", ParseOutcome::Error;
    return resolve_pin_dir(o->iface, &o->pin_dir, "set bans on", err);
  });
}

}  // namespace dt
