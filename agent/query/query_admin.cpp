// query_admin.cpp - the query socket's admin commands (BUSY, and the daemon's BAN, UNBAN,
// ...): taken only from admin peers (query_server.h), answered in place between queries.
#include <unistd.h>

#include <algorithm>

#include "query/query_loop.h"

namespace dt {
namespace {

constexpr std::string_view kBusy = "BUSY";
constexpr std::string_view kEvents = "EVENTS";

}  // namespace

bool is_admin_uid(uid_t uid, const std::vector<uid_t> &admin_uids) {
  return uid == 0 || uid == geteuid() || std::find(admin_uids.begin(), admin_uids.end(), uid) != admin_uids.end();
}

bool QueryServer::Loop::take_admin_command(const Conn &conn, std::string_view line, uint64_t now, Tally *tally) {
  const AdminCommand *cmd = nullptr;
  std::string_view arg;
  if (!match_admin_command(line, &cmd, &arg)) return false;
  if (!conn.admin) {
    refuse_admin(conn, line, now);
    return true;
  }
  if (line.starts_with(kEvents)) {
    side_before.push_back({queries.size(), subscribe_events(arg)});
  } else if (!cmd) {  // BUSY: a busy signal for an adaptive rule
    const bool taken = cfg.busy && cfg.busy(arg, now);
    side_before.push_back({queries.size(), taken ? "OK\n" : "NO\n"});
    (taken ? tally->busy_taken : tally->busy_unknown)++;
  } else {
    side_before.push_back({queries.size(), cmd->run(arg, now, conn.peer_uid)});
  }
  return true;
}

// An admin command from a peer that is no admin: "ERR not allowed", counted and logged.
void QueryServer::Loop::refuse_admin(const Conn &conn, std::string_view line, uint64_t now) {
  side_before.push_back({queries.size(), std::string(kErrNotAllowed)});
  c.admin_refused++;
  const std::string verb(line.substr(0, line.find(' ')));
  if (conn.tcp)
    log_limited(admin_log, LogLevel::Warn, now,
                "query socket: refused %s from a TCP client: admin commands are taken on the unix "
                "socket only, from root, the agent's uid or --query-admin-uids",
                verb.c_str());
  else
    log_limited(admin_log, LogLevel::Warn, now, "query socket: refused %s from uid %u: not in --query-admin-uids",
                verb.c_str(), static_cast<unsigned>(conn.peer_uid));
}

bool QueryServer::Loop::match_admin_command(std::string_view line, const AdminCommand **cmd,
                                            std::string_view *arg) const {
  const size_t space = line.find(' ');
  if (space == std::string_view::npos) return false;
  const std::string_view verb = line.substr(0, space);
  *cmd = nullptr;
  bool known = verb == kBusy || verb == kEvents;
  for (size_t i = 0; !known && i < cfg.admin_commands.size(); i++)
    if (verb == cfg.admin_commands[i].verb) known = true, *cmd = &cfg.admin_commands[i];
  *arg = line.substr(space + 1);
  return known && !arg->empty() && arg->size() <= kMaxTagLen && line.find('\0') == std::string_view::npos;
}

std::string QueryServer::Loop::subscribe_events(std::string_view version) {
  if (!cfg.events || events_fd < 0) return "ERR no events on this agent\n";
  if (version != "1") return "ERR unknown events version (this agent speaks 1)\n";
  if (pending_sub) return "OK\n";
  const int fd = events_fd;
  pending_sub = cfg.events->subscribe([fd] {
    const uint64_t one = 1;
    if (write(fd, &one, sizeof one) < 0) {
    }  // a full counter wakes the thread all the same
  });
  return pending_sub ? "OK\n" : "ERR too many event subscribers\n";
}

// Each subscriber's waiting lines into its output and out to the socket; one cut off
// (it fell too far behind) or over the backlog bound is disconnected (flush, drop).
void QueryServer::Loop::deliver_events() {
  uint64_t n = 0;
  if (read(events_fd, &n, sizeof n) < 0) {
  }                                          // EAGAIN: a spurious wake-up
  const std::vector<int> fds = subscribers;  // drop() edits the list
  for (int fd : fds) {
    auto it = conns.find(fd);
    if (it == conns.end()) continue;
    Conn &conn = *it->second;
    if (!conn.sub->take(&conn.out)) {
      conn.slow = true;
      c.backlog++;
      drop(conn);
      continue;
    }
    if (!conn.out.empty()) flush(conn);
  }
}

}  // namespace dt
