// -r: arbitrary bytes as a capture file, read record by record as
// xdpcap -r reads it, each packet decoded to a text line. The reader must
// refuse what is malformed with an Error (never crash, never read past the
// input), and every packet it hands out must lie within the bytes read.
#include <cstdint>
#include <memory>
#include <vector>

#include "base/error.hpp"
#include "input/capture_file.hpp"
#include "text/decode.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    xdpcap::CaptureFile file = xdpcap::CaptureFile::from_bytes(std::vector<uint8_t>(data, data + size));
    xdpcap::text::DecodeOptions options;
    std::unique_ptr<char[]> out(new char[xdpcap::text::kMaxDecodeLength]);
    try {
        for (int records = 0; records < 10000; ++records) {
            const auto record = file.next();
            if (!record)
                break;
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
            xdpcap::text::Writer writer(out.get(), xdpcap::text::kMaxDecodeLength);
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
    } catch (const xdpcap::Error&) {
    }
    return 0;
}
