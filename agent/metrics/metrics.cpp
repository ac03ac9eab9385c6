// metrics.cpp - the metrics HTTP server (cpp-httplib): GET /metrics reads the maps and
// renders them with the latest snapshot (metrics_render.cpp); nothing else is served.
#include "metrics/metrics.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>

#include "bans/ban_store.h"
#include "common/clock.h"
#include "common/log.h"
#include "dataplane/list_maps.h"
#include "dataplane/map_reader.h"
#include "dataplane/policy.h"

namespace dt {
namespace {

constexpr uint64_t kSourceCountMaxAgeNs = 1'000'000'000ull;  // a table walk at most once a second
constexpr size_t kWorkers = 2;     // scrapes are rare; more threads would only add table walks
constexpr size_t kMaxPending = 8;  // connections queued or served by the workers

// cpp-httplib's ThreadPool queues every accepted connection, each holding a descriptor,
// and its enqueue() cannot refuse one: this queue takes at most kMaxPending, and beyond
// that the accepting thread serves the connection itself. It accepts nothing meanwhile, so
// further clients wait in the kernel's listen backlog, which holds no descriptor of the
// agent's: the metrics server never holds more than kMaxPending + 2 of them (the listener
// and the one served in place), however many connect.
class BoundedTaskQueue : public httplib::TaskQueue {
 public:
  explicit BoundedTaskQueue(std::atomic<uint64_t> *served_in_place) : pool_(kWorkers), in_place_(served_in_place) {}
  void enqueue(std::function<void()> fn) override {
    if (pending_.load() >= kMaxPending) {
      in_place_->fetch_add(1);
      fn();
      return;
    }
    pending_++;
    pool_.enqueue([this, fn = std::move(fn)] {
      fn();
      pending_--;
    });
  }
  void shutdown() override { pool_.shutdown(); }

 private:
  httplib::ThreadPool pool_;
  std::atomic<size_t> pending_{0};
  std::atomic<uint64_t> *in_place_;
};

// The server reads no request body. cpp-httplib 0.11.4 (Debian's) bounds a body only by
// its Content-Length: a chunked one is read whole into memory, on any path, before the
// routes run. The pre-routing handler runs after the request line and headers and before
// any body is read (Server::routing): anything but GET and HEAD is answered 405 there,
// and the connection closes after it (keep-alive max count 1: httplib sends
// "Connection: close" and reads nothing more, so a body left unread is never parsed as
// a request). The request line is bounded by httplib (8 KiB, else 414), and so is each
// header line (8 KiB); the number of header lines is not (see docs/security.md).
void refuse_bodies(httplib::Server &http) {
  http.set_pre_routing_handler([](const httplib::Request &req, httplib::Response &res) {
    if (req.method == "GET" || req.method == "HEAD") return httplib::Server::HandlerResponse::Unhandled;
    res.status = 405;
    res.set_header("Allow", "GET, HEAD");
    res.set_content("only GET and HEAD: the metrics server reads no request body\n", "text/plain; charset=utf-8");
    return httplib::Server::HandlerResponse::Handled;
  });
}

bool is_loopback_host(const std::string &host) {
  in_addr v4{};
  in6_addr v6{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  return inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

}  // namespace

// --- the server ---------------------------------------------------------------------

struct MetricsServer::Impl {
  std::string shown;  // ADDR:PORT as the user would write it
  bool loopback = true;
  std::atomic<uint64_t> served_in_place{0};  // BoundedTaskQueue: connections beyond kMaxPending
  MetricsInfo info;
  MapFds maps;
  httplib::Server http;
  std::thread thread;

  std::mutex snap_mu;  // guards snap (written by the event loop, read by scrapes)
  MetricsSnapshot snap;

  std::mutex maps_mu;  // guards the cached bucket count; one table walk at a time
  uint64_t counted_at_ns = 0;
  bool counted = false;
  uint64_t sources = 0, evictions = 0;
  EvictionEstimate eviction_estimate;
  std::unique_ptr<BanStore> bans;  // its own: its own lock file description (flock)

  static bool failed(const char *what, int neg_errno, std::string *out) {
    *out = std::string(what) + ": " + strerror(-neg_errno) + "\n";
    return false;
  }

  // The bans with their counts (none if they cannot be read: the rest is still served).
  void read_bans(MapView *m) {
    std::lock_guard<std::mutex> lock(maps_mu);
    std::string err;
    if (!bans && !info.pin_dir.empty()) bans = BanStore::open(info.pin_dir, &err);
    if (bans) bans->list(&m->bans, &err);
  }

  // Reads the maps and renders; false with a sentence in *out on a failed syscall.
  bool scrape(std::string *out) {
    MapView m;
    {
      std::lock_guard<std::mutex> lock(maps_mu);
      const uint64_t now = mono_now_ns();
      if (!counted || now - counted_at_ns >= kSourceCountMaxAgeNs) {
        // Created before present: a bucket created during the walk can only make
        // the estimate lower, never stick it too high.
        dt_stats before{};
        if (int rc = read_stats(maps.stats, &before); rc != 0) return failed("reading the stats map", rc, out);
        long n = for_each_bucket(maps.buckets, [](const dt_key &, const dt_bucket &) {});
        if (n < 0) return failed("walking the bucket table", static_cast<int>(n), out);
        sources = static_cast<uint64_t>(n);
        evictions = eviction_estimate.update(before.new_sources, sources);
        counted_at_ns = now;
        counted = true;
      }
      m.sources = sources;
      m.evictions = evictions;
    }
    if (int rc = read_stats(maps.stats, &m.stats); rc != 0) return failed("reading the stats map", rc, out);
    RuleCounterTable rules = read_rule_table(maps);
    m.rules = std::move(rules.named);
    m.would_drop = rules.would_drop;
    m.default_bytes = rules.rule0;
    for (const RuleCount &r : m.rules) {
      dt_policy p{};
      if (read_live_policy(maps.policy, maps.config, r.id, &p) == 0 && (p.flags & DT_POL_KEY_DEST))
        m.dest_rules.push_back(r.name);
    }
    sum_per_cpu(maps.list_stats, 0, &m.lists);
    sum_per_cpu(maps.capture_cpu, 0, &m.capture);
    for (uint32_t list = 0; list < DT_LISTS; list++) {
      const ListSize n = read_list_size(ListMapFds{maps.lists_v4, maps.lists_v6}, list);
      m.list_prefixes[list] = n.v4 + n.v6;
    }
    read_bans(&m);
    MetricsSnapshot s;
    {
      std::lock_guard<std::mutex> lock(snap_mu);
      s = snap;
    }
    s.metrics_served_in_place = served_in_place.load();
    *out = render_metrics(info, m, s, mono_now_ns());
    return true;
  }
};

MetricsServer::MetricsServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MetricsServer::~MetricsServer() {
  // A server bound but never served keeps its socket until the process exits
  // (cmd_run returns right after such a failure).
  impl_->http.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

std::unique_ptr<MetricsServer> MetricsServer::bind(const MetricsAddress &addr, std::string *err) {
  auto impl = std::make_unique<Impl>();
  impl->shown = addr.text();
  httplib::Server &http = impl->http;
  impl->loopback = is_loopback_host(addr.host);
  Impl *q = impl.get();
  http.new_task_queue = [q] { return new BoundedTaskQueue(&q->served_in_place); };
  // httplib's default is SO_REUSEPORT, which would let a second agent bind the same
  // port without an error and split the scrapes between them: SO_REUSEADDR only.
  http.set_socket_options([](socket_t sock) {
    int one = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  });
  http.set_payload_max_length(64 * 1024);
  refuse_bodies(http);
  // One request per connection (scrapes are seconds apart; refuse_bodies counts on it),
  // and short waits for a request: stop() cannot interrupt a worker waiting on an idle
  // connection, so these bound how long SIGTERM waits for the threads (httplib's default: 5 s).
  http.set_keep_alive_max_count(1);
  http.set_keep_alive_timeout(1);
  http.set_read_timeout(2);
  http.set_write_timeout(2);
  Impl *p = impl.get();
  http.Get("/metrics", [p](const httplib::Request &, httplib::Response &res) {
    std::string body;
    if (p->scrape(&body)) {
      res.set_content(body, "text/plain; version=0.0.4; charset=utf-8");
    } else {
      res.status = 500;
      res.set_content(body, "text/plain; charset=utf-8");
    }
  });
  errno = 0;
  if (!http.bind_to_port(addr.host, addr.port)) {
    int e = errno;
    *err = "--metrics: cannot listen on " + impl->shown + ": " +
           (e == EADDRINUSE      ? std::string("the port is already in use")
            : e == EADDRNOTAVAIL ? std::string("the address is not one of this host's")
            : e                  ? std::string(strerror(e))
                                 : std::string("bind failed"));
    return nullptr;
  }
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(impl)));
}

void MetricsServer::serve(const MetricsInfo &info, const MapFds &maps) {
  Impl *p = impl_.get();
  p->info = info;
  p->maps = maps;
  p->thread = std::thread([p] { p->http.listen_after_bind(); });
  // stop() does nothing until the accept loop runs: wait for it, so the destructor stops it.
  for (int i = 0; i < 2000 && !p->http.is_running(); i++) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  DT_INFO("metrics: Prometheus text on http://%s/metrics", p->shown.c_str());
  if (!p->loopback)
    DT_WARN(
        "metrics: %s is not a loopback address (as --metrics asked): anyone who reaches it reads the "
        "counters, peer node ids and rule names, without authentication",
        p->shown.c_str());
}

void MetricsServer::publish(const MetricsSnapshot &snap) {
  std::lock_guard<std::mutex> lock(impl_->snap_mu);
  impl_->snap = snap;
}

}  // namespace dt
