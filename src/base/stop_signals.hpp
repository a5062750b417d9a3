// The signals that stop a capture or ask for statistics, taken through a
// signalfd so that every wait (the event loop, a FIFO without a reader, a
// full pipe) can watch for them and stop within a bounded time.
#pragma once

#include <functional>

#include "base/unique_fd.hpp"

namespace xdpcap {

class StopSignals {
public:
    // Blocks SIGINT, SIGTERM, SIGHUP and SIGUSR1. Call before anything is
    // attached, so that an early Ctrl-C still leads to a clean stop.
    static StopSignals block();

    int fd() const noexcept { return fd_.get(); }
    // Takes every pending signal: SIGUSR1 runs the status callback, the
    // others request a stop. True once a stop has been requested.
    bool poll();
    bool stop_requested() const noexcept { return stop_; }
    void on_status(std::function<void()> print) { print_status_ = std::move(print); }

    // Waits until `fd` has `events` (poll(2) flags); true when it is ready.
    // Once a stop is requested the wait lasts at most kStopGraceMs from the
    // first stop signal (so that a live reader still gets what was captured),
    // and ends at once on a second one: false then. SIGUSR1 is served meanwhile.
    bool wait_for(int fd, short events);
    static constexpr int kStopGraceMs = 1000;
    // Waits `ms` milliseconds unless a stop is requested first (false then).
    bool pause(int ms);

private:
    explicit StopSignals(UniqueFd fd) : fd_(std::move(fd)) {}

    // Milliseconds left of the grace after a stop; -1 while none was requested.
    int grace_left_ms() const;

    UniqueFd fd_;
    bool stop_ = false;
    int stops_ = 0;
    long long first_stop_ms_ = 0; // CLOCK_MONOTONIC
    std::function<void()> print_status_;
};

} // namespace xdpcap
