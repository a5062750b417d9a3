#include "ring_merge.hpp"

#include <limits>

namespace xdpcap {

RingMerger::RingMerger(std::span<PerfRingReader> rings, PacketOutput& output, ClockOffset clock, Options options)
    : rings_(rings), output_(output), clock_(clock), options_(options), heads_(rings.size()),
      queued_(rings.size(), false), scratch_(std::make_unique_for_overwrite<uint8_t[]>(rings.size() * kMaxRecordSize)),
      tallies_(rings.size())
{
    heap_.reserve(rings.size()); // never grows on the hot path
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
        if (!queued_[ring] && read_head(ring))
            push(Key{heads_[ring].sample.tstamp_ns, ring});
    }
    // Once nothing more is written, order no longer matters.
    if (count_reached_ || output_gone_)
        everything = true;
    const uint64_t writable_until = everything ? std::numeric_limits<uint64_t>::max()
        : now_ns > options_.hold_back_ns      ? now_ns - options_.hold_back_ns
                                              : 0;
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
        // Keep taking from this ring while it stays ahead of the runner-up:
        // a burst from one CPU costs no heap work.
        for (;;) {
            try {
                take(ring);
            } catch (...) {
                pop_top(); // its head is consumed
                queued_[ring] = false;
                throw;
            }
            if (!read_head(ring)) {
                pop_top();
                queued_[ring] = false;
                break;
            }
            const Key next{heads_[ring].sample.tstamp_ns, ring};
            if (before(runner_up, next) || (some_ring_empty && next.tstamp_ns > writable_until)) {
                sift_down(next);
                break;
            }
        }
    }
    // Samples written by reference must be out before their space is released.
    output_.release_references();
}

bool RingMerger::read_head(uint32_t ring)
{
    PerfRingReader& reader = rings_[ring];
    for (;;) {
        const PerfRingReader::Record record = reader.peek(scratch(ring), corrupt_);
        if (!record.data)
            return false;
        const DecodedRecord decoded = decode_record(record.data, record.size);
        if (decoded.kind == RecordKind::Sample) {
            heads_[ring] = Head{decoded.sample, record};
            queued_[ring] = true;
            return true;
        }
        // Not packets: nothing to order them with, so counted when met.
        reader.advance(record);
        if (decoded.kind == RecordKind::Lost)
            tallies_[ring].lost_records += decoded.lost;
        else if (decoded.kind == RecordKind::Invalid)
            ++tallies_[ring].invalid;
    }
}

void RingMerger::take(uint32_t ring)
{
    const Head& head = heads_[ring];
    rings_[ring].advance(head.record);
    RingTally& tally = tallies_[ring];
    ++tally.samples;
    if (count_reached_) {
        ++tally.discarded;
        return;
    }
    if (output_gone_) {
        ++tally.unwritten;
        return;
    }
    const Sample& sample = head.sample;
    // Counted before writing: if the write fails with the packet already in
    // the output, output_failed() finds it in the failed chunk.
    ++tally.written;
    const uint64_t accepted = output_.accepted();
    try {
        // A record reassembled in scratch does not stay there.
        output_.write(ring, sample, monotonic_to_realtime(sample.tstamp_ns, clock_), head.record.data != scratch(ring));
    } catch (...) {
        if (output_.accepted() == accepted) { // failed before the packet was in
            --tally.written;
            ++tally.unwritten;
        }
        throw;
    }
    if (sample.tstamp_ns < newest_written_ns_)
        ++tally.out_of_order;
    else
        newest_written_ns_ = sample.tstamp_ns;
    if (options_.count && ++written_ >= *options_.count)
        count_reached_ = true;
}

void RingMerger::output_failed()
{
    output_gone_ = true;
    output_.for_each_unwritten_packet([&](uint32_t interface_id) {
        if (interface_id < tallies_.size() && tallies_[interface_id].written > 0) {
            --tallies_[interface_id].written;
            ++tallies_[interface_id].unwritten;
        }
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
