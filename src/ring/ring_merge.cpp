#include "ring/ring_merge.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace xdpcap {

RingMerger::RingMerger(std::span<PerfRingReader> rings, PacketOutput& output, ClockOffset clock, Options options)
    : output_(output), clock_(clock), options_(options)
{
    add_rings(rings);
}

void RingMerger::add_rings(std::span<PerfRingReader> rings)
{
    const size_t count = rings.size();
    rings_ = rings;
    heads_.resize(count);
    queued_.resize(count, 0);
    // Each ring's own: a ring added later leaves the others' bytes in place.
    while (scratch_.size() < count)
        scratch_.push_back(std::make_unique_for_overwrite<uint8_t[]>(kMaxRecordSize));
    while (frames_.size() < count)
        frames_.push_back(std::make_unique_for_overwrite<uint8_t[]>(XDPCAP_MAX_SNAPLEN));
    assemblies_.resize(count);
    batches_.resize(count);
    last_route_.resize(count);
    size_places(sharing_.empty() ? count : count * sharing_interfaces_);
    heap_.reserve(count); // never grows on the hot path
}

void RingMerger::size_places(size_t places)
{
    if (tallies_.size() < places)
        tallies_.resize(places);
    const uint32_t interfaces = options_.interfaces.count(static_cast<uint32_t>(places));
    if (written_by_interface_.size() < interfaces)
        written_by_interface_.resize(interfaces, 0);
}

void RingMerger::add_sharing_interface(uint32_t ifindex)
{
    sharing_.insert_or_assign(ifindex, sharing_interfaces_++);
    // A ring's cached route may name the interface that had the ifindex.
    std::fill(last_route_.begin(), last_route_.end(), Route{});
    size_places(rings_.size() * sharing_interfaces_);
}

void RingMerger::merge(uint64_t now_ns, bool everything)
{
    // Released however this ends: on success the output that refers to ring
    // bytes is out by then; after a failure it is dropped and counted.
    struct ReleaseRings {
        std::span<PerfRingReader> rings;
        ~ReleaseRings()
        {
            for (PerfRingReader& ring : rings)
                ring.release();
        }
    } release{rings_};

    for (uint32_t ring = 0; ring < rings_.size(); ++ring) {
        if (!queued_[ring] && read_head(ring)) {
            push(Key{heads_[ring].decoded.sample.tstamp_ns, ring});
            queued_[ring] = 1;
        }
    }
    // Once nothing more is written, order no longer matters.
    if (count_reached_ || output_gone_)
        everything = true;
    // A ring filling up must make room before it drops samples, even if a
    // packet of another CPU then turns up late: late is counted, lost is gone.
    for (const PerfRingReader& ring : rings_) {
        if (ring.occupied() > ring.capacity() / 2)
            everything = true;
    }
    const uint64_t writable_until = everything ? std::numeric_limits<uint64_t>::max()
        : now_ns > options_.hold_back_ns      ? now_ns - options_.hold_back_ns
                                              : 0;
    const uint64_t accepted_before = output_.accepted();
    const uint64_t written_before = written_;
    // Batched frames go straight from their batch to the output buffer
    // while nothing but their blocks is to be written.
    const bool batch_runs = output_.writes_blocks_only();
    try {
        while (!heap_.empty()) {
            // A ring without a head may still deliver anything stamped after
            // writable_until; one with a head delivers nothing older than it.
            const bool some_ring_empty = heap_.size() < rings_.size();
            if (some_ring_empty && heap_[0].tstamp_ns > writable_until)
                break;
            const uint32_t ring = heap_[0].ring;
            Key runner_up{std::numeric_limits<uint64_t>::max(), std::numeric_limits<uint32_t>::max()};
            for (size_t child = 1; child <= 2 && child < heap_.size(); ++child) {
                if (before(heap_[child], runner_up))
                    runner_up = heap_[child];
            }
            // The newest stamp of this ring that still goes before the
            // runner-up (equal stamps: the lower ring first), and that may
            // be written now; none when even 0 may not.
            bool run_allowed = batch_runs;
            uint64_t until = runner_up.tstamp_ns;
            if (ring > runner_up.ring) {
                if (until == 0)
                    run_allowed = false;
                else
                    --until;
            }
            if (some_ring_empty)
                until = std::min(until, writable_until);
            // Keep taking from this ring while it stays ahead of the
            // runner-up: a burst from one CPU costs no heap work.
            for (;;) {
                take(ring);
                if (run_allowed && batches_[ring].left && !count_reached_ && !output_gone_)
                    take_batch_run(ring, until);
                if (!read_head(ring)) {
                    pop_top();
                    queued_[ring] = 0;
                    break;
                }
                const Key next{heads_[ring].decoded.sample.tstamp_ns, ring};
                if (before(runner_up, next) || (some_ring_empty && next.tstamp_ns > writable_until)) {
                    sift_down(next);
                    break;
                }
            }
        }
    } catch (...) {
        // Only writing in take() throws, and the ring it took from is still
        // on top; its head is consumed. Caught here, not per packet: a
        // handler around every write slows the loop measurably.
        const uint32_t ring = heap_[0].ring;
        pop_top();
        queued_[ring] = 0;
        RingTally& tally = tallies_[place_of(ring, heads_[ring].decoded.sample.ifindex)];
        // Was the packet in the output when it failed? Then output_failed()
        // finds it in the failed chunk and takes it from `written`.
        if (output_.accepted() - accepted_before > written_ - written_before)
            ++tally.written;
        else
            ++tally.unwritten;
        throw;
    }
    // Samples written by reference must be out before their space is released.
    output_.release_references();
}

void RingMerger::drain_everything()
{
    merge(0, true);
    for (uint32_t ring = 0; ring < assemblies_.size(); ++ring) {
        if (assemblies_[ring].active)
            abandon(ring);
    }
}

// Forced inline (both helpers below): once per packet, from two call sites
// each, which GCC would otherwise leave as calls.
[[gnu::always_inline]] inline bool RingMerger::read_head(uint32_t ring)
{
    PerfRingReader& reader = rings_[ring];
    if (batches_[ring].left) {
        next_of_batch(ring);
        return true;
    }
    for (;;) {
        const PerfRingReader::Record record = reader.peek(scratch(ring), corrupt_);
        if (!record.data)
            return false;
        Head& head = heads_[ring];
        decode_record_into(record.data, record.size, head.decoded);
        const DecodedRecord& decoded = head.decoded;
        if (decoded.kind == RecordKind::Sample && decoded.sample.cap_len <= XDPCAP_MAX_SAMPLE_SIZE) [[likely]] {
            if (assemblies_[ring].active) [[unlikely]]
                abandon(ring);
            head.record = record;
            head.consumes = true;
            return true;
        }
        if (decoded.kind == RecordKind::Batch && decoded.batch.frames) [[likely]] {
            if (assemblies_[ring].active) [[unlikely]]
                abandon(ring);
            BatchCursor& batch = batches_[ring];
            batch.record = record;
            batch.next = decoded.batch.data;
            batch.end = decoded.batch.data + decoded.batch.bytes;
            batch.left = decoded.batch.frames;
            next_of_batch(ring);
            return true;
        }
        // Not a packet of one record: consumed here, its bytes copied.
        reader.advance(record);
        switch (decoded.kind) {
        case RecordKind::Sample:
        case RecordKind::Part:
            if (assemble(ring, decoded)) {
                const Assembly& done = assemblies_[ring];
                head.decoded.kind = RecordKind::Sample;
                head.decoded.sample = done.sample;
                head.record = {};
                head.consumes = true;
                return true;
            }
            break;
        case RecordKind::Batch: // of no frames
            break;
        case RecordKind::Lost:
            tallies_[ring].lost_records += decoded.lost;
            break;
        case RecordKind::Invalid:
            // A refused batch: every frame it claimed, which the kernel
            // counted as sampled, counts as taken and refused.
            if (decoded.batch.frames) {
                tallies_[ring].invalid += decoded.batch.frames;
                tallies_[ring].samples += decoded.batch.frames;
            } else {
                ++tallies_[ring].invalid;
            }
            break;
        case RecordKind::Other:
            break;
        }
    }
}

[[gnu::always_inline]] inline void RingMerger::next_of_batch(uint32_t ring)
{
    BatchCursor& batch = batches_[ring];
    Head& head = heads_[ring];
    // Checked whole when the batch was read: every frame decodes.
    head.decoded.kind = RecordKind::Sample;
    batch.next += decode_batch_frame(batch.next, head.decoded.sample);
    head.record = batch.record;
    head.consumes = --batch.left == 0;
}

void RingMerger::take_batch_run(uint32_t ring, uint64_t until) noexcept
{
    BatchCursor& batch = batches_[ring];
    // A batch reassembled in scratch does not stay there (see take()).
    const bool stays_in_ring = batch.record.data != scratch(ring);
    const bool shared = !sharing_.empty();
    uint32_t place = ring;
    RingTally* tally = &tallies_[ring];
    Sample sample;
    while (batch.left && batch_frame_tstamp(batch.next) <= until) {
        const size_t length = decode_batch_frame(batch.next, sample);
        if (shared) [[unlikely]] {
            place = place_of(ring, sample.ifindex);
            tally = &tallies_[place];
        }
        const uint32_t interface = options_.interfaces.interface(place, sample.hook, sample.program);
        if (!output_.write_buffered(interface, sample, monotonic_to_realtime(sample.tstamp_ns, clock_),
                                    stays_in_ring))
            return;
        batch.next += length;
        if (--batch.left == 0)
            rings_[ring].advance(batch.record);
        ++tally->samples;
        if (!count_written(*tally, interface, sample))
            return;
    }
}

[[gnu::always_inline]] inline bool RingMerger::count_written(RingTally& tally, uint32_t interface,
                                                            const Sample& sample) noexcept
{
    ++tally.written;
    if (sample.orig_len > sample.cap_len) [[unlikely]] {
        if (sample.orig_len > options_.snaplen)
            ++tally.cut;
        if (sample.cap_len < std::min(sample.orig_len, options_.snaplen))
            ++tally.partial;
    }
    ++written_by_interface_[interface];
    ++written_;
    if (sample.tstamp_ns < newest_written_ns_)
        ++tally.out_of_order;
    else
        newest_written_ns_ = sample.tstamp_ns;
    if (options_.count && written_ >= *options_.count) {
        count_reached_ = true;
        return false;
    }
    return true;
}

bool RingMerger::assemble(uint32_t ring, const DecodedRecord& decoded)
{
    Assembly& assembly = assemblies_[ring];
    uint8_t* frame = frame_buffer(ring);
    if (decoded.kind == RecordKind::Sample) {
        if (assembly.active)
            abandon(ring);
        assembly.active = true;
        assembly.sample = decoded.sample;
        assembly.sample.data = frame;
        assembly.next_offset = XDPCAP_MAX_SAMPLE_SIZE;
        std::memcpy(frame, decoded.sample.data, XDPCAP_MAX_SAMPLE_SIZE);
        return false;
    }
    const FramePart& part = decoded.part;
    // The records of one frame follow each other in their CPU's ring; a part
    // out of that order belongs to a frame that was not written whole.
    if (!assembly.active || part.tstamp_ns != assembly.sample.tstamp_ns || part.offset != assembly.next_offset ||
        part.offset >= assembly.sample.cap_len) {
        if (assembly.active)
            abandon(ring);
        ++tallies_[ring].stray_parts;
        return false;
    }
    const uint32_t length = part_length(assembly.sample.cap_len, part.offset);
    if (part.available < length) {
        abandon(ring);
        ++tallies_[ring].invalid;
        return false;
    }
    std::memcpy(frame + part.offset, part.data, length);
    assembly.next_offset += length;
    if (assembly.next_offset < assembly.sample.cap_len)
        return false;
    assembly.active = false;
    return true;
}

void RingMerger::abandon(uint32_t ring) noexcept
{
    assemblies_[ring].active = false;
    ++tallies_[place_of(ring, assemblies_[ring].sample.ifindex)].incomplete;
}

[[gnu::always_inline]] inline void RingMerger::take(uint32_t ring)
{
    const Head& head = heads_[ring];
    if (head.consumes)
        rings_[ring].advance(head.record);
    const Sample& sample = head.decoded.sample;
    const uint32_t place = place_of(ring, sample.ifindex);
    RingTally& tally = tallies_[place];
    ++tally.samples;
    if (count_reached_) {
        ++tally.discarded;
        return;
    }
    if (output_gone_) {
        ++tally.unwritten;
        return;
    }
    // A record reassembled in scratch does not stay there, nor does a frame
    // put together from several records.
    const bool stays_in_ring = head.record.size != 0 && head.record.data != scratch(ring);
    const uint32_t interface = options_.interfaces.interface(place, sample.hook, sample.program);
    if (!output_.write(interface, sample, monotonic_to_realtime(sample.tstamp_ns, clock_), stays_in_ring))
        [[unlikely]] {
        // -W's last -G file is complete: like -c, the capture ends here.
        ++tally.discarded;
        count_reached_ = true;
        return;
    }
    count_written(tally, interface, sample);
}

void RingMerger::output_failed()
{
    output_gone_ = true;
    output_.for_each_unwritten_packet([&](uint32_t interface_id) {
        const uint32_t place = options_.interfaces.ring_of(interface_id);
        if (place < tallies_.size() && tallies_[place].written > 0) {
            --tallies_[place].written;
            ++tallies_[place].unwritten;
        }
        if (interface_id < written_by_interface_.size() && written_by_interface_[interface_id] > 0)
            --written_by_interface_[interface_id];
    });
}

void RingMerger::push(Key key) noexcept
{
    size_t i = heap_.size();
    heap_.push_back(key);
    while (i > 0) {
        const size_t parent = (i - 1) / 2;
        if (!before(key, heap_[parent]))
            break;
        heap_[i] = heap_[parent];
        i = parent;
    }
    heap_[i] = key;
}

void RingMerger::pop_top() noexcept
{
    const Key last = heap_.back();
    heap_.pop_back();
    if (!heap_.empty())
        sift_down(last);
}

void RingMerger::sift_down(Key key) noexcept
{
    const size_t n = heap_.size();
    size_t i = 0;
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= n)
            break;
        if (child + 1 < n && before(heap_[child + 1], heap_[child]))
            ++child;
        if (!before(heap_[child], key))
            break;
        heap_[i] = heap_[child];
        i = child;
    }
    heap_[i] = key;
}

} // namespace xdpcap
