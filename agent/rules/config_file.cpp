// config_file.cpp - reading `--config FILE` into flags (format: config_file.h).
#include "rules/config_file.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "common/line_file.h"
#include "common/program_name.h"

namespace dt {
namespace {

size_t edit_distance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); j++) row[j] = j;
  for (size_t i = 1; i <= a.size(); i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); j++) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

// "unknown setting 'rat' (did you mean 'rate'?)", the hint only for a close name.
std::string unknown_setting(const std::string &name, const option *longopts) {
  std::string msg = "unknown setting '" + name + "'";
  if (name[0] == '-') {
    const size_t b = name.find_first_not_of('-');
    return msg + " (write settings without the dashes: '" + (b == std::string::npos ? "" : name.substr(b)) + "')";
  }
  const char *best = nullptr;
  size_t best_d = 3;  // at most two typos, and fewer than the name has letters
  for (const option *o = longopts; o->name; o++) {
    if (!strcmp(o->name, "help") || !strcmp(o->name, "config")) continue;
    size_t d = edit_distance(name, o->name);
    if (d < best_d && d < name.size()) best = o->name, best_d = d;
  }
  return best ? msg + " (did you mean '" + best + "'?)" : msg + " (see " + program_name() + " --help for the settings)";
}

// "a , b,c" -> "a,b,c": list items may be spaced out in a file.
std::string join_list(const std::string &v) {
  std::string out;
  size_t start = 0;
  while (true) {
    size_t comma = v.find(',', start);
    out += trim(v.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return out;
    out += ',';
    start = comma + 1;
  }
}

bool parse_switch(const std::string &v, bool *on) {
  static const char *kTrue[] = {"true", "yes", "on", "1"}, *kFalse[] = {"false", "no", "off", "0"};
  for (const char *t : kTrue)
    if (v == t) return *on = true, true;
  for (const char *f : kFalse)
    if (v == f) return *on = false, true;
  return false;
}

}  // namespace

bool parse_config_text(const std::string &text, const std::string &path, const option *longopts,
                       const std::vector<std::string> &lists, std::vector<ConfigSetting> *out, std::string *err) {
  std::map<std::string, int> seen;  // setting -> line it was set on
  for (const FileLine &line : content_lines(text, Comments::AfterBlank)) {
    const int line_no = line.number;
    auto fail = [&](const std::string &msg) {
      *err = path + ":" + std::to_string(line_no) + ": " + msg;
      return false;
    };

    auto [name, value, has_value] = split_key_value(line.text);
    if (name.empty()) return fail("expected 'setting = value'");
    if (name == "config") return fail("'config' cannot be set in a config file (one file per agent)");
    const option *opt = nullptr;
    for (const option *o = longopts; o->name && !opt; o++)
      if (name == o->name && name != "help") opt = o;
    if (!opt) return fail(unknown_setting(name, longopts));

    const bool is_list = std::find(lists.begin(), lists.end(), name) != lists.end();
    if (auto it = seen.find(name); it != seen.end() && !is_list)
      return fail("'" + name + "' is already set on line " + std::to_string(it->second));
    seen[name] = line_no;

    if (opt->has_arg == no_argument) {
      bool on = true;
      if (has_value && !parse_switch(value, &on))
        return fail("'" + name + "' is a switch: expected true or false, not '" + value + "'");
      if (on) out->push_back({opt->val, "--" + name, line_no});
      continue;
    }
    if (!has_value) return fail("'" + name + "' needs a value: " + name + " = VALUE");
    if (value.empty()) return fail("'" + name + "' has no value");
    if (is_list) value = join_list(value);
    out->push_back({opt->val, "--" + name + "=" + value, line_no});
  }
  return true;
}

bool load_config_file(const std::string &path, const option *longopts, const std::vector<std::string> &lists,
                      std::vector<ConfigSetting> *out, std::string *err) {
  std::string text;
  ReadFailure failed;
  if (!read_text_file(path, &text, &failed))
    return *err = std::string("cannot ") + failed.step + " config file " + path + ": " + failed.reason, false;
  return parse_config_text(text, path, longopts, lists, out, err);
}

char **ArgvList::argv() {
  ptrs_.clear();
  for (auto &a : args_) ptrs_.push_back(a.data());
  ptrs_.push_back(nullptr);
  return ptrs_.data();
}

}  // namespace dt
