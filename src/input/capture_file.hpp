// -r: a capture file read record by record, as libpcap reads it: classic
// pcap (micro- or nanosecond timestamps, either byte order) or pcapng (every
// section, either byte order, Enhanced, Simple and obsolete Packet Blocks),
// from a file or from standard input ("-"). Besides what libpcap gives, each
// packet keeps what xdpcap's own files record per packet (interface,
// direction, verdict, comment) and its block as read, for a verbatim copy.
// Malformed input raises Error naming the offset of the first record that is
// not whole, once every record before it was handed out; nothing beyond the
// bytes read is trusted. A file another program still writes is read to its
// current end, where a partial record is a truncation.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/unique_fd.hpp"

namespace xdpcap {

class CaptureFile {
public:
    static CaptureFile open(const std::string& path);
    // The bytes of a file already in memory (fuzzing, tests).
    static CaptureFile from_bytes(std::vector<uint8_t> bytes);

    struct Interface {
        std::string name; // if_name; empty when the file has none
        uint16_t link_type = 0;
        uint32_t snaplen = 0;
        // Described in a section xdpcap wrote (its shb_userappl): the name
        // is a CPU interface's, directions and verdicts are xdpcap's.
        bool written_by_xdpcap = false;
        // xdpcap's description of a container's host-side veth: the
        // container's name; empty otherwise.
        std::string container = {};
    };

    struct Packet {
        uint32_t interface_id = 0; // into interfaces(), over every section so far
        uint64_t timestamp_ns = 0; // since the epoch
        uint32_t cap_len = 0;
        uint32_t orig_len = 0;
        const uint8_t* data = nullptr; // cap_len bytes, valid until the next call to next()
        uint32_t flags = 0;            // epb_flags (direction in bits 0-1); 0 when absent
        std::optional<uint32_t> queue; // epb_queue
        uint64_t drop_count = 0;       // epb_dropcount
        std::optional<uint64_t> xdp_verdict; // epb_verdict of the eBPF XDP type
        std::string_view comment;      // the first opt_comment
        // epb_processid_threadid (-k): the socket owner's pid and thread.
        std::optional<uint32_t> pid;
        uint32_t tid = 0;
        // The first opt_comment that names a process ("proc curl:1234, ..."),
        // as xdpcap's -k writes it beside epb_processid_threadid.
        std::string_view process_comment;
    };

    // What next() found: a packet, or a block that is no packet (section or
    // interface description, statistics, ...), which a copy may keep.
    struct Record {
        enum class Kind { Packet, SectionHeader, InterfaceDescription, Statistics, Secrets, Other } kind;
        Packet packet;                 // Kind::Packet
        // Kind::Secrets: a Decryption Secrets Block's type and its secrets.
        uint32_t secrets_type = 0;
        std::span<const uint8_t> secrets;
        std::span<const uint8_t> block; // pcapng: the whole block as read; classic pcap: empty
    };

    // The next record; nothing at the end of the input.
    std::optional<Record> next();

    bool pcapng() const noexcept { return pcapng_; }
    const std::vector<Interface>& interfaces() const noexcept { return interfaces_; }
    const std::string& name() const noexcept { return name_; }
    // The input's descriptor (-1 for bytes in memory): what it is, for -r x -w x.
    int fd() const noexcept { return fd_.get(); }

private:
    CaptureFile(std::string name, UniqueFd fd, std::vector<uint8_t> bytes, bool eof);
    // Makes `n` bytes from the read position available; false at a clean
    // end of input before any of them, Error ("truncated") if the input
    // ends inside them.
    bool fill(size_t n, const char* what);
    void start();
    std::optional<Record> next_pcap();
    std::optional<Record> next_pcapng();
    // The next pcapng block whole, its type in the section's byte order;
    // nothing at a clean end of input.
    struct Block {
        uint32_t type;
        std::span<const uint8_t> bytes;
    };
    std::optional<Block> next_block();
    // An EPB, SPB or obsolete packet block's fields, then its options.
    void packet_block(const Block& block, Packet& p);
    void packet_options(std::span<const uint8_t> options, Packet& p) const;
    // Calls visit(code, value) for each option up to opt_endofopt or the
    // first that does not fit.
    template <class Visit>
    void for_each_option(std::span<const uint8_t> options, Visit&& visit) const;
    void section_header(std::span<const uint8_t> block);
    void interface_description(std::span<const uint8_t> body);
    // Before anything was read: the file is of no format xdpcap reads.
    [[noreturn]] void not_a_capture_file(const std::string& what) const;
    // Further on: every record before offset_ was whole and handed out;
    // `what` is the short word ("truncated", "bad block length").
    [[noreturn]] void broken(const std::string& what, const std::string& detail) const;

    uint16_t u16(const uint8_t* p) const noexcept;
    uint32_t u32(const uint8_t* p) const noexcept;
    uint64_t u64(const uint8_t* p) const noexcept;

    std::string name_;
    UniqueFd fd_;
    std::vector<uint8_t> buffer_;
    size_t begin_ = 0;  // the read position in buffer_
    size_t end_ = 0;    // the bytes held
    uint64_t offset_ = 0; // of begin_ in the input, for messages
    bool eof_ = false;
    bool started_ = false;
    bool pcapng_ = false;
    bool swapped_ = false; // the file's byte order is not ours
    // Classic pcap: one interface; nanosecond timestamps or micro.
    bool nanoseconds_ = false;
    // pcapng: the current section's interfaces start here in interfaces_,
    // each with its timestamp resolution in ticks per second.
    size_t section_base_ = 0;
    bool section_by_xdpcap_ = false; // the current section's shb_userappl names xdpcap
    std::vector<uint64_t> ticks_per_second_;
    std::vector<Interface> interfaces_;
    size_t consumed_ = 0; // bytes of the last record, released by the next call
};

// The container an interface description xdpcap wrote names:
// "web" of "veth1a2b (ifindex 7, container web, podman), CPU 3, ..."; empty
// for none.
std::string described_container(std::string_view description);

} // namespace xdpcap
