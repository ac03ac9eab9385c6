// event_bus.cpp - events made once, queued for the command and fanned out to subscribers.
#include "events/event_bus.h"

#include <cstdio>
#include <ctime>

namespace dt {

std::string event_time_text(uint64_t unix_ms) {
  const time_t secs = static_cast<time_t>(unix_ms / 1000);
  tm t{};
  gmtime_r(&secs, &t);
  char buf[96];
  snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", t.tm_year + 1900, t.tm_mon + 1, t.tm_mday, t.tm_hour,
           t.tm_min, t.tm_sec, static_cast<unsigned>(unix_ms % 1000));
  return buf;
}

std::string events_status_json(const EventCounters &c) {
  Json j;
  for (const EventCounterRow &r : kEventCounterRows) j[r.name] = c.*r.field;
  j["command_failures"] = c.command_failures();
  j["subscribers"] = c.subscribers;
  j["queued"] = c.queued;
  return dump_json(j);
}

std::string events_status_text(const EventCounters &c) {
  char buf[512];
  snprintf(buf, sizeof buf,
           "events: %llu emitted; command: %llu ok, %llu failed, %llu spawn errors, %llu timeouts, %llu dropped "
           "(queue full), %llu queued; stream: %llu subscribers, %llu lines delivered, %llu cut off (slow), "
           "%llu refused",
           (unsigned long long)c.emitted, (unsigned long long)c.command_ok, (unsigned long long)c.command_failed,
           (unsigned long long)c.command_spawn_errors, (unsigned long long)c.command_timeouts,
           (unsigned long long)c.command_dropped, (unsigned long long)c.queued, (unsigned long long)c.subscribers,
           (unsigned long long)c.stream_delivered, (unsigned long long)c.stream_slow,
           (unsigned long long)c.stream_refused);
  return buf;
}

bool EventSubscription::take(std::string *out) {
  std::lock_guard<std::mutex> lock(mu_);
  out->append(pending_);
  pending_.clear();
  return !cut_;
}

void EventBus::emit(const char *type, const Json &fields, uint64_t unix_ms) {
  std::vector<std::function<void()>> wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Json j = {{"v", kEventSchemaVersion}, {"type", type},         {"time", event_time_text(unix_ms)},
              {"unix_ms", unix_ms},       {"node", cfg_.node_id}, {"seq", ++seq_}};
    for (auto it = fields.begin(); it != fields.end(); ++it) j[it.key()] = it.value();
    std::string line = dump_json(j) + "\n";
    c_.emitted++;
    if (line.size() > kMaxEventBytes) {
      c_.oversized++;
      return;
    }
    if (cfg_.command) {
      if (queue_.size() >= cfg_.queue_max) {
        c_.command_dropped++;
      } else {
        queue_.push_back(line);
        c_.command_queued++;
        if (command_notify_) wake.push_back(command_notify_);
      }
    }
    for (const auto &sub : subs_) {
      std::lock_guard<std::mutex> sl(sub->mu_);
      if (sub->cut_) continue;
      if (sub->pending_.size() + line.size() > kSubscriberBufferBytes) {
        sub->cut_ = true;
        sub->pending_.clear();
      } else {
        sub->pending_ += line;
        c_.stream_delivered++;
      }
      if (sub->notify_) wake.push_back(sub->notify_);
    }
  }
  for (auto &w : wake) w();
}

std::shared_ptr<EventSubscription> EventBus::subscribe(std::function<void()> notify) {
  std::lock_guard<std::mutex> lock(mu_);
  if (subs_.size() >= cfg_.max_subscribers) {
    c_.stream_refused++;
    return nullptr;
  }
  auto sub = std::make_shared<EventSubscription>();
  sub->notify_ = std::move(notify);
  subs_.push_back(sub);
  c_.stream_subscribed++;
  return sub;
}

void EventBus::unsubscribe(const std::shared_ptr<EventSubscription> &sub, bool slow) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = subs_.begin(); it != subs_.end(); ++it) {
    if (*it != sub) continue;
    subs_.erase(it);
    if (slow) c_.stream_slow++;
    return;
  }
}

bool EventBus::pop_command_event(std::string *line) {
  std::lock_guard<std::mutex> lock(mu_);
  if (queue_.empty()) return false;
  *line = std::move(queue_.front());
  queue_.pop_front();
  return true;
}

void EventBus::set_command_notify(std::function<void()> notify) {
  std::lock_guard<std::mutex> lock(mu_);
  command_notify_ = std::move(notify);
}

void EventBus::count(uint64_t EventCounters::*field, uint64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  c_.*field += n;
}

EventCounters EventBus::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  EventCounters c = c_;
  c.subscribers = subs_.size();
  c.queued = queue_.size();
  return c;
}

}  // namespace dt
