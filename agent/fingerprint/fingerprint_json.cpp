// fingerprint_json.cpp - agent fingerprint --json: the samples, each field's dominant
// values, the fingerprint and its rule as one document.
#include "common/json.h"
#include "fingerprint/fingerprint_session.h"

namespace dt {
namespace {

Json fields_json(const std::vector<Sample> &samples, size_t top) {
  Json out = Json::array();
  for (const FieldReport &r : field_reports(samples, top)) {
    Json values = Json::array();
    for (const ValueShare &v : r.top)
      values.push_back({{"value", v.value},
                        {"dropped", v.dropped},
                        {"ordinary", v.ordinary},
                        {"dropped_share", printed_number("%.6g", v.dropped_share)},
                        {"ordinary_share", printed_number("%.6g", v.ordinary_share)}});
    out.push_back({{"field", field_name(r.field)}, {"values", std::move(values)}});
  }
  return out;
}

Json fingerprint_json(const Fingerprint &fp, const std::string &name) {
  if (fp.conditions.empty()) return nullptr;
  Json conditions = Json::array();
  for (const Condition &c : fp.conditions) conditions.push_back(condition_text(c));
  return {{"family", fp.v6 ? "ipv6" : "ipv4"},
          {"conditions", std::move(conditions)},
          {"dropped", fp.dropped},
          {"dropped_total", fp.dropped_total},
          {"ordinary", fp.ordinary},
          {"ordinary_total", fp.ordinary_total},
          {"rule", fingerprint_rule(fp, name)}};
}

}  // namespace

std::string render_fingerprint_json(const std::vector<Sample> &samples, uint64_t skipped,
                                    const FingerprintOptions &opt) {
  uint64_t dropped = 0, passed = 0, ordinary = 0;
  for (const Sample &s : samples) dropped += s.dropped, passed += !s.dropped, ordinary += s.ordinary;
  Json j = {{"samples", dropped + passed},
            {"dropped", dropped},
            {"passed", passed},
            {"ordinary", ordinary},
            {"skipped", skipped}};
  j["fields"] = dropped ? fields_json(samples, opt.top) : Json::array();
  j["fingerprint"] =
      dropped ? fingerprint_json(find_fingerprint(samples, FingerprintParams{}), opt.name) : Json(nullptr);
  return dump_json(j) + "\n";
}

}  // namespace dt
