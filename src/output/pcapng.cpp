#include "output/pcapng.hpp"

#include <cstring>

namespace xdpcap::pcapng {

namespace {

template <class T>
void put(std::vector<uint8_t>& out, T value)
{
    const auto* bytes = reinterpret_cast<const uint8_t*>(&value);
    out.insert(out.end(), bytes, bytes + sizeof value);
}

void put_padding(std::vector<uint8_t>& out)
{
    out.resize(pad4(out.size()), 0);
}

void put_option(std::vector<uint8_t>& out, uint16_t code, const void* value, size_t length)
{
    put<uint16_t>(out, code);
    put<uint16_t>(out, static_cast<uint16_t>(length));
    const auto* bytes = static_cast<const uint8_t*>(value);
    out.insert(out.end(), bytes, bytes + length);
    put_padding(out);
}

void put_string_option(std::vector<uint8_t>& out, uint16_t code, const std::string& value)
{
    if (!value.empty())
        put_option(out, code, value.data(), std::min<size_t>(value.size(), 0xffff));
}

template <class T>
void put_value_option(std::vector<uint8_t>& out, uint16_t code, T value)
{
    put_option(out, code, &value, sizeof value);
}

// Timestamps are two u32 words, high first, in section byte order.
void put_timestamp_option(std::vector<uint8_t>& out, uint16_t code, uint64_t ns)
{
    const uint32_t words[2] = {static_cast<uint32_t>(ns >> 32), static_cast<uint32_t>(ns)};
    put_option(out, code, words, sizeof words);
}

void put_end_of_options(std::vector<uint8_t>& out)
{
    put<uint16_t>(out, kOptEndOfOpt);
    put<uint16_t>(out, 0);
}

// Fills in both length fields once the body is complete.
class BlockScope {
public:
    BlockScope(std::vector<uint8_t>& out, uint32_t type) : out_(out), start_(out.size())
    {
        put<uint32_t>(out_, type);
        put<uint32_t>(out_, 0);
    }
    ~BlockScope()
    {
        const auto length = static_cast<uint32_t>(out_.size() - start_ + 4);
        std::memcpy(out_.data() + start_ + 4, &length, sizeof length);
        put<uint32_t>(out_, length);
    }
    BlockScope(const BlockScope&) = delete;
    BlockScope& operator=(const BlockScope&) = delete;

private:
    std::vector<uint8_t>& out_;
    size_t start_;
};


} // namespace

void append_section_header(std::vector<uint8_t>& out, const SectionHeader& shb)
{
    BlockScope block(out, kShbType);
    put<uint32_t>(out, kByteOrderMagic);
    put<uint16_t>(out, 1); // major
    put<uint16_t>(out, 0); // minor
    put<int64_t>(out, -1); // section length unknown: we stream
    put_string_option(out, kShbHardware, shb.hardware);
    put_string_option(out, kShbOs, shb.os);
    put_string_option(out, kShbUserAppl, shb.user_application);
    put_end_of_options(out);
}

void append_interface_description(std::vector<uint8_t>& out, const InterfaceDescription& idb)
{
    BlockScope block(out, kIdbType);
    put<uint16_t>(out, idb.link_type);
    put<uint16_t>(out, 0);
    put<uint32_t>(out, idb.snaplen);
    put_string_option(out, kIfName, idb.name);
    put_string_option(out, kIfDescription, idb.description);
    put_value_option<uint8_t>(out, kIfTsresol, kTsresolNanoseconds);
    if (!idb.filter.empty()) {
        std::vector<uint8_t> value{kFilterLibpcapString};
        value.insert(value.end(), idb.filter.begin(), idb.filter.end());
        put_option(out, kIfFilter, value.data(), value.size());
    }
    put_string_option(out, kIfOs, idb.os);
    put_string_option(out, kIfHardware, idb.hardware);
    put_end_of_options(out);
}

void append_interface_statistics(std::vector<uint8_t>& out, const InterfaceStatistics& isb)
{
    BlockScope block(out, kIsbType);
    put<uint32_t>(out, isb.interface_id);
    put<uint32_t>(out, static_cast<uint32_t>(isb.timestamp_ns >> 32));
    put<uint32_t>(out, static_cast<uint32_t>(isb.timestamp_ns));
    put_string_option(out, kOptComment, isb.comment);
    put_timestamp_option(out, kIsbStartTime, isb.start_ns);
    put_timestamp_option(out, kIsbEndTime, isb.end_ns);
    put_value_option<uint64_t>(out, kIsbIfRecv, isb.if_received);
    put_value_option<uint64_t>(out, kIsbIfDrop, isb.dropped);
    if (isb.filter_accepted)
        put_value_option<uint64_t>(out, kIsbFilterAccept, *isb.filter_accepted);
    put_value_option<uint64_t>(out, kIsbOsDrop, isb.dropped);
    put_value_option<uint64_t>(out, kIsbUsrDeliv, isb.user_delivered);
    put_end_of_options(out);
}

std::vector<InterfaceStatistics> statistics_since(const std::vector<InterfaceStatistics>& now,
                                                  const std::vector<InterfaceStatistics>& then)
{
    if (then.size() != now.size())
        return now;
    const auto since = [](uint64_t a, uint64_t b) { return a > b ? a - b : 0; };
    std::vector<InterfaceStatistics> out = now;
    for (size_t i = 0; i < out.size(); ++i) {
        InterfaceStatistics& isb = out[i];
        const InterfaceStatistics& before = then[i];
        isb.if_received = since(isb.if_received, before.if_received);
        if (isb.filter_accepted && before.filter_accepted)
            isb.filter_accepted = since(*isb.filter_accepted, *before.filter_accepted);
        isb.dropped = since(isb.dropped, before.dropped);
        isb.user_delivered = since(isb.user_delivered, before.user_delivered);
    }
    return out;
}

size_t write_enhanced_packet(uint8_t* out, const EnhancedPacket& pkt) noexcept
{
    const size_t block_size = enhanced_packet_size(pkt);
    uint8_t* p = write_enhanced_packet_head(out, pkt, block_size);
    if (pkt.cap_len)
        std::memcpy(p, pkt.data, pkt.cap_len);
    write_enhanced_packet_tail(p + pkt.cap_len, pkt, block_size);
    return block_size;
}

} // namespace xdpcap::pcapng
