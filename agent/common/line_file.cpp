// line_file.cpp - see line_file.h.
#include "common/line_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>

namespace dt {

std::string trim(const std::string &s) {
  const char *blanks = " \t\r\n";
  const size_t a = s.find_first_not_of(blanks);
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(blanks) - a + 1);
}

std::string strip_comment(const std::string &line) {
  for (size_t i = 0; i < line.size(); i++)
    if (line[i] == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) return line.substr(0, i);
  return line;
}

std::vector<FileLine> content_lines(const std::string &text, Comments comments) {
  std::vector<FileLine> out;
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); number++) {
    std::string content = trim(comments == Comments::AfterBlank ? strip_comment(line) : line);
    if (content.empty() || (comments == Comments::WholeLine && content[0] == '#')) continue;
    out.push_back({number, std::move(content)});
  }
  return out;
}

KeyValue split_key_value(const std::string &line) {
  const size_t eq = line.find('=');
  if (eq == std::string::npos) return {trim(line), "", false};
  return {trim(line.substr(0, eq)), trim(line.substr(eq + 1)), true};
}

bool read_text_file(const std::string &path, std::string *text, ReadFailure *failure) {
  FILE *f = fopen(path.c_str(), "re");
  if (!f) {
    *failure = {"open", strerror(errno)};
    return false;
  }
  text->clear();
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) text->append(buf, n);
  const int read_errno = ferror(f) ? errno : 0;
  fclose(f);
  if (read_errno) *failure = {"read", strerror(read_errno)};
  return read_errno == 0;
}

}  // namespace dt
