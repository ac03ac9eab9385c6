// rules_diff.cpp - rewriting rate/burst lines of [[rule]] blocks, and the unified diff.
#include "suggest/rules_diff.h"

#include <algorithm>
#include <cstdio>
#include <regex>
#include <sstream>

namespace dt {
namespace {

std::vector<std::string> split_lines(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The comment ending a `key = value` line ("  # ..."), outside quoted strings; "" for none.
std::string trailing_comment(const std::string &line) {
  bool quoted = false;
  for (size_t i = 0; i < line.size(); i++) {
    if (line[i] == '"') quoted = !quoted;
    if (line[i] == '#' && !quoted) {
      size_t from = i;
      while (from > 0 && (line[from - 1] == ' ' || line[from - 1] == '\t')) from--;
      return line.substr(from);
    }
  }
  return "";
}

// `line` (a `key = value` line) with a new value, its indentation and comment kept.
std::string with_value(const std::string &line, const std::string &key, const std::string &value) {
  const std::string indent = line.substr(0, line.find_first_not_of(" \t"));
  return indent + key + " = " + value + trailing_comment(line);
}

const RuleEdit *edit_named(const std::vector<RuleEdit> &edits, const std::string &name) {
  for (const RuleEdit &e : edits)
    if (e.rule == name) return &e;
  return nullptr;
}

// Where one [[rule]] block lies and its lines of interest (npos: absent).
struct Block {
  size_t begin = 0, end = 0;
  std::string name;
  size_t rate = std::string::npos, burst = std::string::npos;
  size_t limits = std::string::npos, limits_end = std::string::npos;  // prefix_limits: its first and last line
};

// The last line of a `key = [...]` value starting at lines[from] (the line where its
// brackets close, strings and comments skipped; the last line if they never do).
size_t array_end(const std::vector<std::string> &lines, size_t from) {
  int depth = 0;
  for (size_t i = from; i < lines.size(); i++) {
    bool quoted = false;
    for (size_t c = 0; c < lines[i].size(); c++) {
      const char ch = lines[i][c];
      if (ch == '"') quoted = !quoted;
      if (quoted) continue;
      if (ch == '#') break;
      depth += ch == '[' ? 1 : ch == ']' ? -1 : 0;
    }
    if (depth <= 0) return i;
  }
  return lines.size() - 1;
}

std::vector<Block> rule_blocks(const std::vector<std::string> &lines) {
  static const std::regex header(R"(^\s*\[.*)"), rule_header(R"(^\s*\[\[\s*rule\s*\]\].*)");
  static const std::regex name(R"re(^\s*name\s*=\s*"([^"]*)".*)re"), rate(R"(^\s*rate\s*=.*)"),
      burst(R"(^\s*burst\s*=.*)");
  static const std::regex limits(R"(^\s*prefix_limits\s*=.*)");
  std::vector<Block> out;
  Block *cur = nullptr;
  for (size_t i = 0; i < lines.size(); i++) {
    std::smatch m;
    if (std::regex_match(lines[i], header)) {
      if (cur) cur->end = i;
      cur = nullptr;
      if (std::regex_match(lines[i], rule_header))
        cur = &out.emplace_back(
            Block{i, lines.size(), "", std::string::npos, std::string::npos, std::string::npos, std::string::npos});
    } else if (cur && std::regex_match(lines[i], m, name)) {
      cur->name = m[1];
    } else if (cur && std::regex_match(lines[i], rate)) {
      cur->rate = i;
    } else if (cur && std::regex_match(lines[i], burst)) {
      cur->burst = i;
    } else if (cur && std::regex_match(lines[i], limits)) {
      cur->limits = i;
      i = cur->limits_end = array_end(lines, i);
    }
  }
  return out;
}

}  // namespace

std::string rate_text(double rate) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.6g", rate);
  return buf;
}

std::string prefix_limit_text(bool v6, unsigned bits, double rate, uint64_t burst) {
  return std::string(v6 ? "v6/" : "v4/") + std::to_string(bits) + "=" + rate_text(rate) +
         "/s,burst=" + std::to_string(burst);
}

namespace {

std::string limits_line(const std::string &indent, const std::vector<std::string> &limits) {
  std::string out = indent + "prefix_limits = [";
  for (size_t i = 0; i < limits.size(); i++) out += (i ? ", \"" : "\"") + limits[i] + "\"";
  return out + "]";
}

// The edit of one block: what replaces its rate, burst and prefix_limits lines.
void edit_block(const std::vector<std::string> &lines, const Block &b, const RuleEdit &e,
                std::vector<std::vector<DiffLine>> *replaced) {
  auto &r = *replaced;
  const std::string indent = lines[b.rate].substr(0, lines[b.rate].find_first_not_of(" \t"));
  const std::string burst = std::to_string(e.burst);
  r[b.rate] = {{DiffLine::Kind::Del, lines[b.rate]},
               {DiffLine::Kind::Add, with_value(lines[b.rate], "rate", rate_text(e.rate))}};
  size_t after_burst = b.rate;
  if (b.burst != std::string::npos) {
    r[b.burst] = {{DiffLine::Kind::Del, lines[b.burst]},
                  {DiffLine::Kind::Add, with_value(lines[b.burst], "burst", burst)}};
    after_burst = b.burst;
  } else {
    r[b.rate].push_back({DiffLine::Kind::Add, indent + "burst = " + burst});
  }
  if (e.prefix_limits.empty()) return;
  if (b.limits == std::string::npos)
    return r[after_burst].push_back({DiffLine::Kind::Add, limits_line(indent, e.prefix_limits)});
  for (size_t i = b.limits; i <= b.limits_end; i++) r[i] = {{DiffLine::Kind::Del, lines[i]}};
  const std::string old_indent = lines[b.limits].substr(0, lines[b.limits].find_first_not_of(" \t"));
  r[b.limits_end].push_back({DiffLine::Kind::Add, limits_line(old_indent, e.prefix_limits)});
}

}  // namespace

std::vector<DiffLine> edit_rules_text(const std::string &text, const std::vector<RuleEdit> &edits,
                                      std::vector<std::string> *skipped) {
  const std::vector<std::string> lines = split_lines(text);
  std::vector<std::vector<DiffLine>> replaced(lines.size());  // per old line: what replaces it (empty: kept)
  std::vector<std::string> done;
  for (const Block &b : rule_blocks(lines)) {
    const RuleEdit *e = edit_named(edits, b.name);
    if (!e || b.rate == std::string::npos) continue;
    edit_block(lines, b, *e, &replaced);
    done.push_back(b.name);
  }
  for (const RuleEdit &e : edits)
    if (std::find(done.begin(), done.end(), e.rule) == done.end() && skipped) skipped->push_back(e.rule);
  std::vector<DiffLine> out;
  for (size_t i = 0; i < lines.size(); i++) {
    if (replaced[i].empty()) out.push_back({DiffLine::Kind::Keep, lines[i]});
    for (DiffLine &d : replaced[i]) out.push_back(std::move(d));
  }
  return out;
}

namespace {

// "@@ -a,b +c,d @@" of lines [from, to) of the diff.
std::string hunk_header(const std::vector<DiffLine> &lines, size_t from, size_t to) {
  size_t old_at = 1, new_at = 1;
  for (size_t i = 0; i < from; i++) {
    if (lines[i].kind != DiffLine::Kind::Add) old_at++;
    if (lines[i].kind != DiffLine::Kind::Del) new_at++;
  }
  size_t old_n = 0, new_n = 0;
  for (size_t i = from; i < to; i++) {
    if (lines[i].kind != DiffLine::Kind::Add) old_n++;
    if (lines[i].kind != DiffLine::Kind::Del) new_n++;
  }
  char buf[96];
  snprintf(buf, sizeof buf, "@@ -%zu,%zu +%zu,%zu @@\n", old_n ? old_at : old_at - 1, old_n,
           new_n ? new_at : new_at - 1, new_n);
  return buf;
}

}  // namespace

std::string unified_diff(const std::vector<DiffLine> &lines, const std::string &path) {
  constexpr size_t kContext = 3;
  std::string out;
  size_t i = 0;
  while (i < lines.size()) {
    if (lines[i].kind == DiffLine::Kind::Keep) {
      i++;
      continue;
    }
    // A hunk: from kContext lines before this change to kContext lines after the last
    // change that is within 2 x kContext kept lines of the previous one.
    const size_t from = i >= kContext ? i - kContext : 0;
    size_t last = i;
    for (size_t j = i; j < lines.size() && j <= last + 2 * kContext; j++)
      if (lines[j].kind != DiffLine::Kind::Keep) last = j;
    const size_t to = std::min(lines.size(), last + 1 + kContext);
    if (out.empty()) out = "--- " + path + "\n+++ " + path + "\n";
    out += hunk_header(lines, from, to);
    for (size_t j = from; j < to; j++)
      out += (lines[j].kind == DiffLine::Kind::Keep  ? " "
              : lines[j].kind == DiffLine::Kind::Del ? "-"
                                                     : "+") +
             lines[j].text + "\n";
    i = to;
  }
  return out;
}

}  // namespace dt
