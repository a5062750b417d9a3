// Encodes blocks from arbitrary field values and checks the result is
// well-formed pcapng: every block 4-byte aligned, both length fields equal,
// options walkable to opt_endofopt, EPB data intact.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "output/pcapng.hpp"

namespace {

class Input {
public:
    Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
    template <class T>
    T take()
    {
        T value{};
        const size_t n = size_ < sizeof value ? size_ : sizeof value;
        std::memcpy(&value, data_, n);
        data_ += n;
        size_ -= n;
        return value;
    }
    std::string take_string()
    {
        const size_t len = take<uint8_t>() % 64;
        const size_t n = len < size_ ? len : size_;
        std::string s(reinterpret_cast<const char*>(data_), n);
        data_ += n;
        size_ -= n;
        return s;
    }
    std::vector<uint8_t> rest() const { return {data_, data_ + size_}; }

private:
    const uint8_t* data_;
    size_t size_;
};

uint32_t u32_at(const std::vector<uint8_t>& b, size_t at)
{
    uint32_t v;
    std::memcpy(&v, b.data() + at, 4);
    return v;
}

// Walks blocks and their options; aborts on any inconsistency.
void check_blocks(const std::vector<uint8_t>& bytes, size_t options_offset_of(uint32_t))
{
    size_t offset = 0;
    while (offset < bytes.size()) {
        if (bytes.size() - offset < 12)
            std::abort();
        const uint32_t type = u32_at(bytes, offset);
        const uint32_t length = u32_at(bytes, offset + 4);
        if (length % 4 != 0 || length < 12 || offset + length > bytes.size())
            std::abort();
        if (u32_at(bytes, offset + length - 4) != length)
            std::abort();
        size_t opt = offset + options_offset_of(type);
        if (type == xdpcap::pcapng::kEpbType)
            opt += xdpcap::pcapng::pad4(u32_at(bytes, offset + 20));
        const size_t end = offset + length - 4;
        bool saw_end = false;
        while (opt + 4 <= end) {
            uint16_t code, len;
            std::memcpy(&code, bytes.data() + opt, 2);
            std::memcpy(&len, bytes.data() + opt + 2, 2);
            opt += 4;
            if (code == 0) {
                saw_end = opt == end;
                break;
            }
            opt += xdpcap::pcapng::pad4(len);
        }
        if (!saw_end)
            std::abort();
        offset += length;
    }
}

size_t options_offset(uint32_t type)
{
    switch (type) {
    case xdpcap::pcapng::kShbType:
        return 24;
    case xdpcap::pcapng::kIdbType:
        return 16;
    case xdpcap::pcapng::kIsbType:
        return 20;
    case xdpcap::pcapng::kEpbType:
        return 28;
    default:
        std::abort();
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    namespace png = xdpcap::pcapng;
    Input in(data, size);
    std::vector<uint8_t> out;
    png::append_section_header(out, {in.take_string(), in.take_string(), in.take_string()});
    png::InterfaceDescription idb;
    idb.snaplen = in.take<uint32_t>();
    idb.name = in.take_string();
    idb.description = in.take_string();
    idb.filter = in.take_string();
    idb.os = in.take_string();
    idb.hardware = in.take_string();
    png::append_interface_description(out, idb);
    png::InterfaceStatistics isb;
    isb.interface_id = in.take<uint32_t>();
    isb.timestamp_ns = in.take<uint64_t>();
    isb.if_received = in.take<uint64_t>();
    if (in.take<uint8_t>() & 1)
        isb.filter_accepted = in.take<uint64_t>();
    png::append_interface_statistics(out, isb);

    const auto interface_id = in.take<uint32_t>();
    const auto timestamp = in.take<uint64_t>();
    const auto queue = in.take<uint32_t>();
    const auto drops = in.take<uint64_t>();
    const std::vector<uint8_t> frame = in.rest();
    const auto cap_len = static_cast<uint32_t>(frame.size());
    const size_t epb_at = out.size();
    const png::EnhancedPacket packet{interface_id, timestamp, cap_len, cap_len + 4, queue, drops, frame.data()};
    const size_t block_size = png::enhanced_packet_size(cap_len) + (drops ? png::kEpbDropCountSize : 0);
    if (png::enhanced_packet_size(packet) != block_size)
        std::abort();
    out.resize(epb_at + block_size, 0xcc);
    if (png::write_enhanced_packet(out.data() + epb_at, packet) != block_size)
        std::abort();
    if (cap_len && std::memcmp(out.data() + epb_at + 28, frame.data(), cap_len) != 0)
        std::abort();
    check_blocks(out, options_offset);
    return 0;
}
