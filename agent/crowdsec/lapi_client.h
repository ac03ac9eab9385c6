// lapi_client.h - the HTTP side of the bouncer: one GET of the CrowdSec Local API's decision
// stream, bounded in time and size (cpp-httplib).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace dt {

// --lapi: "http://HOST:PORT" or "https://HOST[:PORT]", with an optional path prefix (a LAPI
// behind a reverse proxy). scheme_host_port for httplib, path_prefix without a trailing '/'.
struct LapiUrl {
  std::string scheme_host_port;
  std::string path_prefix;
  // https only: the CA certificates that verify the LAPI's (PEM; "": the system's), and
  // the bouncer's own certificate and key for a LAPI that asks for one (both or neither).
  std::string ca_file, cert_file, key_file;
};
bool parse_lapi_url(const std::string &url, LapiUrl *out, std::string *err);

// True if the URL's scheme is https.
bool lapi_url_is_https(const LapiUrl &url);

// True if the URL's host is this host's loopback: localhost, 127.0.0.0/8 or ::1 (a name
// other than localhost could resolve anywhere: false).
bool lapi_url_is_loopback(const LapiUrl &url);

// Whether the TLS settings can be used (https only): the files readable, the certificate
// and key loaded by OpenSSL. False with a sentence naming the file and the flag.
bool lapi_tls_usable(const LapiUrl &url, std::string *err);

struct LapiLimits {
  size_t max_body_bytes = 64u << 20;  // a bigger answer is refused (and the pull retried)
  uint64_t connect_timeout_ns = 5'000'000'000;
  uint64_t read_timeout_ns = 30'000'000'000;
};

// What one pull got: the body of a 200, else why there is none.
struct LapiAnswer {
  bool ok = false;
  std::string body;   // ok: the stream's JSON
  std::string error;  // !ok: "connection refused", "HTTP 403: access forbidden", ...
};

class LapiClient {
 public:
  // keep_going: asked while a body arrives; false abandons the pull (a stop signal).
  LapiClient(const LapiUrl &url, std::string api_key, LapiLimits limits, std::function<bool()> keep_going);
  ~LapiClient();

  // GET {prefix}/v1/decisions/stream?startup=true|false&scopes=ip,range with X-Api-Key.
  LapiAnswer pull(bool startup);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dt
