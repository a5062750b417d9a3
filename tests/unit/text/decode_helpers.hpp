// Helpers shared by the text decoder's tests.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "text/decode.hpp"

namespace xdpcap::test {

using text::DecodeOptions;
using text::Writer;

inline std::vector<uint8_t> from_hex(const char* hex)
{
    std::vector<uint8_t> bytes;
    for (const char* p = hex; p[0] && p[1]; p += 2)
        bytes.push_back(static_cast<uint8_t>(std::stoi(std::string(p, 2), nullptr, 16)));
    return bytes;
}

// The frame cut to `caplen` bytes in a buffer of exactly that size, so
// that a read past it is a heap overflow under the sanitizers.
inline std::string decode(const std::vector<uint8_t>& frame, size_t caplen, const DecodeOptions& options = {})
{
    std::unique_ptr<uint8_t[]> captured(new uint8_t[caplen ? caplen : 1]);
    std::copy(frame.begin(), frame.begin() + static_cast<long>(caplen), captured.get());
    std::string out(xdpcap::text::decode_length_bound(static_cast<uint32_t>(caplen)) +
                        xdpcap::text::dump_length_bound(static_cast<uint32_t>(caplen)), '\0');
    Writer w(out.data(), out.size());
    xdpcap::text::format_frame(w, captured.get(), static_cast<uint32_t>(caplen), static_cast<uint32_t>(frame.size()), options);
    out.resize(w.size());
    return out;
}

} // namespace xdpcap::test
