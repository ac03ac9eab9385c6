// line_file.h - reading the line files (--config, --peers-file, .key and .pub files).
//
// Each is read whole; its lines are trimmed, comment and empty lines dropped, each kept
// with its number for messages ("PATH:LINE: ..."), and `key = value` split.
#pragma once

#include <string>
#include <vector>

namespace dt {

// `s` without its leading and trailing blanks (space, tab, CR, LF).
std::string trim(const std::string &s);

// The line without its comment: '#' at the start or after a blank (so that a value
// may still contain '#', e.g. a path).
std::string strip_comment(const std::string &line);

// Where '#' starts a comment.
enum class Comments {
  AfterBlank,  // strip_comment: at the start of a line or after a blank
  WholeLine,   // only on a line whose first non-blank is '#' (values may hold '#': Z85 keys)
};

// A line that holds something: its number in the file (from 1) and its text, trimmed,
// without its comment.
struct FileLine {
  int number = 0;
  std::string text;
};

// The lines of `text` that hold something; blank and comment-only lines are left out.
std::vector<FileLine> content_lines(const std::string &text, Comments comments);

// A `key = value` line: both sides trimmed. No '=': the whole line is the key,
// has_value is false and value is empty.
struct KeyValue {
  std::string key, value;
  bool has_value = false;
};
KeyValue split_key_value(const std::string &line);

// Why a file could not be read: the step that failed ("open" or "read") and strerror's words.
struct ReadFailure {
  const char *step = "";
  std::string reason;
};

// The whole file at `path` in *text; false with *failure filled if it could not be
// opened or read.
bool read_text_file(const std::string &path, std::string *text, ReadFailure *failure);

}  // namespace dt
