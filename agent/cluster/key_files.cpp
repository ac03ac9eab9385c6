// key_files.cpp - reading and writing the .key and .pub files (key_files.h).
#include "cluster/key_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include "common/endpoint.h"
#include "common/files.h"
#include "common/line_file.h"
#include "common/program_name.h"
#include "common/report_types.h"

namespace dt {
namespace {

bool valid_z85_key(const std::string &k) {
  if (k.size() != 40) return false;
  uint8_t raw[32];
  return zmq_z85_decode(raw, k.c_str()) != nullptr;
}

// NAME of DIR/NAME.key or DIR/NAME.pub.
std::string file_stem(const std::string &path) {
  std::string base = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
  const size_t dot = base.rfind('.');
  return dot == std::string::npos || dot == 0 ? base : base.substr(0, dot);
}

// One value of a key file, checked by its key.
bool check_value(const std::string &k, const std::string &v, std::string *err) {
  if ((k == "public" || k == "secret" || k == "sign") && !valid_z85_key(v))
    return *err = "'" + k + "' is not a 40-character Z85 key", false;
  if (k == "node_id" && !valid_node_id(v))
    return *err = "node_id '" + v + "' must be 1 to 64 characters of A-Z a-z 0-9 . _ : -", false;
  if (k == "role" && v != "node" && v != "hub") return *err = "role '" + v + "' must be node or hub", false;
  return true;
}

// The `key = value` lines of a file whose keys are in `allowed` (each at most once).
bool read_lines(const std::string &path, const std::set<std::string> &allowed, std::map<std::string, std::string> *out,
                std::string *err) {
  std::string text;
  ReadFailure failed;
  if (!read_text_file(path, &text, &failed)) return *err = "cannot read " + path + ": " + failed.reason, false;
  std::string expected;
  for (const auto &k : allowed) expected += (expected.empty() ? "'" : ", '") + k + " = ...'";
  for (const FileLine &line : content_lines(text, Comments::WholeLine)) {
    const std::string where = path + ":" + std::to_string(line.number) + ": ";
    const auto [k, v, has_value] = split_key_value(line.text);
    if (!has_value || !allowed.count(k)) return *err = where + "expected " + expected, false;
    if (out->count(k)) return *err = where + "'" + k + "' a second time", false;
    if (!check_value(k, v, err)) return *err = where + *err, false;
    (*out)[k] = v;
  }
  return true;
}

// Refuses a path that is a symlink (or anything but a regular file): keygen replaces files,
// it never writes through one.
bool check_replaceable(const std::string &path, std::string *err) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return true;
  *err = "will not write " + path + ": it is " + (S_ISLNK(st.st_mode) ? "a symlink" : "not a regular file") +
         " (keygen never writes through one): remove it, or write the keys elsewhere (--dir)";
  return false;
}

// Writes `text` into a new file beside `path` (mkostemp: O_EXCL, created 0600), sets `mode`,
// syncs it and renames it over `path`: whatever was at `path` (a file of another mode, a hard
// link to someone else's file) is replaced, never written into.
bool write_file_nofollow(const std::string &path, const std::string &text, mode_t mode, std::string *err) {
  if (!check_replaceable(path, err)) return false;
  std::string tmp = path + ".XXXXXX";
  const int fd = mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) return *err = "cannot write " + path + ": cannot create a file beside it: " + strerror(errno), false;
  bool ok = fchmod(fd, mode) == 0;
  for (size_t done = 0; ok && done < text.size();) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  ok = ok && fsync(fd) == 0;
  int saved = errno;
  if (close(fd) != 0 && ok) ok = false, saved = errno;
  if (ok && rename(tmp.c_str(), path.c_str()) != 0) ok = false, saved = errno;
  if (!ok) {
    unlink(tmp.c_str());
    *err = "cannot write " + path + ": " + strerror(saved);
  }
  return ok;
}

}  // namespace

const char *key_role_name(KeyRole r) { return r == KeyRole::Hub ? "hub" : "node"; }

std::string old_key_file_error(const std::string &path, const char *missing) {
  const std::string name = file_stem(path);
  return path + " has no " + missing + " (an older keygen wrote it): regenerate it with '" + command_name("keygen") +
         " " + name + " --from " + name + ".key' where " + name +
         ".key is (it keeps the key pair), then copy the new " + name + ".pub to the other members";
}

bool read_key_pair_file(const std::string &path, KeyPairFile *out, std::string *err, bool any_version) {
  std::map<std::string, std::string> v;
  // Read with the .pub's keys too, to tell a .pub given for a .key by its missing secret.
  if (!read_lines(path, {"public", "secret", "node_id", "sign", "role", "endpoint"}, &v, err)) return false;
  if (!v.count("public")) return *err = path + ": no 'public = KEY' line", false;
  if (!v.count("secret"))
    return *err = path + ": no 'secret = KEY' line (is this the .pub file? --curve-key takes the .key file)", false;
  for (const char *k : {"sign", "role", "endpoint"})
    if (v.count(k)) return *err = path + ": '" + k + "' belongs in the .pub file, not in the .key", false;
  if (!v.count("node_id") && !any_version) return *err = old_key_file_error(path, "'node_id' line"), false;
  *out = KeyPairFile{v["public"], v["secret"], v["node_id"]};
  return true;
}

bool read_public_file(const std::string &path, CurvePeer *out, std::string *err, bool any_version) {
  // Whoever may write a .pub may put its own key in a member's place.
  if (!check_trusted_path(path, "a member's public key file", false, err)) return false;
  std::map<std::string, std::string> v;
  if (!read_lines(path, {"public", "sign", "node_id", "role", "endpoint"}, &v, err)) return false;
  if (!v.count("public")) return *err = path + ": no 'public = KEY' line", false;
  if (!any_version && (!v.count("sign") || !v.count("node_id")))
    return *err = old_key_file_error(path, "'sign' and 'node_id' lines"), false;
  CurvePeer p;
  p.public_key = v["public"];
  p.sign_key = v["sign"];
  p.node_id = v["node_id"];
  p.role = v["role"] == "hub" ? KeyRole::Hub : KeyRole::Node;
  p.file = path;
  if (v.count("endpoint") && !normalize_endpoint(v["endpoint"], false, &p.endpoint, err))
    return *err = path + ": endpoint: " + *err, false;
  *out = std::move(p);
  return true;
}

bool read_curve_peers(const std::string &dir, std::vector<CurvePeer> *out, std::string *err) {
  DIR *d = opendir(dir.c_str());
  if (!d) return *err = "cannot read --curve-peers directory " + dir + ": " + strerror(errno), false;
  std::vector<std::string> names;
  while (dirent *e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() >= 5 && name.compare(name.size() - 4, 4, ".pub") == 0) names.push_back(name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());  // the same error whatever the directory order
  std::vector<CurvePeer> peers;
  for (const auto &name : names) {
    CurvePeer p;
    if (!read_public_file(dir + "/" + name, &p, err)) return false;
    for (const auto &q : peers) {
      const bool same_keys = q.public_key == p.public_key && q.sign_key == p.sign_key;
      if (q.node_id == p.node_id && !same_keys)
        return *err = q.file + " and " + p.file + " both speak for node " + p.node_id +
                      " with different keys: remove the one that is not that node's",
               false;
      if (q.public_key == p.public_key && q.node_id != p.node_id)
        return *err = q.file + " and " + p.file + " hold the same key for nodes " + q.node_id + " and " + p.node_id +
                      ": one key speaks for one node; remove the wrong one",
               false;
    }
    peers.push_back(std::move(p));
  }
  if (peers.empty())
    return *err = "--curve-peers directory " + dir + " holds no *.pub files: no peer could connect", false;
  out->insert(out->end(), peers.begin(), peers.end());
  return true;
}

bool check_secret_key_mode(const std::string &path, std::string *err) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return *err = "cannot read " + path + ": " + strerror(errno), false;
  if (!S_ISREG(st.st_mode))
    return *err = path + " is not a regular file: --curve-key takes the .key file agent keygen wrote", false;
  if ((st.st_mode & 077) == 0) return check_trusted_path(path, "a secret key", true, err);  // its owner
  char mode[8];
  snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  *err = path + " is a secret key but its group or others may " + ((st.st_mode & 044) ? "read" : "write") +
         " it (mode " + mode + "): whoever reads it can speak for its node; make it private with: chmod 600 " + path;
  return false;
}

bool write_key_pair_file(const std::string &path, const KeyPairFile &key, std::string *err) {
  const std::string text = "# dthrottle key pair of node " + key.node_id +
                           ": keep it secret (--curve-key); it also derives the node's report signing key\n"
                           "public = " +
                           key.public_key + "\nsecret = " + key.secret_key + "\nnode_id = " + key.node_id + "\n";
  return write_file_nofollow(path, text, 0600, err);
}

bool write_public_file(const std::string &path, const CurvePeer &pub, std::string *err) {
  std::string text = "# dthrottle public keys of node " + pub.node_id +
                     ": copy into every member's --curve-peers DIR\n"
                     "public = " +
                     pub.public_key + "\nsign = " + pub.sign_key + "\nnode_id = " + pub.node_id +
                     "\nrole = " + key_role_name(pub.role) + "\n";
  if (!pub.endpoint.empty())
    text += "endpoint = " + pub.endpoint.substr(pub.endpoint.rfind("tcp://", 0) == 0 ? 6 : 0) + "\n";
  return write_file_nofollow(path, text, 0644, err);
}

}  // namespace dt
