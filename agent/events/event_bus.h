// event_bus.h - the agent's events (docs/events.md): each one a line of JSON, schema
// version 1, handed to the --on-event command's queue and to every EVENTS subscriber of
// the query socket. Thread-safe: events come from the event loop and the query thread.
//
// Bounds (everything a stranger can cause is bounded):
//   the command's queue   at most queue_max events wait for a child (command_runner.h);
//                         beyond it an event is dropped for the command (counted);
//   a subscriber          at most kSubscriberBufferBytes of lines it has not taken; beyond
//                         it the subscriber is cut off (counted; the query thread closes
//                         its connection), never waited for;
//   subscribers           at most max_subscribers at once (counted refusals);
//   an event              at most kMaxEventBytes of JSON (fields are bounded by their
//                         makers; a longer line is dropped, counted).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/json.h"

namespace dt {

inline constexpr int kEventSchemaVersion = 1;
inline constexpr size_t kMaxEventBytes = 16 * 1024;
inline constexpr size_t kSubscriberBufferBytes = 256 * 1024;
inline constexpr size_t kDefaultEventQueue = 256;
inline constexpr size_t kDefaultMaxSubscribers = 16;

// The event types of schema version 1 (docs/events.md).
inline constexpr const char *kEventBan = "ban";
inline constexpr const char *kEventUnban = "unban";
inline constexpr const char *kEventAttackStarted = "attack_started";
inline constexpr const char *kEventAttackEnded = "attack_ended";
inline constexpr const char *kEventPeerDown = "peer_down";
inline constexpr const char *kEventPeerUp = "peer_up";
inline constexpr const char *kEventEscalation = "escalation";

/*
 * The counters, declared once: the struct, the status file and /metrics are made from it.
 *   X(field, name, help)
 */
#define DT_EVENT_COUNTERS(X) \
  X(emitted, "emitted", "events made") \
  X(oversized, "oversized", "events over 16 KiB of JSON, dropped") \
  X(command_queued, "command_queued", "events queued for the --on-event command") \
  X(command_dropped, "command_dropped", "events dropped: the --on-event queue was full") \
  X(command_ok, "command_ok", "--on-event children that exited 0") \
  X(command_failed, "command_failed", "--on-event children that exited non-zero or by a signal") \
  X(command_spawn_errors, "command_spawn_errors", "--on-event children that could not be started") \
  X(command_timeouts, "command_timeouts", "--on-event children killed at --on-event-timeout") \
  X(stream_delivered, "stream_delivered", "event lines given to EVENTS subscribers") \
  X(stream_subscribed, "stream_subscribed", "EVENTS subscriptions taken") \
  X(stream_refused, "stream_refused", "EVENTS subscriptions refused: at the cap") \
  X(stream_slow, "stream_slow", "EVENTS subscribers cut off: they did not read")

struct EventCounters {
#define DT_EVENT_MEMBER(field, name, help) uint64_t field = 0;
  DT_EVENT_COUNTERS(DT_EVENT_MEMBER)
#undef DT_EVENT_MEMBER
  uint64_t subscribers = 0;  // now
  uint64_t queued = 0;       // waiting for a child now
  uint64_t command_failures() const { return command_failed + command_spawn_errors + command_timeouts; }
};

struct EventCounterRow {
  const char *name, *help;
  uint64_t EventCounters::*field;
};

inline constexpr EventCounterRow kEventCounterRows[] = {
#define DT_EVENT_ROW(field, name, help) {name, help, &EventCounters::field},
    DT_EVENT_COUNTERS(DT_EVENT_ROW)
#undef DT_EVENT_ROW
};

// One EVENTS subscriber's lines, taken by the query thread.
class EventSubscription {
 public:
  // The lines not yet taken (appended to *out); false once the subscriber is cut off
  // (it fell kSubscriberBufferBytes behind): the connection is to be closed.
  bool take(std::string *out);

 private:
  friend class EventBus;
  std::mutex mu_;
  std::string pending_;
  bool cut_ = false;
  std::function<void()> notify_;
};

struct EventBusConfig {
  std::string node_id;
  bool command = false;  // an --on-event command takes the events (queue them)
  size_t queue_max = kDefaultEventQueue;
  size_t max_subscribers = kDefaultMaxSubscribers;
};

class EventBus {
 public:
  explicit EventBus(EventBusConfig cfg) : cfg_(std::move(cfg)) {}

  // Makes the event (`fields` after "v", "type", "time", "unix_ms", "node", "seq") and
  // hands it to the command's queue and every subscriber. Any thread.
  void emit(const char *type, const Json &fields, uint64_t unix_ms);

  // A subscriber: `notify` is called (from the emitting thread, under no lock of the
  // caller's) when lines wait. Null when max_subscribers are taken (counted).
  std::shared_ptr<EventSubscription> subscribe(std::function<void()> notify);
  // The subscriber leaves (its connection closed); `slow`: it was cut off for not reading.
  void unsubscribe(const std::shared_ptr<EventSubscription> &sub, bool slow);

  // The command side (command_runner.h): the oldest queued event, if any.
  bool pop_command_event(std::string *line);
  // Called when an event is queued for the command (the runner's wake-up).
  void set_command_notify(std::function<void()> notify);
  // The runner's outcomes, counted here so that one snapshot has them all.
  void count(uint64_t EventCounters::*field, uint64_t n = 1);

  EventCounters counters() const;

 private:
  EventBusConfig cfg_;
  mutable std::mutex mu_;
  uint64_t seq_ = 0;
  std::deque<std::string> queue_;
  std::vector<std::shared_ptr<EventSubscription>> subs_;
  std::function<void()> command_notify_;
  EventCounters c_;
};

// The counters as the status files hold them (`agent stats`): a JSON object, and text lines.
std::string events_status_json(const EventCounters &c);
std::string events_status_text(const EventCounters &c);

// RFC 3339 UTC with milliseconds: "2026-12-03T16:40:00.123Z".
std::string event_time_text(uint64_t unix_ms);

}  // namespace dt
