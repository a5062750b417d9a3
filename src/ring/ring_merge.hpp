// One output stream in timestamp order from the per-CPU rings: each ring's
// next sample waits in a binary min-heap keyed by (timestamp, ring), and the
// oldest is written once no ring can still deliver an older one. A frame
// longer than one record is put together from its records first. Also keeps
// each ring's accounting, since what happens to a sample is decided here.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "ring/clock.hpp"
#include "output/interface_map.hpp"
#include "output/packet_output.hpp"
#include "ring/perf_ring.hpp"
#include "ring/record.hpp"
#include "ring/tally.hpp"

namespace xdpcap {

// How long a sample may wait for a ring that has nothing to compare it with.
// A BPF program commits its record within microseconds of bpf_ktime_get_ns()
// (it runs with preemption off; only interrupts or a hypervisor stretch that),
// and rings are read up to data_head, so a ring found empty at time T can only
// deliver samples stamped after T minus that span. 1 ms covers it a thousand
// times over, and keeps at most 1 ms of one CPU's traffic waiting in its ring.
inline constexpr uint64_t kHoldBackNs = 1'000'000;

class RingMerger {
public:
    struct Options {
        std::optional<uint64_t> count; // -c: samples after this many written are discarded
        uint64_t hold_back_ns = kHoldBackNs;
        InterfaceMap interfaces{}; // default: ring i is written as interface i
        uint32_t snaplen = XDPCAP_MAX_SNAPLEN; // frames longer than this are counted as cut
    };

    RingMerger(std::span<PerfRingReader> rings, PacketOutput& output, ClockOffset clock, Options options);

    // Writes, oldest first, every sample no ring can precede any more: each
    // ring holds a newer one, or the sample is older than now_ns minus the
    // hold-back (now_ns: CLOCK_MONOTONIC, read before the call). A ring more
    // than half full lifts the hold-back: everything read is written. Then
    // hands the consumed ring space back, also when writing throws.
    void drain(uint64_t now_ns) { merge(now_ns, false); }
    // The same without hold-back: everything published is written. For the
    // end of the capture: a frame still missing parts then never gets them.
    void drain_everything();

    // `rings`: the rings given before, in the same order (the readers may
    // have moved), then new ones, which a joining interface brings. Between
    // drains only.
    void add_rings(std::span<PerfRingReader> rings);

    // Rings that several interfaces write into (-i any): each sample's
    // accounting and interface go by its place, the ring of its interface
    // (`ifindex`, the order added is the interfaces' order) on its CPU, as if
    // every interface had rings of its own: interface k's place on ring r is
    // k * rings + r. Records that name no interface count on the first
    // interface's place. Between drains only.
    void add_sharing_interface(uint32_t ifindex);

    // A write threw: the packets of the failed chunk count as not written,
    // and so does every later sample.
    void output_failed();
    // The reader went away: later samples count as not written.
    void output_gone() noexcept { output_gone_ = true; }

    bool count_reached() const noexcept { return count_reached_; }
    // By place: by ring, or with shared rings as add_sharing_interface() says.
    const std::vector<RingTally>& tallies() const noexcept { return tallies_; }
    // Packets written per output interface (the rings' `written`, split by
    // hook point in trace mode).
    const std::vector<uint64_t>& written_by_interface() const noexcept { return written_by_interface_; }
    // Times a ring's size fields were garbage and its published data was skipped.
    uint64_t corrupt() const noexcept { return corrupt_; }
    // Samples read from the rings and not yet written (one per ring at most).
    size_t held() const noexcept { return heap_.size(); }

private:
    struct Key {
        uint64_t tstamp_ns;
        uint32_t ring;
    };
    struct Head {
        DecodedRecord decoded;
        // The first record, while it is still to be consumed; empty for a
        // frame put together from several (their records are consumed, the
        // frame is in frame_buffer()). A batched frame's is its batch's.
        PerfRingReader::Record record;
        // Taking the frame consumes `record`: false for a batch's frames
        // but its last, whose record must stay until all are written.
        bool consumes = true;
    };
    // A batch record whose frames are being taken, one head at a time.
    struct BatchCursor {
        PerfRingReader::Record record{};
        const uint8_t* next = nullptr;
        const uint8_t* end = nullptr;
        uint32_t left = 0;
    };
    // A frame longer than one record whose first records have been read.
    struct Assembly {
        bool active = false;
        Sample sample{}; // from the first record; data points at frame_buffer()
        uint32_t next_offset = 0;
    };

    // Ties go to the lower ring so that the output is deterministic.
    static bool before(const Key& a, const Key& b) noexcept
    {
        return a.tstamp_ns < b.tstamp_ns || (a.tstamp_ns == b.tstamp_ns && a.ring < b.ring);
    }
    void merge(uint64_t now_ns, bool everything);
    // Reads the ring's next sample into heads_[ring], accounting for the
    // other records before it. False when the ring has no sample.
    bool read_head(uint32_t ring);
    // The batch's next frame becomes the ring's head.
    void next_of_batch(uint32_t ring);
    // Consumes the ring's head and writes or counts it.
    void take(uint32_t ring);
    // After take() of a batched frame: the batch's next frames, in a row,
    // while each is stamped no later than `until` (it would be taken next
    // anyway), written straight from the batch, without becoming the
    // ring's head. Stops before a frame the output cannot take without a
    // flush: the general path then takes it. Never throws.
    void take_batch_run(uint32_t ring, uint64_t until) noexcept;
    // Accounts for a packet written; false once -c is reached.
    bool count_written(RingTally& tally, uint32_t interface, const Sample& sample) noexcept;
    // A record of a frame longer than one record; true when it completes it.
    bool assemble(uint32_t ring, const DecodedRecord& decoded);
    // The ring's frame in progress will not be completed: its records are
    // dropped (the kernel counted the frame as not written).
    void abandon(uint32_t ring) noexcept;
    void push(Key key) noexcept;
    void pop_top() noexcept;
    void sift_down(Key key) noexcept; // puts key at the top and restores the heap
    // Where a sample of interface `ifindex` read from `ring` is accounted.
    uint32_t place_of(uint32_t ring, uint32_t ifindex) noexcept
    {
        if (sharing_.empty())
            return ring;
        Route& last = last_route_[ring];
        if (last.ifindex != ifindex) [[unlikely]] {
            const auto found = sharing_.find(ifindex);
            last = Route{ifindex, found == sharing_.end() ? 0 : found->second};
        }
        return last.interface * static_cast<uint32_t>(rings_.size()) + ring;
    }
    void size_places(size_t places);
    uint8_t* scratch(uint32_t ring) const noexcept { return scratch_[ring].get(); }
    uint8_t* frame_buffer(uint32_t ring) const noexcept { return frames_[ring].get(); }

    std::span<PerfRingReader> rings_;
    PacketOutput& output_;
    ClockOffset clock_;
    Options options_;
    std::vector<Head> heads_;
    std::vector<Key> heap_;    // the rings with a head
    std::vector<uint8_t> queued_; // ring is in heap_
    // Each ring's wrapped head record; several are held at once. Not zeroed:
    // pages that no wrapped record touches stay unallocated.
    std::vector<std::unique_ptr<uint8_t[]>> scratch_;
    // Each ring's frame being put together from several records; untouched
    // pages stay unallocated here too.
    std::vector<std::unique_ptr<uint8_t[]>> frames_;
    std::vector<Assembly> assemblies_;
    std::vector<BatchCursor> batches_;
    std::vector<RingTally> tallies_; // by place
    // Shared rings: each interface's index by ifindex (a later interface
    // with a reused ifindex takes it over), and each ring's last lookup.
    struct Route {
        uint32_t ifindex = 0;
        uint32_t interface = 0;
    };
    std::unordered_map<uint32_t, uint32_t> sharing_;
    uint32_t sharing_interfaces_ = 0;
    std::vector<Route> last_route_;
    std::vector<uint64_t> written_by_interface_;
    uint64_t newest_written_ns_ = 0;
    uint64_t written_ = 0; // packets whose write returned
    uint64_t corrupt_ = 0;
    bool count_reached_ = false;
    bool output_gone_ = false;
};

} // namespace xdpcap
