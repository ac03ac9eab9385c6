/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * common.h - definitions shared by the XDP program (bpf/) and the agent (agent/).
 *
 * Everything both sides must agree on lives here exactly once: map value and key
 * layouts, pinned map names, limits and flag bits. The BPF side compiles it with
 * clang -target bpf, the agent with g++ -std=c++20; the structs use only fixed-width
 * __u32/__u64 fields and explicit padding so both compilers lay them out identically
 * (the static assertions at the bottom pin the sizes down).
 */
#ifndef DTHROTTLE_COMMON_H
#define DTHROTTLE_COMMON_H

#include <linux/types.h>

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

/* Policy slots: DT_MAX_RULES rules, each in two banks (see struct dt_config).
 * Rule 0 is the default rule (--rate/--burst); rules 1.. come from --rules FILE. */
#define DT_MAX_RULES 256u
#define DT_RULE_DEFAULT 0u
/* Prefixes in one bank of the rules LPM trie, and candidate rules per prefix. */
#define DT_MAX_PREFIXES 4096u
#define DT_MAX_CANDIDATES 8
#define DT_POLICY_SLOTS (2u * DT_MAX_RULES)

/* One debit batch: how many (source, hits) pairs one BPF_PROG_RUN applies. */
#define DT_DEBIT_BATCH 4096u
/* One collect batch: how many sources one BPF_PROG_RUN of dt_collect reads. */
#define DT_COLLECT_BATCH 4096u
/* Ring buffer of sources that became active in a period (bytes, power of 2). */
#define DT_ACTIVE_RING_BYTES (16u << 20)
/* A record wakes the agent only once the ring is more than 1/2^shift full; the
 * agent drains it at every period's end anyway (see bpf/announce.h). */
#define DT_ACTIVE_WAKE_SHIFT 1
/* Announcements gather per CPU and go to the ring this many at a time (a power of 2). */
#define DT_STAGE_KEYS 32u
/* Entries of the cluster_exempt map: (address, port, side) of the cluster's own traffic. */
#define DT_MAX_EXEMPT 4096u

/*
 * The drop path writes nothing shared (see struct dt_drop_pending): a bucket's
 * last_seen_ns is rewritten only once it is DT_LAST_SEEN_SLACK_NS old, and its
 * dropped / would_drop counts gather per CPU in one of DT_DROP_SLOTS slots, added
 * into the bucket after DT_DROP_FLUSH_PACKETS packets or DT_DROP_FLUSH_NS.
 */
#define DT_LAST_SEEN_SLACK_NS 4000000ull   /* 4 ms */
#define DT_DROP_SLOTS 8u                   /* per CPU; a power of 2 */
#define DT_DROP_FLUSH_PACKETS 256u
#define DT_DROP_FLUSH_NS 10000000ull       /* 10 ms */

/* Bounded compare-and-swap retries on a contended bucket. */
#define DT_CAS_RETRIES 16

/* Limits on the policy, so that no bucket arithmetic can overflow 64 bits
 * (see bucket.h): rates in [DT_RATE_MIN, DT_RATE_MAX] packets per second,
 * bursts in [1, DT_BURST_MAX] packets. */
#define DT_RATE_MIN 0.000001
#define DT_RATE_MAX 1000000.0
#define DT_BURST_MAX 1000000000ull
#define DT_NSEC_PER_SEC 1000000000ull

/*
 * Bucket key: the source address as 16 bytes. IPv6 sources are stored as they are;
 * IPv4 sources as IPv4-mapped IPv6 (::ffff:a.b.c.d), so one map holds both families
 * and `bpftool map dump` shows the familiar mapped form.
 */
struct dt_key {
	__u8 addr[16];  /* masked to the rule's key prefix (e.g. an IPv6 /64) */
	__u32 rule;     /* the rule this bucket belongs to */
};

/*
 * Key of DT_MAP_CLUSTER_EXEMPT: the cluster's own TCP connections, passed without a
 * bucket while DT_CFG_EXEMPT is set. Written by the agent only (Cluster::refresh_exempt:
 * whole elements, value 1), for every address a peer or hub resolves to: a peer's report
 * port (DT_EXEMPT_FROM_PORT: its PUB answers our SUB), our --listen port
 * (DT_EXEMPT_TO_PORT: the peers' SUB connections to us), a hub's frontend and backend
 * ports (FROM). The packet path looks a TCP segment (first fragment, TCP right after the
 * IP header) up as (source, source port, FROM) and (source, destination port, TO), each
 * only if struct dt_cluster_ports has that port's bit. A match is not enough
 * (bpf/exempt.bpf.h): the segment passes only if the stack has a socket for its
 * four-tuple that is not a listener, or if it is a SYN to a TO port (after the lists and
 * bans). No other packet is looked up at all: UDP, ICMP, TCP between other ports.
 */
struct dt_exempt_key {
	__u8 addr[16];  /* IPv4-mapped or IPv6, as dt_key */
	__u16 port;     /* host byte order, so bpftool shows the port number */
	__u8 side;      /* DT_EXEMPT_FROM_PORT or DT_EXEMPT_TO_PORT */
	__u8 pad;       /* 0 */
};
#define DT_EXEMPT_FROM_PORT 1 /* `port` is the packet's TCP source port */
#define DT_EXEMPT_TO_PORT   2 /* `port` is the packet's TCP destination port */

/*
 * The ports of the cluster_exempt entries, as bitmaps (bit p of from_port: some entry
 * has side FROM and port p), one element at key 0 of DT_MAP_CLUSTER_PORTS, so that a TCP
 * flood to any other port (a SYN flood on a web server) costs two bit tests rather than
 * two hash lookups. Written by the agent only (whole value, after the entries: while it
 * is being written a packet may see an entry's bit a moment late, and be throttled).
 */
#define DT_PORT_WORDS (65536u / 64u)
struct dt_cluster_ports {
	__u64 from_port[DT_PORT_WORDS];
	__u64 to_port[DT_PORT_WORDS];
};

/*
 * Per-source state, one element per source in the LRU hash map DT_MAP_BUCKETS.
 *
 * Who writes what (the agent never calls bpf_map_update_elem on a live bucket, since
 * that would replace the element and lose concurrent kernel updates):
 *   tat_ns       compare-and-swap only, by the XDP program (admit) and by the
 *                debit program the agent runs with BPF_PROG_RUN (peer hits).
 *   passed       atomic add, XDP program (admissions are rare under a flood: the
 *                bucket's rate bounds them).
 *   dropped,
 *   would_drop   atomic add, XDP program, but not per packet: drops gather per CPU
 *                in the drop_pending map (struct dt_drop_pending) and reach the
 *                bucket DT_DROP_FLUSH_PACKETS at a time, or after DT_DROP_FLUSH_NS.
 *                Readers add the pending counts (dt::for_each_bucket, read_bucket).
 *   debited      atomic add, debit program.
 *   reported     the collect program only (the agent runs it, one thread): the value
 *                of `passed` already reported to peers; passed - reported is owed.
 *   last_seen_ns plain store by the XDP program (any CPU's recent time is fine),
 *                only when it is more than DT_LAST_SEEN_SLACK_NS old: a flood
 *                rewrites it every few ms, not every packet.
 *   rule         set once when the bucket is created.
 *   epoch        compare-and-swap by the XDP program: the last report period in
 *                which this source was announced as active (see dt_mark_active).
 */
struct dt_bucket {
	__u64 tat_ns;       /* GCRA theoretical arrival time, CLOCK_MONOTONIC ns */
	__u64 passed;       /* packets admitted */
	__u64 dropped;      /* packets dropped for lack of tokens */
	__u64 debited;      /* hits debited on behalf of peers */
	__u64 reported;     /* admitted packets already reported to peers */
	__u64 last_seen_ns; /* time of the last packet from this source */
	__u32 rule;         /* index of the rule whose policy applies */
	__u32 epoch;        /* report period this source was last announced in */
	__u64 would_drop;   /* dry run: packets (or bytes) that enforcing would have dropped */
};

/* What a rule does with a packet it matches. */
#define DT_ACT_THROTTLE 0 /* token bucket per (masked) source */
#define DT_ACT_ALLOW    1 /* never throttled */
#define DT_ACT_DENY     2 /* always dropped */

/*
 * A rule's policy as the kernel applies it. The agent turns "rate R per second,
 * burst B" into integers once: one token is worth interval_ns nanoseconds, a full
 * bucket burst_ns = B * interval_ns. A throttle rule with interval_ns == 0 means
 * "no policy": the packet passes (fail open) and is counted. Sources are bucketed
 * per /v4_key_bits (IPv4) or /v6_key_bits (IPv6) prefix.
 */
struct dt_policy {
	__u64 interval_ns;
	__u64 burst_ns;
	__u8 action;      /* DT_ACT_* */
	__u8 v4_key_bits; /* 1..32 */
	__u8 v6_key_bits; /* 1..128 */
	__u8 flags;       /* DT_POL_* */
	__u8 pad[4];
};

/* dt_policy.flags */
#define DT_POL_DRY_RUN 0x1 /* decide and count as if enforcing, never drop (would_drop) */
#define DT_POL_BYTES   0x2 /* tokens are bytes of the frame (Ethernet header included), not packets */
#define DT_POL_PREFIX  0x4 /* the rule also caps its sources per prefix (struct dt_prefix_policy) */
#define DT_POL_KEY_DEST 0x8 /* key_by = "destination": one bucket per (masked) destination
                             * address, whatever the sources (key.rule has DT_KEY_DEST) */
#define DT_POL_SYN_COOKIES 0x10 /* syn_cookies = true: a SYN only a prefix budget refuses is answered
                                 * with a SYN cookie; verified sources skip the prefix budgets */

/*
 * Prefix budgets: a throttle rule may also cap the aggregate of its sources per
 * prefix, at up to DT_PREFIX_LEVELS levels per family (e.g. IPv4 /24 and /16, IPv6
 * /48 and /32), each a token bucket of its own. A packet passes only when every
 * level of its family and its source bucket have a token (bpf/prefix.bpf.h).
 *
 * The levels of rule R live in DT_MAP_PREFIX_POLICY at slot R*2 + bank, banked
 * like `policy` (one config.bank flip switches both). A level is a dt_policy:
 * interval_ns and burst_ns as for a source, action DT_ACT_THROTTLE, flags
 * DT_POL_BYTES as its rule's, and its prefix length in v4_key_bits (an IPv4 level)
 * or v6_key_bits (an IPv6 level). The agent sorts each family's levels broadest
 * first, so a flooded /16 refuses before any of its /24 buckets is looked at.
 */
#define DT_PREFIX_LEVELS 4u
#define DT_PREFIX_SLOTS  (2u * DT_PREFIX_LEVELS) /* per rule: IPv4 levels 0..3, IPv6 4..7 */
struct dt_prefix_policy {
	__u8 n_v4;  /* levels in use in v4[] */
	__u8 n_v6;  /* levels in use in v6[] */
	__u8 pad[6];
	struct dt_policy v4[DT_PREFIX_LEVELS];
	struct dt_policy v6[DT_PREFIX_LEVELS];
};

/*
 * A prefix bucket lives in DT_MAP_BUCKETS beside the source buckets, so that the
 * collect, debit and report machinery shares it across the cluster unchanged. Its
 * key is the address cut to the level's prefix, and key.rule (and bucket.rule)
 *   bit 31       DT_KEY_PREFIX: a prefix bucket
 *   bit 30       DT_KEY_PREFIX_V6: an IPv6 level (else IPv4)
 *   bits 16..23  the level's prefix length within its family (24 for an IPv4 /24)
 *   bits 0..15   the rule
 *   bit 29       DT_KEY_DEST: a destination bucket (a rule with DT_POL_KEY_DEST; the
 *                address is the packet's destination cut to the rule's key prefix;
 *                never with DT_KEY_PREFIX: the rules refuse prefix budgets with key_by)
 * A source bucket's key.rule is the rule alone (< DT_MAX_RULES), so none of them meet.
 */
#define DT_KEY_PREFIX    (1u << 31)
#define DT_KEY_PREFIX_V6 (1u << 30)
#define DT_KEY_DEST      (1u << 29)
#define DT_KEY_BITS_SHIFT 16
#define DT_KEY_RULE_MASK 0xffffu

/* Key of the rules LPM trie: prefixlen bits of the 16-byte (IPv4-mapped) address. */
struct dt_lpm_key {
	__u32 prefixlen;
	__u8 addr[16];
};

/*
 * One candidate rule of a prefix, with the conditions it adds (all must hold). A
 * condition that cannot be known for a packet (a non-first fragment has no ports, a
 * cut header no flags) does not hold. The cheap ones are here; the destination prefix
 * and the length are in the rule's struct dt_rule_cond, read only by a candidate
 * whose flags ask for them.
 */
#define DT_MATCH_TCP_FLAGS (1u << 0) /* (TCP flags & tcp_mask) == tcp_value; syn = true is SYN,!ACK */
#define DT_MATCH_PORTS     (1u << 1) /* destination port in [dport_lo, dport_hi] */
#define DT_MATCH_SPORT     (1u << 2) /* source port in [sport_lo, sport_hi] */
#define DT_MATCH_ICMP_TYPE (1u << 3) /* ICMP or ICMPv6 type == icmp_type */
#define DT_MATCH_ICMP_CODE (1u << 4) /* ICMP or ICMPv6 code == icmp_code */
#define DT_MATCH_DST       (1u << 5) /* destination in the rule's dt_rule_cond prefix */
#define DT_MATCH_LEN       (1u << 6) /* frame length in the rule's dt_rule_cond range */
#define DT_MATCH_COND      (DT_MATCH_DST | DT_MATCH_LEN) /* read the rule's dt_rule_cond */
/* TCP flag bits (byte 13 of the TCP header), for tcp_mask and tcp_value. */
#define DT_TCP_FIN 0x01
#define DT_TCP_SYN 0x02
#define DT_TCP_RST 0x04
#define DT_TCP_PSH 0x08
#define DT_TCP_ACK 0x10
#define DT_TCP_URG 0x20
#define DT_TCP_ECE 0x40
#define DT_TCP_CWR 0x80
struct dt_rule_match {
	__u16 rule;
	__u8 proto;  /* 0: any; else the L4 protocol number */
	__u8 flags;  /* DT_MATCH_* */
	__u16 dport_lo;
	__u16 dport_hi;
	__u16 sport_lo;
	__u16 sport_hi;
	__u8 tcp_mask;   /* DT_MATCH_TCP_FLAGS */
	__u8 tcp_value;
	__u8 icmp_type;  /* DT_MATCH_ICMP_TYPE */
	__u8 icmp_code;  /* DT_MATCH_ICMP_CODE */
};

/* Value of the rules LPM trie: the first candidate whose conditions hold decides. */
struct dt_rule_set {
	__u32 count;
	__u32 needs;  /* the OR of the candidates' flags: what the prefix's rules look at
	               * (for bpftool and agent explain; the packet path reads each
	               * candidate's own flags) */
	struct dt_rule_match m[DT_MAX_CANDIDATES];
};

/*
 * A rule's conditions that do not fit a candidate (DT_MAP_RULE_COND, slot rule * 2 + bank,
 * banked like `policy`): the destination prefix as an address and a mask over the
 * 16-byte form (IPv4-mapped for IPv4, as dt_key), compared word by word, and the
 * frame length range: the frame as XDP sees it, Ethernet header and VLAN tags
 * included, which is what a byte budget charges (at tc: skb->len, GRO-merged).
 * len_hi 0xffffffff: no upper bound.
 */
struct dt_rule_cond {
	__u8 dst[16];       /* masked */
	__u8 dst_mask[16];
	__u32 len_lo;
	__u32 len_hi;
};

/* A rule's name (DT_MAP_RULE_NAMES, indexed by rule), for bpftool and agent stats. */
struct dt_rule_name {
	char name[48];
};

/* Per-rule counters (per-CPU array indexed by rule). */
struct dt_rule_stats {
	__u64 passed;
	__u64 dropped;
};

/* Per-rule bytes of byte rules (DT_POL_BYTES): frame bytes passed and dropped by their
 * buckets (per-CPU array indexed by rule; a map of its own so older pins still fit). */
struct dt_rule_bytes {
	__u64 passed;
	__u64 dropped;
};

/*
 * Global configuration, one element at key 0 of DT_MAP_CONFIG.
 * Policies are double-banked so that a rule's two 64-bit fields never reach a
 * packet half-written: the agent writes the inactive bank (slot rule*2 + !bank),
 * then flips `bank` with one aligned 32-bit store. See agent/dataplane/policy.cpp.
 */
struct dt_config {
	__u32 bank;  /* 0 or 1: which policy bank is live */
	__u32 epoch; /* current report period (cluster mode), from 1 */
	__u32 flags; /* DT_CFG_* */
	__u32 coarse_lag_ns; /* how far the coarse clock and jiffies may lag the precise
	                      * clock: twice the kernel's tick (set by the agent; 0: unknown),
	                      * see bpf/clock.h */
};
/* With DT_CFG_RULES, `bank` also selects the live rules trie (rules0 / rules1). */

/* dt_config.flags */
#define DT_CFG_REPORT (1u << 0) /* announce newly active sources in `active` */
#define DT_CFG_EXEMPT (1u << 1) /* consult `cluster_exempt` (the cluster's TCP ports) */
#define DT_CFG_RULES  (1u << 2) /* match rules in the live rules trie; else rule 0 */
#define DT_CFG_COARSE_CLOCK (1u << 3) /* bpf_ktime_get_coarse_ns (one tick of lag) */
#define DT_CFG_DRY_RUN (1u << 4) /* --dry-run: bans and the deny list count would-drops, drop nothing */
#define DT_CFG_SYN_COOKIES (1u << 5) /* a live rule has DT_POL_SYN_COOKIES: check handshakes' ACKs */

/*
 * Global counters, one per-CPU element at key 0 of DT_MAP_STATS: one line each, in the
 * order of struct dt_stats (the map's value, so a new counter goes last and bumps the
 * layout of `stats`, see maps_catalog.h). Every reader lists them from here: the
 * per-CPU sum, `agent stats` (text and JSON), /metrics and the daemon's log line.
 *   X(field, label, metric, help)
 *   label   its name in `agent stats` and the log ("": listed in neither);
 *   metric  its own Prometheus counter ("": none of its own: passed and dropped are
 *           dthrottle_packets_total{verdict}, allowed and denied
 *           dthrottle_action_packets_total{action}, debit_hits is a cluster metric);
 *   help    what it counts (the metric's HELP text).
 */
#define DT_STATS_FIELDS(X) \
	X(passed, "passed", "", "Packets admitted by a bucket.") \
	X(dropped, "dropped", "", "Packets dropped for lack of tokens.") \
	X(new_sources, "new sources", "dthrottle_new_sources_total", "Buckets created (new sources).") \
	X(parse_errors, "malformed", "dthrottle_malformed_packets_total", \
	  "Truncated or malformed headers, passed without a bucket.") \
	X(non_ip, "non-IP", "dthrottle_non_ip_packets_total", \
	  "Non-IP frames (ARP, LLDP, ...), passed without a bucket.") \
	X(fail_open, "fail-open", "dthrottle_fail_open_packets_total", \
	  "Packets passed without a decision (no policy, or no bucket).") \
	X(contended, "contended", "dthrottle_contended_packets_total", \
	  "Packets dropped because their bucket's compare-and-swap kept losing races (not in packets_total).") \
	X(debit_hits, "debited hits", "", "Peer hits debited by the debit program.") \
	X(nd_exempt, "IPv6 ND", "dthrottle_nd_packets_total", \
	  "IPv6 neighbour discovery packets, passed without a bucket.") \
	X(exempt, "exempt", "dthrottle_exempt_packets_total", "Segments of the cluster's own TCP connections (cluster_exempt), passed.") \
	X(report_overflow, "", "dthrottle_report_ring_overflows_total", \
	  "Active-source announcements lost to a full ring buffer (the packet path retries them).") \
	X(allowed, "allowed", "", "Packets passed by an allow rule.") \
	X(denied, "denied", "", "Packets dropped by a deny rule.") \
	X(ban_dropped, "banned", "dthrottle_ban_dropped_packets_total", "Packets dropped by a ban (agent ban).") \
	X(ban_would_drop, "ban would-drop", "dthrottle_ban_would_drop_packets_total", \
	  "Packets a ban would have dropped, passed in dry run (--dry-run).") \
	X(ban_expired, "ban expired", "dthrottle_ban_expired_packets_total", \
	  "Packets from an address whose ban has expired but is not swept yet, passed.") \
	X(cookie_sent, "cookies sent", "dthrottle_syncookies_sent_total", \
	  "SYNs a prefix budget refused, answered with a SYN cookie (syn_cookies).") \
	X(cookie_would_send, "cookies would-send", "dthrottle_syncookies_would_send_total", \
	  "SYNs a rule in dry run would have answered with a SYN cookie.") \
	X(cookie_ack_valid, "cookie ACKs valid", "dthrottle_syncookie_acks_valid_total", \
	  "Handshake ACKs whose SYN cookie checked out: their source is verified.") \
	X(cookie_ack_invalid, "cookie ACKs invalid", "dthrottle_syncookie_acks_invalid_total", \
	  "ACKs of unverified sources without a valid SYN cookie while cookies were being sent (passed on).") \
	X(verified_hits, "verified hits", "dthrottle_verified_hits_total", \
	  "Packets of verified sources that skipped a rule's prefix budgets.")

struct dt_stats {
#define DT_STATS_MEMBER(field, label, metric, help) __u64 field;
	DT_STATS_FIELDS(DT_STATS_MEMBER)
#undef DT_STATS_MEMBER
};

/*
 * Drops not yet added to their bucket: DT_DROP_SLOTS per CPU (a per-CPU array
 * DT_MAP_DROP_PENDING, the slot chosen by a hash of the key), so that a source
 * flooding every CPU costs each CPU no write to the shared bucket per packet.
 * A slot belongs to one bucket key while it holds counts (packets > 0). A drop of
 * that key adds to it; after DT_DROP_FLUSH_PACKETS packets, or once the slot is
 * DT_DROP_FLUSH_NS old, its counts go into the bucket with one atomic add each.
 * A drop of another key whose slot is held adds to its bucket directly (as before
 * this map), unless the holder is DT_DROP_FLUSH_NS old: then the holder's counts
 * go to its bucket and the slot changes hands. Readers add every CPU's pending
 * counts to the bucket of the same key: exact when nothing is being dropped; while
 * a flush is under way a reading may miss up to DT_DROP_FLUSH_PACKETS packets of
 * a slot for a moment. A map of its own, so older pins still fit.
 */
struct dt_drop_pending {
	struct dt_key key;   /* the bucket these counts belong to (packets > 0) */
	__u32 packets;       /* drops held, in packets (the flush threshold) */
	__u64 dropped;       /* to add to the bucket's dropped (packets, or bytes) */
	__u64 would_drop;    /* to add to its would_drop (dry run) */
	__u64 since_ns;      /* when the slot took its first held drop */
};

/*
 * Where a CPU's clock bound counts jiffies from (bpf/clock.h): the precise time `ns`
 * read just after jiffies was `jiffies`. Per CPU (map clock_anchor, not pinned: a
 * cache, valid for the boot), written by the packet path of its CPU only.
 */
struct dt_clock_anchor {
	__u64 jiffies;
	__u64 ns;       /* 0: no anchor yet */
};
/* An anchor older than this many ticks is taken again (one precise read per CPU every
 * 256 ticks at most: 0.26-2.6 s), so no error of the bound can build up. */
#define DT_ANCHOR_MAX_TICKS 256u

/*
 * Bans (agent ban, bpf/bans.bpf.h, docs/bans.md): an address or prefix dropped until
 * `expires_ns` (CLOCK_MONOTONIC, bpf_ktime_get_ns), checked right after the cluster's own
 * traffic. Keys: struct dt_ban_key4 in DT_MAP_BANS_V4 (an IPv4 packet looks up its
 * address, not the mapped form), struct dt_lpm_key in DT_MAP_BANS_V6. The value names
 * a slot (0 .. DT_MAX_BANS-1) that is the ban's key in DT_MAP_BAN_INFO (what, why, who:
 * never read by the programs) and DT_MAP_BAN_COUNTS (its packets, per CPU: the drop path
 * writes nothing shared). An expired ban passes the packet (counted ban_expired) until
 * the agent sweeps it. Written by the agent only (agent/bans/ban_store.h), whole elements.
 */
#define DT_MAX_BANS 65536u
#define DT_BAN_REASON_LEN 96
#define DT_BAN_ORIGIN_LEN 64
#define DT_BAN_WHO_LEN 64
struct dt_ban_key4 {
	__u32 prefixlen;  /* 0..32 */
	__u8 addr[4];
};
struct dt_ban {
	__u64 expires_ns;  /* CLOCK_MONOTONIC; the ban holds while now < expires_ns */
	__u32 slot;        /* its key in ban_info and ban_counts */
	__u32 pad;
};
struct dt_ban_counts {
	__u64 dropped;     /* packets dropped by the ban */
	__u64 would_drop;  /* packets it would have dropped (DT_CFG_DRY_RUN) */
};
struct dt_ban_info {
	__u8 addr[16];           /* IPv4-mapped for an IPv4 ban, as dt_key */
	__u8 prefixlen;          /* within its family: 0..32 or 0..128 */
	__u8 is_v6;
	__u8 remote;             /* 1: learned from a peer (never re-announced by this host) */
	__u8 pad[5];
	__u64 expires_ns;        /* as the trie's value */
	__u64 set_unix_ms;       /* when it was set (at its origin) */
	char reason[DT_BAN_REASON_LEN];
	char origin[DT_BAN_ORIGIN_LEN];  /* "local", "crowdsec", "query", or a peer's node id */
	char who[DT_BAN_WHO_LEN];        /* who set it: "uid 0 (agent ban)", ... */
};

/*
 * SYN cookies (syn_cookies = true, bpf/syncookie.bpf.h, docs/rules.md). A source whose
 * handshake ACK carried a valid cookie is verified: an element of the LRU hash map
 * DT_MAP_VERIFIED (sized by --max-verified) until `expires_ns` (CLOCK_MONOTONIC). Its key
 * is a struct dt_key: the source address in dt_key's form, `rule` the family
 * (DT_VERIFIED_V4 or DT_VERIFIED_V6), so an IPv6 ::ffff:a.b.c.d is not the IPv4 a.b.c.d.
 * One element of DT_MAP_SYNCOOKIE holds the TTL (written by the agent at start) and
 * when a cookie was last sent (the packet path, at most once per DT_COOKIE_SENT_SLACK_NS):
 * ACKs are checked for cookies only within DT_COOKIE_ACK_WINDOW_NS of it.
 */
#define DT_VERIFIED_V4 4u
#define DT_VERIFIED_V6 6u
#define DT_DEFAULT_VERIFIED_TTL_NS (600ull * 1000000000ull)
#define DT_COOKIE_SENT_SLACK_NS 1000000ull            /* 1 ms */
#define DT_COOKIE_ACK_WINDOW_NS (5ull * 1000000000ull) /* 5 s */
struct dt_verified {
	__u64 expires_ns;  /* CLOCK_MONOTONIC; verified while now < expires_ns */
	__u64 hits;        /* packets that skipped a prefix budget thanks to it */
};
struct dt_syncookie {
	__u64 verified_ttl_ns;  /* how long a verified source stays so (the agent's --verified-ttl) */
	__u64 last_sent_ns;     /* when a cookie was last sent (0: never) */
};

/* One entry of a debit batch (DT_MAP_DEBIT_BATCH). */
struct dt_debit {
	struct dt_key key; /* key.rule: the rule whose policy applies */
	__u32 hits;        /* hits to debit */
};

/*
 * Sources admitted for the first time in report period `epoch` (bpf/announce.h):
 * each CPU gathers them in its element of the per-CPU map `active_stage`, and writes
 * the whole element to the `active` ring as one record once it holds DT_STAGE_KEYS
 * (or, with keys of an older period, before its next announcement). The agent reads
 * the ring's records and, at a period's end, what the CPUs still hold (keys[0..count)).
 */
struct dt_active_stage {
	__u32 epoch;  /* the period of the keys held */
	__u32 count;  /* keys held: keys[0 .. count) */
	struct dt_key keys[DT_STAGE_KEYS];
};

/* One entry of a collect batch (DT_MAP_COLLECT_BATCH): in, the source; out, the
 * admitted packets not yet reported (0 if the bucket is gone). */
struct dt_collect {
	struct dt_key key;
	__u32 pad;
	__u64 hits;
};

/* Context passed to the debit program through BPF_PROG_RUN (ctx_in/ctx_out). */
struct dt_debit_ctx {
	__u32 count;    /* in: entries 0..count-1 of the batch are valid */
	__u32 applied;  /* out: entries applied */
	__u32 failed;   /* out: entries not applied (bucket could not be created,
	                   or the CAS kept losing); the agent retries them */
	__u32 pad;
};

/* The layouts the kernel and the agent share, checked once for both languages. */
#ifdef __cplusplus
#define DT_LAYOUT_ASSERT(type, size) static_assert(sizeof(struct type) == (size), #type " layout")
#else
#define DT_LAYOUT_ASSERT(type, size) _Static_assert(sizeof(struct type) == (size), #type " layout")
#endif
DT_LAYOUT_ASSERT(dt_key, 20);
DT_LAYOUT_ASSERT(dt_exempt_key, 20);
DT_LAYOUT_ASSERT(dt_cluster_ports, 16384);
DT_LAYOUT_ASSERT(dt_bucket, 64);
DT_LAYOUT_ASSERT(dt_policy, 24);
DT_LAYOUT_ASSERT(dt_lpm_key, 20);
DT_LAYOUT_ASSERT(dt_rule_match, 16);
DT_LAYOUT_ASSERT(dt_rule_set, 8 + 16 * DT_MAX_CANDIDATES);
DT_LAYOUT_ASSERT(dt_rule_cond, 40);
DT_LAYOUT_ASSERT(dt_stats, 168);
DT_LAYOUT_ASSERT(dt_verified, 16);
DT_LAYOUT_ASSERT(dt_syncookie, 16);
DT_LAYOUT_ASSERT(dt_ban_key4, 8);
DT_LAYOUT_ASSERT(dt_ban, 16);
DT_LAYOUT_ASSERT(dt_ban_counts, 16);
DT_LAYOUT_ASSERT(dt_ban_info, 40 + DT_BAN_REASON_LEN + DT_BAN_ORIGIN_LEN + DT_BAN_WHO_LEN);
DT_LAYOUT_ASSERT(dt_debit, 24);
DT_LAYOUT_ASSERT(dt_debit_ctx, 16);
DT_LAYOUT_ASSERT(dt_config, 16);
DT_LAYOUT_ASSERT(dt_rule_bytes, 16);
DT_LAYOUT_ASSERT(dt_collect, 32);
DT_LAYOUT_ASSERT(dt_active_stage, 8 + 20 * DT_STAGE_KEYS);
DT_LAYOUT_ASSERT(dt_drop_pending, 48);
DT_LAYOUT_ASSERT(dt_prefix_policy, 200);
#undef DT_LAYOUT_ASSERT

#endif /* DTHROTTLE_COMMON_H */
