// The text view's application layer: what tcpdump prints after a TCP
// segment's length for the protocols it recognises by port: the first line
// of HTTP (ports 80 and 8080), the SSH version banner (22) and DNS (53).
#pragma once

#include <cstddef>
#include <cstdint>

#include "text/decode.hpp"
#include "text/writer.hpp"

namespace xdpcap::text {

// `payload`: the captured bytes of the segment's data, `length` of them
// by the headers (captured or not). Prints nothing for other ports, and
// what tcpdump prints for a cut payload (" [|http]").
void print_tcp_application(Writer& w, uint16_t source_port, uint16_t destination_port, const uint8_t* payload,
                           size_t captured, uint32_t length, const DecodeOptions& o) noexcept;

} // namespace xdpcap::text
