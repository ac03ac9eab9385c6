// fingerprint_session.cpp - agent fingerprint: the capture in, the report out.
#include "fingerprint/fingerprint_session.h"

#include <sys/stat.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/appendf.h"
#include "common/program_name.h"

namespace dt {
namespace {

bool read_capture(const std::string &path, std::string *out, std::string *err) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return *err = "cannot read " + path + ": " + strerror(errno), false;
  if (!S_ISREG(st.st_mode)) return *err = path + " is not a regular file", false;
  if (static_cast<uint64_t>(st.st_size) > kFingerprintMaxFileBytes)
    return *err = path + " is over 1 GiB: capture fewer packets (agent capture --count)", false;
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) return *err = "cannot read " + path + ": " + strerror(errno), false;
  *out = text.str();
  return true;
}

void fields_table(std::string *out, const std::vector<Sample> &samples, size_t top) {
  appendf(out, "\n%-10s %-34s %9s %9s\n", "FIELD", "VALUE", "DROPPED", "ORDINARY");
  for (const FieldReport &r : field_reports(samples, top))
    for (const ValueShare &v : r.top)
      appendf(out, "%-10s %-34s %8.1f%% %8.1f%%\n", field_name(r.field), v.value.c_str(), 100 * v.dropped_share,
              100 * v.ordinary_share);
  appendf(out, "(the TTL is shown, but no rule condition reads it)\n");
}

double pct(uint64_t a, uint64_t b) { return b ? 100.0 * double(a) / double(b) : 0; }

}  // namespace

std::vector<Sample> samples_of(const std::vector<CapturedPacket> &packets, uint64_t *skipped) {
  std::vector<Sample> out;
  *skipped = 0;
  for (const CapturedPacket &p : packets) {
    const std::string verdict = comment_value(p.comment, "verdict");
    Sample s;
    if ((verdict != "dropped" && verdict != "would-drop" && verdict != "passed") ||
        !parse_fields(p.data, p.orig_len, &s.f)) {
      ++*skipped;
      continue;
    }
    s.dropped = verdict != "passed";
    out.push_back(s);
  }
  mark_ordinary(&out);
  return out;
}

std::string render_fingerprint(const std::vector<Sample> &samples, uint64_t skipped, const FingerprintOptions &opt) {
  uint64_t dropped = 0, passed = 0, ordinary = 0;
  for (const Sample &s : samples) dropped += s.dropped, passed += !s.dropped, ordinary += s.ordinary;
  std::string out;
  appendf(&out,
          "%" PRIu64 " samples: %" PRIu64 " dropped, %" PRIu64 " passed (%" PRIu64
          " ordinary: from sources with no dropped sample); %" PRIu64 " skipped (not IP, or no verdict)\n",
          dropped + passed, dropped, passed, ordinary, skipped);
  if (!dropped)
    return out + "no dropped samples: capture during the attack (agent capture --dropped --would-drop --passed)\n";
  if (!ordinary) appendf(&out, "no ordinary samples: capture with --passed too, to compare the attack with the rest\n");
  fields_table(&out, samples, opt.top);
  const Fingerprint fp = find_fingerprint(samples, FingerprintParams{});
  if (fp.conditions.empty()) return out + "\nno header value tells the dropped samples apart from the ordinary ones\n";
  std::string conds;
  for (const Condition &c : fp.conditions) conds += (conds.empty() ? "" : ", ") + condition_text(c);
  appendf(&out, "\nfingerprint (%s): %s\n", fp.v6 ? "IPv6" : "IPv4", conds.c_str());
  appendf(&out,
          "  matches %" PRIu64 " of %" PRIu64 " dropped samples (%.1f%%) and %" PRIu64 " of %" PRIu64
          " ordinary ones (%.1f%%)\n",
          fp.dropped, fp.dropped_total, pct(fp.dropped, fp.dropped_total), fp.ordinary, fp.ordinary_total,
          pct(fp.ordinary, fp.ordinary_total));
  return out + "\n# paste into the rules file, then agent reload (a deny rule in dry run):\n" +
         fingerprint_rule(fp, opt.name);
}

int run_fingerprint(const FingerprintOptions &opt) {
  const std::string me = command_name("fingerprint");
  std::string file, err;
  std::vector<CapturedPacket> packets;
  bool truncated = false;
  if (!read_capture(opt.input, &file, &err) || !read_pcapng(file, opt.max_packets, &packets, &truncated, &err))
    return fprintf(stderr, "%s: %s\n", me.c_str(), err.c_str()), 1;
  file.clear();
  if (truncated) fprintf(stderr, "%s: read the first %zu packets only (--max-packets)\n", me.c_str(), packets.size());
  uint64_t skipped = 0;
  const std::vector<Sample> samples = samples_of(packets, &skipped);
  const std::string out =
      opt.json ? render_fingerprint_json(samples, skipped, opt) : render_fingerprint(samples, skipped, opt);
  fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace dt
