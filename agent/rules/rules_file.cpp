// rules_file.cpp - reading a rules file: its TOML document, its version, its tables.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "rules/rules_toml.h"

namespace dt {
namespace {

// The TOML document, or false with the first line of the parser's complaint.
bool parse_toml(const RuleSet &rs, const std::string &text, Value *root, std::string *err) {
  try {
    std::istringstream in(text);
    *root = toml::parse(in, rs.origin);
  } catch (const toml::syntax_error &e) {
    std::string first = e.what();
    first = first.substr(0, first.find('\n'));
    if (first.rfind("[error] ", 0) == 0) first = first.substr(8);
    *err = file_line(rs, static_cast<int>(e.location().line())) + "TOML syntax: " + first;
    return false;
  } catch (const std::exception &e) {
    *err = rs.origin + ": " + e.what();
    return false;
  }
  return true;
}

// Top-level `key = "PATH"` (allow_file, deny_file): a relative path is taken from the
// rules file's folder, so that a rules file and its lists move together.
bool list_path(const RuleSet &rs, const Value &root, const char *key, std::string *out, std::string *err) {
  out->clear();
  if (!root.contains(key)) return true;
  const Value &v = root.at(key);
  if (!v.is_string() || v.as_string().str.empty()) {
    *err = file_line(rs, static_cast<int>(v.location().line())) + "'" + key + "' must be a file name in quotes, e.g. " +
           key + " = \"lists/" + (key[0] == 'a' ? "allow" : "deny") + ".netset\" (relative to the rules file's folder)";
    return false;
  }
  const std::string path = v.as_string().str;
  const size_t slash = rs.origin.rfind('/');
  *out = path[0] == '/' || slash == std::string::npos ? path : rs.origin.substr(0, slash + 1) + path;
  return true;
}

}  // namespace

bool parse_rules(const std::string &text, const std::string &origin, RuleSet *out, std::string *err) {
  RuleSet rs = *out;
  rs.origin = origin;
  rs.rules.resize(1);  // keep the default rule only
  rs.tags.clear();
  Value root;
  if (!parse_toml(rs, text, &root, err)) return false;
  if (!known_keys(rs, root, {"version", "rule", "tag", "allow_file", "deny_file"}, "the file", err)) return false;
  if (!root.contains("version") || !root.at("version").is_integer() || root.at("version").as_integer() != 1) {
    const int line = root.contains("version") ? static_cast<int>(root.at("version").location().line()) : 1;
    *err = file_line(rs, line) + "the file needs 'version = 1' (the rules format version)";
    return false;
  }
  try {
    if (!parse_rule_tables(rs, root, err) || !parse_tag_tables(rs, root, err)) return false;
    if (!list_path(rs, root, "allow_file", &rs.allow_file, err) ||
        !list_path(rs, root, "deny_file", &rs.deny_file, err))
      return false;
  } catch (const std::exception &e) {
    std::string first = e.what();
    *err = origin + ": " + first.substr(0, first.find('\n'));
    return false;
  }
  *out = std::move(rs);
  return true;
}

bool load_rules_file(const std::string &path, RuleSet *out, std::string *err) {
  std::ifstream in(path);
  if (!in) {
    *err = "cannot read rules file " + path + ": " + strerror(errno);
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_rules(ss.str(), path, out, err);
}

}  // namespace dt
