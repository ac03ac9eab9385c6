/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * abi/names.h - the names of the pinned maps and links under --pin-dir, and the defaults
 * of where they are pinned and how many sources the buckets map holds.
 */
#ifndef DTHROTTLE_ABI_NAMES_H
#define DTHROTTLE_ABI_NAMES_H

/* Names of the pinned maps under --pin-dir (also the map names in the object); each
 * one of the catalogue of maps (dthrottle/maps_catalog.h, checked by a test). */
#define DT_MAP_BUCKETS     "buckets"
#define DT_MAP_STATS       "stats"
#define DT_MAP_POLICY      "policy"
#define DT_MAP_CONFIG      "config"
#define DT_MAP_DEBIT_BATCH "debit_batch"
#define DT_MAP_COLLECT_BATCH "collect_batch"
#define DT_MAP_ACTIVE      "active"
#define DT_MAP_CLUSTER_EXEMPT "cluster_exempt"
#define DT_MAP_CLUSTER_PORTS "cluster_ports"
#define DT_MAP_RULES0      "rules0"
#define DT_MAP_RULES1      "rules1"
#define DT_MAP_RULE_STATS  "rule_stats"
#define DT_MAP_RULE_NAMES  "rule_names"
#define DT_MAP_RULE_COND   "rule_cond"   /* a rule's dst prefix and length range (struct dt_rule_cond) */
#define DT_MAP_RULE_WOULD_DROP "rule_would_drop"
#define DT_MAP_RULE_BYTES  "rule_bytes"
#define DT_MAP_DROP_PENDING "drop_pending"
#define DT_MAP_PREFIX_POLICY "prefix_policy"
#define DT_MAP_PREFIX_DROPS  "prefix_drops"
#define DT_MAP_LAYOUT      "layout"
#define DT_MAP_FEATURES    "features"
#define DT_MAP_BANS_V4     "bans_v4"     /* bans: IPv4 prefixes (struct dt_ban) */
#define DT_MAP_BANS_V6     "bans_v6"     /* bans: IPv6 prefixes (struct dt_ban) */
#define DT_MAP_BAN_INFO    "ban_info"    /* bans: what, why, who, by slot (struct dt_ban_info) */
#define DT_MAP_BAN_COUNTS  "ban_counts"  /* bans: per slot and CPU (struct dt_ban_counts) */
#define DT_MAP_VERIFIED    "verified"    /* SYN cookies: sources whose cookie checked out (struct dt_verified) */
#define DT_MAP_SYNCOOKIE   "syncookie"   /* SYN cookies: TTL and last cookie sent (struct dt_syncookie) */
#define DT_PIN_LINK        "link"
#define DT_PIN_TC_LINK     "tc_link"   /* --attach tc on Linux 6.6+: the tcx link */

#define DT_DEFAULT_PIN_ROOT   "/sys/fs/bpf/dthrottle"
#define DT_DEFAULT_MAX_SOURCES 1048576u
#define DT_DEFAULT_MAX_VERIFIED 65536u

#endif /* DTHROTTLE_ABI_NAMES_H */
