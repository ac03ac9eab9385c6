// capture_session.cpp - the capture loop: the ring's records into the pcap file.
#include "capture/capture_session.h"

#include <bpf/libbpf.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>

#include "bans/ban_types.h"
#include "capture/capture_control.h"
#include "capture/pcap_writer.h"
#include "common/clock.h"
#include "common/program_name.h"
#include "dataplane/map_reader.h"

namespace dt {
namespace {

volatile sig_atomic_t g_stop = 0;
void on_stop_signal(int) { g_stop = 1; }

// SIGINT and SIGTERM end the capture (the poll returns; the file is closed whole).
void catch_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

// CLOCK_REALTIME - CLOCK_MONOTONIC, to stamp records (monotonic) with wall-clock time.
uint64_t realtime_offset_ns() {
  timespec rt{};
  clock_gettime(CLOCK_REALTIME, &rt);
  const uint64_t mono = mono_now_ns();
  return static_cast<uint64_t>(rt.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(rt.tv_nsec) - mono;
}

const char *verdict_word(uint8_t v) {
  switch (v) {
    case DT_CAP_DROPPED: return "dropped";
    case DT_CAP_WOULD_DROP: return "would-drop";
    default: return "passed";
  }
}

// The rule id --rule NAME names, or false with a sentence in *err.
bool resolve_rule(const std::string &name, int names_fd, uint16_t *id, std::string *err) {
  const std::map<std::string, uint16_t> special = {
      {"@ban", DT_CAP_RULE_BAN}, {"@deny-list", DT_CAP_RULE_DENY_LIST}, {"@allow-list", DT_CAP_RULE_ALLOW_LIST}};
  if (auto it = special.find(name); it != special.end()) return *id = it->second, true;
  std::string known;
  for (uint32_t r = 0; r < DT_MAX_RULES; r++) {
    const std::string n = read_rule_name(names_fd, r);
    if (n == name || (r == DT_RULE_DEFAULT && n.empty() && name == "default"))
      return *id = static_cast<uint16_t>(r), true;
    if (!n.empty()) known += (known.empty() ? "" : ", ") + n;
  }
  *err = "no rule is named '" + name + "' in the running rules (" + (known.empty() ? "none is named" : known) +
         "; or @ban, @deny-list, @allow-list)";
  return false;
}

// The kernel's filter for the options: false with a sentence in *err.
bool make_filter(const CaptureOptions &o, int names_fd, CaptureFilter *f, std::string *err) {
  f->verdicts = o.verdicts;
  f->snaplen = static_cast<uint16_t>(o.snaplen);
  f->per_cpu_rate = o.per_cpu_rate;
  if (!o.rule.empty()) {
    f->has_rule = true;
    if (!resolve_rule(o.rule, names_fd, &f->rule, err)) return false;
  }
  if (!o.source.empty()) {
    f->has_source = true;
    std::string why;
    if (!parse_ban_prefix(o.source, &f->source, &why)) return *err = "--source: " + why, false;
  }
  return true;
}

// One capture in progress: what the ring callback needs.
struct Session {
  const CaptureOptions *opt = nullptr;
  CaptureControl *control = nullptr;
  PcapWriter writer;
  uint64_t offset_ns = 0;  // realtime - monotonic
  uint64_t written = 0, stale = 0;
  std::map<uint16_t, std::string> labels;  // rule id -> label, read once
  std::string error;                       // a write error: the capture stops

  const std::string &label(uint16_t rule) {
    auto it = labels.find(rule);
    if (it == labels.end())
      it = labels
               .emplace(rule,
                        capture_rule_label(rule, rule < DT_MAX_RULES ? read_rule_name(control->names_fd(), rule) : ""))
               .first;
    return it->second;
  }
};

int on_record(void *ctx, void *data, size_t size) {
  auto *s = static_cast<Session *>(ctx);
  if (size < sizeof(dt_capture_rec) - DT_CAPTURE_MAX_SNAPLEN || !s->error.empty()) return 0;
  const auto *rec = static_cast<const dt_capture_rec *>(data);
  if (rec->ts_ns < s->control->armed_at_ns()) return ++s->stale, 0;  // an earlier capture's
  if (s->written >= s->opt->count) return 0;
  const uint32_t cap = std::min<uint32_t>(rec->cap_len, DT_CAPTURE_MAX_SNAPLEN);
  const std::string comment = capture_comment(rec->verdict, s->label(rec->rule), rec->hook, rec->cpu);
  if (!s->writer.write(rec->ts_ns + s->offset_ns, rec->data, cap, rec->len, comment, &s->error)) return -1;
  s->written++;
  return 0;
}

// Polls the ring until --count, --duration or a signal; renews the lease every second.
bool capture_loop(Session *s, ring_buffer *ring, std::string *err) {
  const uint64_t start = mono_now_ns();
  uint64_t next_renew = start + 1'000'000'000ull;
  while (!g_stop && s->written < s->opt->count) {
    const int n = ring_buffer__poll(ring, 100);
    if (!s->error.empty()) return *err = s->error, false;
    if (n < 0 && n != -EINTR) return *err = std::string("reading the capture ring: ") + strerror(-n), false;
    const uint64_t now = mono_now_ns();
    if (s->opt->duration_ns && now - start >= s->opt->duration_ns) break;
    if (now >= next_renew) {
      if (!s->control->renew(err)) return false;
      next_renew = now + 1'000'000'000ull;
    }
  }
  return true;
}

// Drops what an earlier capture left in the ring (read before arming: nothing new comes in).
int discard_record(void *, void *, size_t) { return 0; }

}  // namespace

std::string capture_rule_label(uint16_t rule, const std::string &name) {
  switch (rule) {
    case DT_CAP_RULE_BAN: return "@ban";
    case DT_CAP_RULE_DENY_LIST: return "@deny-list";
    case DT_CAP_RULE_ALLOW_LIST: return "@allow-list";
    case DT_CAP_RULE_NONE: return "@none";
    default: break;
  }
  if (!name.empty()) return name;
  return rule == DT_RULE_DEFAULT ? "default" : "#" + std::to_string(rule);
}

std::string capture_comment(uint8_t verdict, const std::string &rule_label, uint8_t hook, uint16_t cpu) {
  return std::string("verdict=") + verdict_word(verdict) + " rule=" + rule_label +
         " hook=" + (hook == DT_CAP_HOOK_TC ? "tc" : "xdp") + " cpu=" + std::to_string(cpu);
}

int run_capture(const CaptureOptions &o) {
  const std::string cmd = command_name("capture");
  auto fail = [&](const std::string &e) { return fprintf(stderr, "%s: %s\n", cmd.c_str(), e.c_str()), 1; };
  CaptureControl control;
  CaptureFilter filter;
  std::string err;
  if (!control.open(o.pin_dir, &err) || !make_filter(o, control.names_fd(), &filter, &err)) return fail(err);
  ring_buffer *stale = ring_buffer__new(control.ring_fd(), discard_record, nullptr, nullptr);
  if (stale) ring_buffer__consume(stale), ring_buffer__free(stale);
  Session s;
  s.opt = &o;
  s.control = &control;
  s.offset_ns = realtime_offset_ns();
  if (!s.writer.open(o.output, o.format, o.snaplen, o.iface, &err)) return fail(err);
  ring_buffer *ring = ring_buffer__new(control.ring_fd(), on_record, &s, nullptr);
  if (!ring) return fail(std::string("cannot read the capture ring: ") + strerror(errno));
  catch_stop_signals();
  bool ok = control.arm(filter, &err) && capture_loop(&s, ring, &err);
  control.disarm();
  if (ok) ring_buffer__consume(ring);  // what was sampled before the lease ended
  ring_buffer__free(ring);
  if (!s.writer.close(ok ? &err : &s.error) && ok) ok = false;
  if (!ok) return fail(err);
  CaptureCounts counts;
  read_capture_counts(control.cpu_fd(), &counts);
  fprintf(stderr,
          "%s: %llu packets written to %s (sampler since its pins were made: %llu captured, %llu sampled out, %llu "
          "lost to a full ring)\n",
          cmd.c_str(), static_cast<unsigned long long>(s.written),
          o.output == "-" ? "standard output" : o.output.c_str(), static_cast<unsigned long long>(counts.captured),
          static_cast<unsigned long long>(counts.sampled_out), static_cast<unsigned long long>(counts.ring_full));
  return 0;
}

}  // namespace dt
