// -r: arbitrary bytes as a capture file (pcap or pcapng, of Ethernet, SLL
// or SLL2 frames), read record by record as xdpcap -r reads it, each packet
// decoded to a text line. The reader must refuse what is malformed with an
// Error (never crash, never read past the input), and every packet it
// hands out must lie within the bytes read. A broken file is read up to the
// break: the offset its Error names lies within the input, and the input
// cut there reads cleanly to the same records.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "input/capture_file.hpp"
#include "text/decode.hpp"

namespace {

constexpr int kMaxRecords = 10000;

struct Reading {
    int records = 0;
    bool ended = false; // at a clean end of input
    std::string error;
};

Reading read_all(std::vector<uint8_t> bytes, char* out)
{
    xdpcap::CaptureFile file = xdpcap::CaptureFile::from_bytes(std::move(bytes));
    xdpcap::text::DecodeOptions options;
    Reading reading;
    try {
        for (; reading.records < kMaxRecords; ++reading.records) {
            const auto record = file.next();
            if (!record) {
                reading.ended = true;
                break;
            }
            if (record->kind != xdpcap::CaptureFile::Record::Kind::Packet)
                continue;
            const auto& p = record->packet;
            if (p.interface_id >= file.interfaces().size())
                __builtin_trap();
            // A copy of exactly the captured bytes: the sanitizers see any
            // read beyond them.
            std::unique_ptr<uint8_t[]> frame(new uint8_t[p.cap_len + 1]);
            for (uint32_t i = 0; i < p.cap_len; ++i)
                frame[i] = p.data[i];
            xdpcap::text::Writer writer(out, xdpcap::text::kMaxDecodeLength);
            // As the text view: an impossible header is said, not decoded.
            // Each packet by its interface's link-level header, as -r
            // (which refuses others: those are decoded as Ethernet here).
            const uint16_t link_type = file.interfaces()[p.interface_id].link_type;
            options.link_type = link_type == 113 ? xdpcap::text::LinkType::LinuxSll
                : link_type == 276              ? xdpcap::text::LinkType::LinuxSll2
                                                : xdpcap::text::LinkType::Ethernet;
            if (!xdpcap::text::put_invalid_header(writer, p.cap_len, p.orig_len))
                xdpcap::text::format_frame(writer, frame.get(), p.cap_len, p.orig_len, options);
        }
    } catch (const xdpcap::Error& e) {
        reading.error = e.what();
    }
    return reading;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    std::unique_ptr<char[]> out(new char[xdpcap::text::kMaxDecodeLength]);
    const Reading whole = read_all(std::vector<uint8_t>(data, data + size), out.get());
    if (whole.error.empty())
        return 0;
    // One line, naming where.
    if (whole.error.find('\n') != std::string::npos)
        __builtin_trap();
    const size_t at = whole.error.find(" at offset ");
    if (at == std::string::npos)
        __builtin_trap();
    const unsigned long long offset = std::strtoull(whole.error.c_str() + at + 11, nullptr, 10);
    if (offset > size)
        __builtin_trap();
    // Every record before the break was whole: the input cut at the break
    // ends cleanly after the same records (a file with no record whole
    // has nothing to compare).
    if (offset == 0 || whole.records == 0)
        return 0;
    const Reading cut = read_all(std::vector<uint8_t>(data, data + offset), out.get());
    if (!cut.ended || !cut.error.empty() || cut.records != whole.records)
        __builtin_trap();
    return 0;
}
