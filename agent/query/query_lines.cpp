// query_lines.cpp - the query server's line protocol (query_server.h): a read's lines
// split into tag queries (answered in one TagTable::answer_batch) and lines answered in
// place, and the answers written back in line order.
#include <charconv>

#include "query/query_loop.h"

namespace dt {
namespace {

constexpr std::string_view kErrEmpty = "ERR empty tag\n";
constexpr std::string_view kErrTooLong = "ERR tag too long\n";
constexpr std::string_view kErrNul = "ERR nul byte\n";

// The tag a line asks about, and whether it is a reservation.
std::string_view line_tag(std::string_view line, bool *reserve) {
  *reserve = line.starts_with(kReserve);
  return *reserve ? line.substr(kReserve.size()) : line;
}

}  // namespace

void QueryServer::Loop::answer(Conn &conn, std::string_view buf, uint64_t now) {
  Tally tally;
  const Fatal fatal = take_lines(conn, buf, now, &tally);
  if (!queries.empty()) {
    table.answer_batch(queries, now, cfg.max_reserve_wait_ns, redis ? StrictMode::Defer : StrictMode::Local);
    c.batches++;
    if (redis) answer_strict(now);
  }
  write_answers(conn, &tally);
  if (pending_sub) {  // EVENTS: from now on the connection streams events
    conn.sub = std::move(pending_sub);
    subscribers.push_back(conn.fd);
  }
  c.ok += tally.ok;
  c.no += tally.no;
  c.wait += tally.wait;
  c.err_empty += tally.empties;
  c.busy_taken += tally.busy_taken;
  c.busy_unknown += tally.busy_unknown;
  if (fatal != Fatal::None) refuse_input(conn, fatal, now);
}

QueryServer::Loop::Fatal QueryServer::Loop::take_lines(Conn &conn, std::string_view buf, uint64_t now, Tally *tally) {
  queries.clear();
  side_before.clear();
  size_t pos = 0;
  while (pos < buf.size()) {
    const size_t nl = buf.find('\n', pos);
    if (nl == std::string_view::npos) break;
    const std::string_view line = buf.substr(pos, nl - pos);
    pos = nl + 1;
    if (const Fatal fatal = take_line(conn, line, now, tally); fatal != Fatal::None) return fatal;
  }
  if (pos < buf.size()) {
    // An incomplete line already too long for any tag is refused now, not buffered.
    bool reserve;
    const std::string_view rest = buf.substr(pos);
    if (line_tag(rest, &reserve).size() > kMaxTagLen) return Fatal::TooLong;
    conn.partial.assign(rest);
  }
  return Fatal::None;
}

// One complete line: an admin command or an empty line answered in place, or a query.
QueryServer::Loop::Fatal QueryServer::Loop::take_line(const Conn &conn, std::string_view line, uint64_t now,
                                                      Tally *tally) {
  if (take_admin_command(conn, line, now, tally)) return Fatal::None;
  bool reserve;
  const std::string_view tag = line_tag(line, &reserve);
  if (tag.size() > kMaxTagLen) return Fatal::TooLong;
  if (line.find('\0') != std::string_view::npos) return Fatal::Nul;
  if (tag.empty()) {
    side_before.push_back({queries.size(), std::string(kErrEmpty)});
    tally->empties++;
    return Fatal::None;
  }
  queries.push_back({tag, reserve});
  return Fatal::None;
}

void QueryServer::Loop::write_answers(Conn &conn, Tally *tally) {
  size_t e = 0;
  for (size_t q = 0; q <= queries.size(); q++) {
    for (; e < side_before.size() && side_before[e].first == q; e++) conn.out += side_before[e].second;
    if (q == queries.size()) break;
    switch (queries[q].answer) {
      case TagAnswer::Ok:
        conn.out += "OK\n";
        tally->ok++;
        break;
      case TagAnswer::No:
        conn.out += "NO\n";
        tally->no++;
        break;
      case TagAnswer::Wait: {
        char num[24];
        const uint64_t ms = (queries[q].wait_ns + 999'999) / 1'000'000;  // never early
        auto r = std::to_chars(num, num + sizeof num, ms);
        conn.out += "WAIT ";
        conn.out.append(num, r.ptr);
        conn.out += '\n';
        tally->wait++;
        break;
      }
    }
  }
}

void QueryServer::Loop::refuse_input(Conn &conn, Fatal fatal, uint64_t now) {
  if (fatal == Fatal::TooLong) {
    conn.out += kErrTooLong;
    c.err_too_long++;
  } else if (fatal == Fatal::Nul) {
    conn.out += kErrNul;
    c.err_nul++;
  }
  uint64_t suppressed = 0;
  if (input_log.allow(now, &suppressed))
    DT_DEBUG("query socket: closing a connection after %s (%llu similar messages suppressed)",
             fatal == Fatal::Nul ? "a NUL byte" : "a tag over 1024 bytes", static_cast<unsigned long long>(suppressed));
  begin_closing(conn, now);
}

}  // namespace dt
