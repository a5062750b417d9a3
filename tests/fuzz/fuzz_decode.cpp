// Feeds arbitrary bytes to the text decoder as a captured frame: the first
// four bytes choose the options (the verbosity and the link-level header
// too) and how much longer than captured the frame was; the rest is the frame. The decoder must never read past the captured
// bytes (the sanitizers watch a buffer of exactly that size) nor write past
// the room it was given.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "text/decode.hpp"
#include "text/tcp_flows.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size < 4)
        return 0;
    xdpcap::text::DecodeOptions options;
    options.quick = data[0] & 1;
    options.link_header = data[0] & 2;
    const uint8_t dump = (data[0] >> 2) & 3; // none, hex, hex+ASCII, ASCII
    const uint8_t level = (data[0] & 16) ? 2 : 1;
    options.hex = dump == 1 ? level : 0;
    options.hex_ascii = dump == 2 ? level : 0;
    options.ascii = dump == 3 ? level : 0;
    // Relative TCP numbers (bit 5), with a table that lives across inputs.
    static xdpcap::text::TcpFlows flows;
    options.tcp_flows = (data[0] & 32) ? &flows : nullptr;
    options.verbose = data[0] >> 6; // -v to -vvv
    options.checksum_not_ready = data[3] & 0x80;
    // Bits 5-6: the link-level header (Ethernet, SLL, SLL2; 3 is Ethernet too).
    const uint8_t link = (data[3] >> 5) & 3;
    options.link_type = link == 1 ? xdpcap::text::LinkType::LinuxSll
        : link == 2              ? xdpcap::text::LinkType::LinuxSll2
                                 : xdpcap::text::LinkType::Ethernet;
    const uint32_t missing = uint32_t{data[1]} << 8 | data[2];
    const uint8_t room_choice = data[3];

    const auto caplen = static_cast<uint32_t>(size - 4);
    std::unique_ptr<uint8_t[]> frame(new uint8_t[caplen]);
    std::memcpy(frame.get(), data + 4, caplen);

    // The room PacketOutput gives, or (rarely) much less, to exercise cuts.
    const size_t full = xdpcap::text::decode_length_bound(caplen) + xdpcap::text::dump_length_bound(caplen);
    const size_t room = room_choice < 16 ? room_choice * 8u : full;
    std::unique_ptr<char[]> out(new char[room + 1]);
    out[room] = '\x5a';
    xdpcap::text::Writer writer(out.get(), room);
    xdpcap::text::format_frame(writer, frame.get(), caplen, caplen + missing, options);
    if (writer.size() > room || out[room] != '\x5a')
        std::abort();
    // With the full room nothing is cut: the bound holds.
    if (room == full && writer.full())
        std::abort();
    return 0;
}
