#include "capture/capture.hpp"

#include <linux/membarrier.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <thread>

#include "base/error.hpp"
#include "host/interfaces.hpp"

namespace xdpcap {

namespace {

constexpr uint64_t kTimerToken = ~uint64_t{0};
constexpr uint64_t kSignalToken = ~uint64_t{0} - 1;
constexpr uint64_t kOutputToken = ~uint64_t{0} - 2;
constexpr uint64_t kLinkToken = ~uint64_t{0} - 3;
constexpr uint64_t kCommandToken = ~uint64_t{0} - 4;
constexpr uint64_t kTlsKeysToken = ~uint64_t{0} - 5;
constexpr uint64_t kWakeupsToken = ~uint64_t{0} - 6;

void epoll_add(int epoll_fd, int fd, uint64_t token)
{
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = token;
    if (::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0)
        throw Error("epoll_ctl: " + errno_text(errno));
}

} // namespace

bool CaptureLoop::read_rings_of(const CaptureSource& source)
{
    if (std::find(read_rings_.begin(), read_rings_.end(), source.rings) != read_rings_.end())
        return false;
    read_rings_.push_back(source.rings);
    for (const PerfRingReader& reader : source.rings->readers())
        readers_.push_back(reader);
    return true;
}

CaptureLoop::CaptureLoop(std::vector<CaptureSource> sources, LinkEvents links, PacketOutput& output,
                         StopSignals& signals, ClockOffset clock, Options options)
    : sources_(std::move(sources)), links_(std::move(links)), output_(output), signals_(signals), clock_(clock),
      options_(options), merger_({}, output, clock,
                                 RingMerger::Options{options.count, kHoldBackNs, options.interfaces, options.snaplen})
{
    for (uint32_t s = 0; s < sources_.size(); ++s) {
        ifindexes_.push_back(sources_[s].ifindex);
        for (size_t ring = 0; ring < sources_[s].rings->count(); ++ring)
            places_.push_back(RingPlace{s, sources_[s].rings->cpu(ring)});
        read_rings_of(sources_[s]);
    }
    merger_.add_rings(readers_);
    for (const CaptureSource& source : sources_) {
        if (source.shares_rings)
            merger_.add_sharing_interface(source.ifindex);
    }
    epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
    if (!epoll_)
        throw Error("epoll_create1: " + errno_text(errno));
    timer_.reset(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
    if (!timer_)
        throw Error("timerfd_create: " + errno_text(errno));
    start_ticking();

    epoll_add(epoll_.get(), timer_.get(), kTimerToken);
    can_sleep_ = true;
    for (size_t s = 0; s < sources_.size(); ++s) {
        const CaptureSource& source = sources_[s];
        if (options_.records_wake)
            break;
        if (!source.program->can_wake()) {
            can_sleep_ = false;
            break;
        }
        // Sources that share rings share the wakeups too.
        if (s == 0 || !source.shares_rings)
            epoll_add(epoll_.get(), source.program->wakeups_fd(), kWakeupsToken);
    }
    epoll_add(epoll_.get(), signals_.fd(), kSignalToken);
    epoll_add(epoll_.get(), links_.fd(), kLinkToken);
    if (options_.command_exit_fd >= 0)
        epoll_add(epoll_.get(), options_.command_exit_fd, kCommandToken);
    if (options_.tls_keys && options_.tls_keys->fd() >= 0)
        epoll_add(epoll_.get(), options_.tls_keys->fd(), kTlsKeysToken);
    signals_.on_status([this] { print_stats(); });
    uint64_t token = 0;
    for (const PerfRings* rings : read_rings_) {
        for (size_t ring = 0; ring < rings->count(); ++ring)
            epoll_add(epoll_.get(), rings->fd(ring), token++);
    }
    // Deleted since it was listed, before its deletion could be noticed.
    if (options_.interfaces_may_leave) {
        for (size_t s = 0; s < sources_.size(); ++s) {
            if (!interface_exists(sources_[s].ifindex))
                leave(s, false);
        }
    }
    // A pipe reports EPOLLERR once its reader is gone: notice it even when no
    // packet arrives to make a write fail.
    if (output_.sink().is_pipe()) {
        epoll_event ev{};
        ev.events = 0; // EPOLLERR is always reported
        ev.data.u64 = kOutputToken;
        if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, output_.sink().fd(), &ev) != 0)
            throw Error("epoll_ctl: " + errno_text(errno));
    }
}

StopReason CaptureLoop::run()
{
    constexpr int kMaxEvents = 64;
    epoll_event events[kMaxEvents];
    try {
        for (;;) {
            const int n = ::epoll_wait(epoll_.get(), events, kMaxEvents, -1);
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                throw Error("epoll_wait: " + errno_text(errno), kExitRuntime);
            }
            bool stop = false;
            bool timer_fired = false;
            bool woken = false;
            // Anything but the timer and link notices may leave work for the tick.
            bool stirred = false;
            std::optional<size_t> gone;
            for (int i = 0; i < n; ++i) {
                if (events[i].data.u64 != kTimerToken && events[i].data.u64 != kLinkToken)
                    stirred = true;
                if (events[i].data.u64 == kSignalToken) {
                    stop = signals_.poll() || stop;
                } else if (events[i].data.u64 == kLinkToken) {
                    const LinkEvents::Result links = links_.read(ifindexes_);
                    for (const NamedLink& named : links.named) {
                        const auto at = std::find(ifindexes_.begin(), ifindexes_.end(), named.ifindex);
                        if (at != ifindexes_.end())
                            rename(static_cast<size_t>(at - ifindexes_.begin()), named.name);
                    }
                    if (options_.interfaces_may_leave) {
                        for (const LostLink& lost : links.all_lost) {
                            const auto at = std::find(ifindexes_.begin(), ifindexes_.end(), lost.ifindex);
                            if (at != ifindexes_.end())
                                leave(static_cast<size_t>(at - ifindexes_.begin()), lost.moved);
                        }
                        if (links.missed)
                            gone = find_gone_source(true);
                        join(links.appeared);
                        if (links.missed)
                            join_unwatched();
                        if (options_.revisit && !links.appeared.empty()) {
                            revisiting_ = true;
                            stirred = true;
                        }
                    } else if (links.lost) {
                        const auto at = std::find(ifindexes_.begin(), ifindexes_.end(), links.lost->ifindex);
                        gone = static_cast<size_t>(at - ifindexes_.begin());
                        gone_moved_ = links.lost->moved;
                    } else if (links.missed && !gone) {
                        gone = find_gone_source(true);
                    }
                } else if (events[i].data.u64 == kOutputToken) {
                    merger_.output_gone();
                    return StopReason::ReaderGone;
                } else if (events[i].data.u64 == kCommandToken) {
                    // Readable for good: watched no more.
                    ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, options_.command_exit_fd, nullptr);
                    command_exited_ = std::chrono::steady_clock::now();
                } else if (events[i].data.u64 == kTlsKeysToken) {
                    options_.tls_keys->poll();
                } else if (events[i].data.u64 == kTimerToken) {
                    uint64_t expirations;
                    (void)!::read(timer_.get(), &expirations, sizeof expirations);
                    timer_fired = true;
                } else if (events[i].data.u64 == kWakeupsToken) {
                    woken = true;
                }
                // Ring readiness needs no per-fd work: every ring is drained below.
            }
            if (woken) {
                for (const CaptureSource& source : sources_)
                    source.program->consume_wakeups();
            }
            if (stirred && !ticking_)
                start_ticking();
            // A batch waits at most one tick for a quiet CPU's next frame;
            // the frame that woke a sleeping loop none.
            if (timer_fired || woken)
                flush_staged();
            // New key lines first: the held connections they complete are
            // released right after this batch.
            if (timer_fired && options_.poll_keys)
                options_.poll_keys();
            if (timer_fired && revisiting_)
                revisit();
            drain();
            output_.place_held_tls(now_ns(CLOCK_MONOTONIC));
            output_.end_batch();
            if (timer_fired) {
                output_.flush();
                output_.housekeeping();
                if (!gone) {
                    gone = find_gone_source(false);
                    // Seen by polling first (a clsact filter goes with the
                    // move): the kernel's notice says whether it moved.
                    if (gone) {
                        if (const auto lost = links_.await_loss(ifindexes_, 500))
                            gone_moved_ = lost->ifindex == ifindexes_[*gone] && lost->moved;
                    }
                }
            }
            // A whole tick without a record: the tick stops until the
            // next frame (or anything else) wakes the loop.
            if (timer_fired && can_sleep_ && !gone && !stop && !command_exited_ && !revisiting_) {
                const uint64_t taken = records_taken();
                if (taken == taken_at_tick_)
                    go_idle();
                taken_at_tick_ = taken;
            }
            if (gone && options_.interfaces_may_leave) {
                leave(*gone, gone_moved_);
                gone.reset();
            }
            if (gone) {
                gone_ = sources_[*gone].interface;
                return StopReason::InterfaceGone;
            }
            if (merger_.count_reached())
                return StopReason::CountReached;
            if (stop)
                return StopReason::Signal;
            if (command_exited_ &&
                std::chrono::steady_clock::now() - *command_exited_ >= std::chrono::milliseconds(kCommandGraceMs))
                return StopReason::CommandExited;
        }
    } catch (const OutputClosed&) {
        merger_.output_failed();
        output_usable_ = false;
        return StopReason::ReaderGone;
    } catch (const OutputInterrupted&) {
        // A stop signal while the output took nothing: what was not written
        // by then is counted as not written.
        merger_.output_failed();
        output_usable_ = false;
        return StopReason::Signal;
    } catch (const Error& e) {
        // A full disk or I/O error: stop writing but still detach, drain and
        // account for everything the kernel sampled.
        failure_ = e.what();
        merger_.output_failed();
        output_usable_ = false;
        return StopReason::OutputFailed;
    }
}

void CaptureLoop::leave(size_t source, bool moved)
{
    if (ifindexes_[source] == 0)
        return;
    sources_[source].program->detach();
    ifindexes_[source] = 0;
    if (options_.note_leaving)
        std::fprintf(stderr, "xdpcap: %s went away%s; capture goes on\n", sources_[source].interface.c_str(),
                     moved ? " (moved to another network namespace)" : "");
}

void CaptureLoop::join(const std::vector<NamedLink>& appeared)
{
    if (!options_.join)
        return;
    for (const NamedLink& link : appeared) {
        // Announced again while this batch joined it.
        if (std::find(ifindexes_.begin(), ifindexes_.end(), link.ifindex) != ifindexes_.end())
            continue;
        const std::optional<CaptureSource> source = options_.join(link.ifindex, link.name);
        if (!source)
            continue;
        add_source(*source);
        // Deleted between its notice and the attach: its loss was read
        // before it was watched.
        if (!interface_exists(source->ifindex))
            leave(sources_.size() - 1, false);
    }
}

void CaptureLoop::revisit()
{
    std::vector<CaptureSource> joined;
    revisiting_ = options_.revisit(joined);
    for (const CaptureSource& source : joined) {
        add_source(source);
        if (!interface_exists(source.ifindex))
            leave(sources_.size() - 1, false);
    }
}

void CaptureLoop::join_unwatched()
{
    if (!options_.join)
        return;
    std::vector<NamedLink> unwatched;
    try {
        for (const InterfaceInfo& iface : namespace_interfaces()) {
            if (std::find(ifindexes_.begin(), ifindexes_.end(), iface.ifindex) == ifindexes_.end())
                unwatched.push_back(NamedLink{iface.ifindex, iface.name});
        }
    } catch (const Error&) {
        return; // no list now: the next notices still come
    }
    join(unwatched);
}

void CaptureLoop::add_source(const CaptureSource& source)
{
    const auto index = static_cast<uint32_t>(sources_.size());
    sources_.push_back(source);
    ifindexes_.push_back(source.ifindex);
    for (size_t ring = 0; ring < source.rings->count(); ++ring)
        places_.push_back(RingPlace{index, source.rings->cpu(ring)});
    if (read_rings_of(source)) {
        for (size_t ring = 0; ring < source.rings->count(); ++ring)
            epoll_add(epoll_.get(), source.rings->fd(ring), readers_.size() - source.rings->count() + ring);
        merger_.add_rings(readers_);
        // Rings of its own wake the loop through its own wakeups.
        if (can_sleep_ && !options_.records_wake) {
            if (source.program->can_wake())
                epoll_add(epoll_.get(), source.program->wakeups_fd(), kWakeupsToken);
            else
                can_sleep_ = false;
        }
    }
    if (source.shares_rings)
        merger_.add_sharing_interface(source.ifindex);
}

void CaptureLoop::rename(size_t source, const std::string& name)
{
    if (sources_[source].interface == name)
        return;
    sources_[source].interface = name;
    const uint32_t per_ring = options_.interfaces.per_ring();
    for (uint32_t ring = 0; ring < places_.size(); ++ring) {
        if (places_[ring].source != source)
            continue;
        for (uint32_t slot = 0; slot < per_ring; ++slot)
            output_.rename_device(ring * per_ring + slot, name);
    }
}

std::optional<size_t> CaptureLoop::find_gone_source(bool exists) const
{
    for (size_t s = 0; s < sources_.size(); ++s) {
        if (ifindexes_[s] == 0)
            continue; // left already
        if (sources_[s].program->link_defunct() || (exists && !interface_exists(sources_[s].ifindex)))
            return s;
    }
    return std::nullopt;
}

template <class Step>
void CaptureLoop::guarded(Step&& step)
{
    try {
        step();
    } catch (const OutputClosed&) {
        merger_.output_failed();
        output_usable_ = false;
    } catch (const OutputInterrupted&) {
        merger_.output_failed();
        output_usable_ = false;
    } catch (const Error& e) {
        if (failure_.empty())
            failure_ = e.what();
        merger_.output_failed();
        output_usable_ = false;
    }
}

void CaptureLoop::drain()
{
    // Read before the rings: a ring found empty after this moment can only
    // deliver samples stamped after it, less the in-flight time. A CPU with
    // frames staged in a batch can still deliver them: nothing newer than
    // its oldest is written before they are out.
    // A batch that has held the other rings back for kStagedHoldNs goes out
    // now, not at the tick: meanwhile their rings would fill (bulk TCP's
    // super-frames on one CPU behind its ACKs staged on another).
    const uint64_t read_at = now_ns(CLOCK_MONOTONIC);
    uint64_t now = read_at;
    for (const RingPlace& place : places_) {
        CaptureProgram& program = *sources_[place.source].program;
        uint64_t since = program.staged_since(place.cpu);
        if (since != UINT64_MAX && read_at > since + kStagedHoldNs && program.flush(place.cpu))
            since = program.staged_since(place.cpu);
        now = std::min(now, since);
    }
    merger_.drain(now);
}

void CaptureLoop::flush_staged()
{
    for (const RingPlace& place : places_) {
        CaptureProgram& program = *sources_[place.source].program;
        if (program.staged(place.cpu))
            program.flush(place.cpu);
    }
}

void CaptureLoop::start_ticking()
{
    for (const CaptureSource& source : sources_)
        source.program->set_sleeping(false);
    const long interval_ns = static_cast<long>(options_.drain_interval_ms) * 1'000'000L;
    itimerspec spec{};
    spec.it_interval.tv_sec = interval_ns / 1'000'000'000L;
    spec.it_interval.tv_nsec = interval_ns % 1'000'000'000L;
    spec.it_value = spec.it_interval;
    if (::timerfd_settime(timer_.get(), 0, &spec, nullptr) != 0)
        throw Error(std::string("timerfd_settime: ").append(errno_text(errno)), kExitRuntime);
    ticking_ = true;
    taken_at_tick_ = records_taken();
}

bool CaptureLoop::go_idle()
{
    if (!nothing_pending())
        return false;
    if (!options_.records_wake) {
        // A frame below a ring's watermark, or staged, wakes nobody: the
        // programs must. The flag goes up first; after a grace period every
        // program either has finished, so its frame shows below, or runs
        // after the flag went up and sees it (they all run as RCU readers),
        // so no frame can slip between the last look and the sleep without
        // a costly barrier on the packets' path.
        for (const CaptureSource& source : sources_)
            source.program->set_sleeping(true);
        if (::syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) != 0) {
            // nohz_full CPUs, or no membarrier: the tick stays.
            can_sleep_ = false;
            for (const CaptureSource& source : sources_)
                source.program->set_sleeping(false);
            return false;
        }
        if (!nothing_pending()) {
            for (const CaptureSource& source : sources_)
                source.program->set_sleeping(false);
            return false;
        }
    }
    const itimerspec off{};
    if (::timerfd_settime(timer_.get(), 0, &off, nullptr) != 0)
        throw Error(std::string("timerfd_settime: ").append(errno_text(errno)), kExitRuntime);
    ticking_ = false;
    return true;
}

bool CaptureLoop::nothing_pending() const
{
    if (merger_.held() != 0 || output_.awaits_timer())
        return false;
    for (const PerfRingReader& reader : readers_) {
        if (!reader.empty())
            return false;
    }
    for (const RingPlace& place : places_) {
        if (sources_[place.source].program->staged(place.cpu))
            return false;
    }
    return true;
}

uint64_t CaptureLoop::records_taken() const
{
    uint64_t taken = 0;
    for (const RingTally& tally : merger_.tallies())
        taken += tally.samples + tally.lost_records + tally.invalid;
    return taken;
}

void CaptureLoop::detach_and_drain()
{
    for (const CaptureSource& source : sources_)
        source.program->detach();
    // A program that started before the detach may still be running on
    // another CPU: drain until every sample the kernel counted is consumed.
    using namespace std::chrono_literals;
    const auto deadline = std::chrono::steady_clock::now() + 500ms;
    int quiet_rounds = 0;
    // Samples are held back meanwhile, so that one from a program still
    // running falls into place; the pause lets the held ones age past it.
    constexpr auto kPause = 5ms;
    static_assert(std::chrono::nanoseconds(kPause).count() > static_cast<int64_t>(kHoldBackNs));
    while (quiet_rounds < 2 && std::chrono::steady_clock::now() < deadline) {
        // Every CPU's partial batch first: its frames are counted once out.
        flush_staged();
        guarded([this] { drain(); });
        const auto counters = kernel_counters();
        const auto& tallies = merger_.tallies();
        bool settled = true;
        for (size_t ring = 0; ring < places_.size(); ++ring) {
            const auto k = counters[places_[ring].source].both(static_cast<size_t>(places_[ring].cpu));
            if (k.matched != k.sampled + k.output_failed + k.sample_skipped || tallies[ring].samples != k.sampled)
                settled = false;
        }
        quiet_rounds = settled ? quiet_rounds + 1 : 0;
        if (quiet_rounds < 2)
            std::this_thread::sleep_for(kPause);
    }
    // The command's last key lines, and the probes', before the last packets.
    if (options_.poll_keys)
        options_.poll_keys();
    if (options_.tls_keys)
        options_.tls_keys->poll();
    // Whatever is still held, also if the deadline passed first.
    guarded([this] { merger_.drain_everything(); });
    guarded([this] { output_.place_held_tls(now_ns(CLOCK_MONOTONIC)); });
    if (output_usable_)
        guarded([this] { output_.flush(); });
}

std::vector<CaptureLoop::KernelCounters> CaptureLoop::kernel_counters() const
{
    std::vector<KernelCounters> all;
    for (const CaptureSource& source : sources_) {
        const CaptureProgram& program = *source.program;
        // Xdp's key counts received frames at either hook.
        KernelCounters counters{program.read_counters(Hook::Xdp),
                                program.read_counters(Hook::TcEgress), {}, {},
                                program.read_counters(Hook::Drop)};
        if (program.tracing()) {
            counters.entry = program.read_trace_counters(false);
            counters.exit = program.read_trace_counters(true);
        }
        if (!options_.filtering) {
            for (auto* hook : {&counters.ingress, &counters.egress, &counters.entry, &counters.exit, &counters.drops}) {
                for (auto& k : *hook)
                    k.matched = k.seen;
            }
        }
        all.push_back(std::move(counters));
    }
    return all;
}

std::vector<CpuStats> CaptureLoop::stats() const
{
    const auto counters = kernel_counters();
    std::vector<CpuStats> out;
    out.reserve(places_.size());
    for (size_t ring = 0; ring < places_.size(); ++ring) {
        const int cpu = places_[ring].cpu;
        const auto index = static_cast<size_t>(cpu);
        const KernelCounters& k = counters[places_[ring].source];
        CpuStats s{cpu, k.both(index), k.ingress[index], k.egress[index], {}, {}, k.drops[index],
                   merger_.tallies()[ring], sources_[places_[ring].source].interface};
        if (!k.entry.empty()) {
            s.entry = k.entry[index];
            s.exit = k.exit[index];
        }
        s.staged = sources_[places_[ring].source].program->staged(cpu);
        out.push_back(s);
    }
    return out;
}

uint64_t CaptureLoop::drop_misses() const
{
    uint64_t missed = 0;
    for (const CaptureSource& source : sources_)
        missed += source.program->drop_misses();
    return missed;
}

void CaptureLoop::print_stats() const
{
    const std::string text = format_stats(stats(), StatsFormat{.per_cpu = options_.verbose,
                                                               .filtering = options_.filtering,
                                                               .both_directions = options_.both_directions,
                                                               .trace_points = sources_.front().program->trace_points(),
                                                               .sample_every = options_.sample_every,
                                                               .drops = options_.drop_labels != nullptr,
                                                               .drop_reasons = options_.drop_labels
                                                                   ? options_.drop_labels->by_frequency()
                                                                   : std::vector<std::pair<std::string, uint64_t>>{},
                                                               .drop_misses = drop_misses(),
                                                               .largest_snaplen = options_.snaplen == XDPCAP_MAX_SNAPLEN,
                                                               .interim = true});
    std::fputs(text.c_str(), stderr);
    std::fflush(stderr);
}

} // namespace xdpcap
