// The single-threaded event loop: epoll over every CPU's ring of every
// interface, a drain timer that ticks only while something may be pending,
// a signalfd and the link notifications. The
// rings' records go to the output through one RingMerger, which keeps the
// accounting.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ring/clock.hpp"
#include "output/drop_labels.hpp"
#include "output/interface_map.hpp"
#include "host/link_events.hpp"
#include "programs/capture.hpp"
#include "programs/uprobes.hpp"
#include "output/packet_output.hpp"
#include "ring/ring_merge.hpp"
#include "ring/rings.hpp"
#include "capture/stats.hpp"
#include "base/stop_signals.hpp"
#include "base/unique_fd.hpp"

namespace xdpcap {

// The longest a frame waits before it is written, in every mode that
// batches: a batch waits up to one 50 ms drain tick for its flush, and its
// newest frames up to one more in the merge's hold-back.
inline constexpr uint64_t kBatchDelayBoundMs = 100;
// How long a CPU's staged frames may hold back the frames of the other rings
// once the loop has woken for those.
inline constexpr uint64_t kStagedHoldNs = 2'000'000;

enum class StopReason { Signal, CountReached, ReaderGone, InterfaceGone, OutputFailed, CommandExited };

// One interface's capture: its programs and its per-CPU rings, its own or
// (`shares_rings`) the ones every source of the capture writes into. The
// loop's place i (a ring, or an interface's share of a shared ring) runs
// over the sources in order, each source's rings in order, which is how the
// InterfaceMap numbers them.
struct CaptureSource {
    CaptureProgram* program;
    PerfRings* rings;
    std::string interface;
    uint32_t ifindex;
    bool shares_rings = false;
};

class CaptureLoop {
public:
    struct Options {
        std::optional<uint64_t> count;
        bool verbose = false;
        bool filtering = false;
        bool both_directions = false;
        int drain_interval_ms = 50;
        InterfaceMap interfaces{};
        uint32_t sample_every = 1;
        DropLabels* drop_labels = nullptr; // --drops
        uint32_t snaplen = XDPCAP_MAX_SNAPLEN;
        // -- COMMAND: readable once the command exited (a pidfd); the capture
        // then stops, kCommandGraceMs later for its last packets.
        int command_exit_fd = -1;
        // -i any: an interface deleted or moved away leaves the capture
        // (detached, its counts kept) and the others go on; with
        // `note_leaving` one line on stderr says so.
        bool interfaces_may_leave = false;
        bool note_leaving = false;
        // -i any and -i PATTERN: an interface the kernel announces that the
        // capture does not watch yet, by ifindex and name (empty when not
        // announced). Returns its source, attached, with its pcapng
        // interfaces added to the output after every earlier source's; or
        // nothing when it does not take part. Empty: nothing joins.
        std::function<std::optional<CaptureSource>(uint32_t ifindex, const std::string& name)> join = {};
        // With `join`: asks again, on the drain timer, about the veths that
        // joined (or, with --container, were left out) before a container's
        // process ran at their other end, as podman starts it after making
        // them. Appends the sources that join now; returns whether any veth
        // is still waited for (the timer keeps ticking meanwhile).
        std::function<bool(std::vector<CaptureSource>& joined)> revisit = {};
        // --tls-keys: reads new key log lines; called on the drain timer
        // and once more before the last drain.
        std::function<void()> poll_keys = {};
        // --tls-keylog, and --tls-keys with a process selection: the
        // library probes, read whenever their ring holds a handshake.
        TlsKeyProbes* tls_keys = nullptr;
        // --immediate-mode: every record wakes the loop, so it may wait
        // without a timeout with no help from the programs.
        bool records_wake = false;
    };
    static constexpr int kCommandGraceMs = 200;

    // `links`: opened before the sources were attached.
    CaptureLoop(std::vector<CaptureSource> sources, LinkEvents links, PacketOutput& output, StopSignals& signals,
                ClockOffset clock, Options options);

    StopReason run();
    // Detaches, drains every ring until the kernel side is quiet, writes
    // what the merge still holds back and flushes it, so that the statistics
    // that follow count exactly what reached the output. A write that fails
    // meanwhile is counted and recorded, never thrown.
    void detach_and_drain();
    // Per place, in the loop's order.
    std::vector<CpuStats> stats() const;
    // --drops: over every interface, the drops the kernel skipped.
    uint64_t drop_misses() const;
    // After StopReason::InterfaceGone: the interface that went away.
    const std::string& gone_interface() const noexcept { return gone_; }
    // And whether it was moved to another network namespace (else deleted,
    // or not known).
    bool gone_moved() const noexcept { return gone_moved_; }
    // Packets written per output interface (ring and, in trace mode, hook point).
    const std::vector<uint64_t>& written_by_interface() const noexcept { return merger_.written_by_interface(); }
    // Why writing failed (OutputFailed, or later while draining); empty if it did not.
    const std::string& failure() const noexcept { return failure_; }
    // Whether more blocks may still be written (the statistics blocks).
    bool output_usable() const noexcept { return output_usable_; }
    // The output failed before the loop ran (the file's first blocks): what
    // the kernel samples from now on is counted as not written.
    void fail_output(std::string why)
    {
        failure_ = std::move(why);
        merger_.output_failed();
        output_usable_ = false;
    }

private:
    void drain();
    // Runs the flush program on every CPU with frames staged in a batch.
    void flush_staged();
    // The drain tick: periodic while anything may be pending, off while
    // the loop sleeps with nothing to do (see go_idle()).
    void start_ticking();
    // At a tick that found nothing since the previous one: stops the tick
    // when nothing is pending, after telling the programs to wake the loop
    // at the next frame; false when something is pending after all.
    bool go_idle();
    // Nothing in any ring, staged on any CPU, held by the merge or waiting
    // for the timer in the output.
    bool nothing_pending() const;
    // Records taken from the rings so far: a tick that sees no change saw no traffic.
    uint64_t records_taken() const;
    // -i any: the source's interface went away; it is detached and no
    // longer watched.
    void leave(size_t source, bool moved);
    // Offers every announced interface to options_.join; those that join
    // are read from now on.
    void join(const std::vector<NamedLink>& appeared);
    // After the kernel dropped notifications: every interface of the
    // namespace not watched yet is offered.
    void join_unwatched();
    // Options::revisit on a tick: the veths that waited for their container.
    void revisit();
    void add_source(const CaptureSource& source);
    // The source's interface has a new name: its lines and statistics follow.
    void rename(size_t source, const std::string& name);
    // A source whose interface went away, by the kernel's hooks (the fallback
    // to link events) or, with `exists`, by its ifindex too.
    std::optional<size_t> find_gone_source(bool exists) const;
    // Runs a write step; a failure is counted and remembered, not thrown.
    template <class Step>
    void guarded(Step&& step);
    void print_stats() const;
    // Per CPU and hook; without a filter every packet seen counts as matched.
    struct KernelCounters {
        std::vector<xdpcap_counters> ingress, egress;
        std::vector<xdpcap_counters> entry, exit; // trace mode, else empty
        std::vector<xdpcap_counters> drops;       // zero without --drops
        // Every hook of the ring's CPU together.
        xdpcap_counters both(size_t cpu) const { return ingress[cpu] + egress[cpu] + drops[cpu]; }
    };
    // Per source.
    std::vector<KernelCounters> kernel_counters() const;

    struct RingPlace {
        uint32_t source;
        int cpu;
    };
    std::vector<CaptureSource> sources_;
    std::optional<std::chrono::steady_clock::time_point> command_exited_;
    std::vector<uint32_t> ifindexes_; // by source; 0 once it left
    LinkEvents links_;
    std::vector<RingPlace> places_; // by place
    std::vector<PerfRingReader> readers_; // every distinct ring once; the merge reads these
    std::vector<const PerfRings*> read_rings_; // whose readers are in readers_
    // Adds the source's rings unless read already; true when added.
    bool read_rings_of(const CaptureSource& source);
    PacketOutput& output_;
    StopSignals& signals_;
    UniqueFd timer_;
    UniqueFd epoll_;
    ClockOffset clock_;
    Options options_;
    RingMerger merger_;
    std::string failure_;
    std::string gone_;
    bool gone_moved_ = false;
    bool output_usable_ = true;
    bool ticking_ = false;
    bool revisiting_ = false; // options_.revisit still waits for a container
    // Every source's programs can wake the loop (or every record does).
    bool can_sleep_ = false;
    uint64_t taken_at_tick_ = 0;
};

} // namespace xdpcap
