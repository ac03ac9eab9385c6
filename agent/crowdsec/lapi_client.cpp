// lapi_client.cpp - GET /v1/decisions/stream with cpp-httplib: the key in X-Api-Key, the
// body read into a bounded buffer, every failure turned into one line for the log.
#include "crowdsec/lapi_client.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

namespace dt {
namespace {

// The start of an error body ({"message":"access forbidden"}), printable, for the log.
std::string body_excerpt(const std::string &body) {
  std::string out = body.substr(0, 120);
  for (char &c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  return out;
}

// httplib's error in words for the log (its own names are terse: "Connection").
std::string error_text(httplib::Error e, const std::string &where) {
  switch (e) {
    case httplib::Error::Connection: return "cannot connect to " + where + " (is crowdsec's LAPI running there?)";
    case httplib::Error::ConnectionTimeout: return "no connection to " + where + " in time";
    case httplib::Error::Read: return "no complete answer from " + where + " (connection closed or read timeout)";
    case httplib::Error::Write: return "cannot send the request to " + where;
    case httplib::Error::SSLConnection: return "TLS handshake with " + where + " failed";
    case httplib::Error::SSLServerVerification: return where + "'s certificate is not trusted";
    default: return "request to " + where + " failed (" + httplib::to_string(e) + ")";
  }
}

}  // namespace

bool parse_lapi_url(const std::string &url, LapiUrl *out, std::string *err) {
  const size_t scheme_end = url.find("://");
  const std::string scheme = scheme_end == std::string::npos ? "" : url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https")
    return *err = "'" + url + "' is not an http:// or https:// URL (e.g. http://127.0.0.1:8080)", false;
  const size_t host_start = scheme_end + 3, path_start = url.find('/', host_start);
  const std::string host =
      url.substr(host_start, path_start == std::string::npos ? std::string::npos : path_start - host_start);
  if (host.empty() || host.find_first_of("?#@ ") != std::string::npos)
    return *err = "'" + url + "' has no host (e.g. http://127.0.0.1:8080)", false;
  std::string path = path_start == std::string::npos ? "" : url.substr(path_start);
  if (path.find_first_of("?# ") != std::string::npos)
    return *err = "'" + url + "': give the LAPI's base URL, without a query", false;
  while (!path.empty() && path.back() == '/') path.pop_back();
  out->scheme_host_port = scheme + "://" + host;
  out->path_prefix = path;
  return true;
}

bool lapi_url_is_https(const LapiUrl &url) { return url.scheme_host_port.rfind("https://", 0) == 0; }

bool lapi_url_is_loopback(const LapiUrl &url) {
  std::string host = url.scheme_host_port.substr(url.scheme_host_port.find("://") + 3);
  if (!host.empty() && host.front() == '[') {
    host = host.substr(1, host.find(']') - 1);
  } else if (host.find(':') != std::string::npos) {
    host = host.substr(0, host.find(':'));
  }
  in_addr v4{};
  in6_addr v6{};
  if (host == "localhost") return true;
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  return inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

bool lapi_tls_usable(const LapiUrl &url, std::string *err) {
  const std::pair<const std::string *, const char *> files[] = {
      {&url.ca_file, "--ca-file"}, {&url.cert_file, "--cert"}, {&url.key_file, "--key"}};
  for (const auto &[path, flag] : files)
    if (!path->empty() && access(path->c_str(), R_OK) != 0)
      return *err = std::string(flag) + ": cannot read " + *path + ": " + strerror(errno), false;
  httplib::Client probe(url.scheme_host_port, url.cert_file, url.key_file);
  if (!probe.is_valid())
    return *err = "--cert " + url.cert_file + " and --key " + url.key_file +
                  ": OpenSSL cannot load them as a PEM certificate and its private key",
           false;
  return true;
}

struct LapiClient::Impl {
  httplib::Client client;
  std::string where, path_prefix;  // where: scheme://host:port, for messages
  httplib::Headers headers;
  LapiLimits limits;
  std::function<bool()> keep_going;

  Impl(const LapiUrl &url, std::string key, LapiLimits limits_, std::function<bool()> keep_going_)
      : client(url.scheme_host_port, url.cert_file, url.key_file),
        where(url.scheme_host_port),
        path_prefix(url.path_prefix),
        limits(limits_),
        keep_going(std::move(keep_going_)) {
    headers = {{"X-Api-Key", std::move(key)}, {"User-Agent", "dthrottle-crowdsec/" DTHROTTLE_VERSION}};
    client.set_connection_timeout(std::chrono::nanoseconds(limits.connect_timeout_ns));
    client.set_read_timeout(std::chrono::nanoseconds(limits.read_timeout_ns));
    client.set_keep_alive(true);  // one connection for every poll while the LAPI keeps it
    if (!url.ca_file.empty()) client.set_ca_cert_path(url.ca_file);
  }
};

LapiClient::LapiClient(const LapiUrl &url, std::string api_key, LapiLimits limits, std::function<bool()> keep_going)
    : impl_(std::make_unique<Impl>(url, std::move(api_key), limits, std::move(keep_going))) {}

LapiClient::~LapiClient() = default;

LapiAnswer LapiClient::pull(bool startup) {
  Impl &s = *impl_;
  LapiAnswer answer;
  bool too_big = false, stopped = false;
  const std::string path =
      s.path_prefix + "/v1/decisions/stream?startup=" + (startup ? "true" : "false") + "&scopes=ip,range";
  auto result = s.client.Get(path, s.headers, [&](const char *data, size_t len) {
    if (s.keep_going && !s.keep_going()) return stopped = true, false;
    if (answer.body.size() + len > s.limits.max_body_bytes) return too_big = true, false;
    answer.body.append(data, len);
    return true;
  });
  if (too_big) {
    answer.error = "the answer is over " + std::to_string(s.limits.max_body_bytes >> 20) + " MiB";
  } else if (stopped) {
    answer.error = "stopped";
  } else if (!result) {
    answer.error = error_text(result.error(), s.where);
  } else if (result->status != 200) {
    answer.error = "HTTP " + std::to_string(result->status) + ": " + body_excerpt(answer.body);
    if (result->status == 403) answer.error += " (is the --key-file's key one that `cscli bouncers add` gave?)";
  } else {
    answer.ok = true;
    return answer;
  }
  answer.body.clear();
  return answer;
}

}  // namespace dt
