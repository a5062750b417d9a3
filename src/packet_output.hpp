// Where decoded samples go: pcapng blocks or one text line per packet, both
// into a buffered Sink. A format switch, not virtual dispatch, per packet.
#pragma once

#include <cstdint>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "pcapng.hpp"
#include "record.hpp"
#include "sink.hpp"

namespace xdpcap {

class PacketOutput {
public:
    enum class Format { Pcapng, Text };

    PacketOutput(Sink sink, Format format, bool packet_buffered, std::vector<std::string> interface_names);

    // pcapng: SHB and every IDB, flushed before any packet.
    void begin(const pcapng::SectionHeader& shb, const std::vector<pcapng::InterfaceDescription>& idbs);
    void write(uint32_t interface_id, const Sample& sample, uint64_t realtime_ns)
    {
        if (format_ == Format::Pcapng)
            write_block(interface_id, sample, realtime_ns);
        else
            write_line(interface_id, sample, realtime_ns);
        if (packet_buffered_)
            sink_.flush();
    }
    // After each drained batch: pipes and terminals see packets promptly.
    void end_batch()
    {
        if (sink_.is_pipe() || format_ == Format::Text)
            sink_.flush();
    }
    void finish(const std::vector<pcapng::InterfaceStatistics>& isbs);
    void flush() { sink_.flush(); }
    // After a failed write: calls on_lost(interface_id) for every packet in
    // the chunk that did not reach the output completely.
    template <class OnLost>
    void for_each_unwritten_packet(OnLost&& on_lost) const;
    Sink& sink() noexcept { return sink_; }

private:
    void write_block(uint32_t interface_id, const Sample& sample, uint64_t realtime_ns);
    void write_line(uint32_t interface_id, const Sample& sample, uint64_t realtime_ns);

    Sink sink_;
    Format format_;
    bool packet_buffered_;
    std::vector<std::string> interface_names_;
    // Local time of day is recomputed only when the second changes.
    time_t cached_second_ = -1;
    char cached_hms_[9] = "00:00:00";
};

template <class OnLost>
void PacketOutput::for_each_unwritten_packet(OnLost&& on_lost) const
{
    if (format_ != Format::Pcapng)
        return; // text lines carry no block structure to walk
    const Sink::FailedChunk& chunk = sink_.failed_chunk();
    size_t offset = 0;
    while (offset + 12 <= chunk.size) {
        uint32_t type, length, interface_id;
        std::memcpy(&type, chunk.data + offset, 4);
        std::memcpy(&length, chunk.data + offset + 4, 4);
        std::memcpy(&interface_id, chunk.data + offset + 8, 4);
        if (length < 12 || offset + length > chunk.size)
            break;
        if (type == pcapng::kEpbType && offset + length > chunk.written)
            on_lost(interface_id);
        offset += length;
    }
}

} // namespace xdpcap
