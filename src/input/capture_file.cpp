#include "input/capture_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/error.hpp"
#include "output/pcapng_codes.hpp"

namespace xdpcap {

using namespace pcapng;

namespace {

constexpr uint32_t kPcapMagicMicro = 0xa1b2c3d4;
constexpr uint32_t kPcapMagicNano = 0xa1b23c4d;
// Far above any packet (jumbo frames, 64 KiB GSO) and any header block.
constexpr size_t kMaxBlock = 16u << 20;
constexpr size_t kReadChunk = 1u << 16;

size_t pad4(size_t n)
{
    return (n + 3) & ~size_t{3};
}

uint64_t to_ns(uint64_t ticks, uint64_t per_second)
{
    const uint64_t seconds = ticks / per_second;
    const uint64_t rest = ticks % per_second;
    // rest < per_second: the product fits in 64 bits up to 10^10 ticks a second.
    if (per_second <= 10'000'000'000ull)
        return seconds * 1'000'000'000 + rest * 1'000'000'000 / per_second;
    return seconds * 1'000'000'000 + rest / (per_second / 1'000'000'000);
}

} // namespace

CaptureFile::CaptureFile(std::string name, UniqueFd fd, std::vector<uint8_t> bytes, bool eof)
    : name_(std::move(name)), fd_(std::move(fd)), buffer_(std::move(bytes)), end_(buffer_.size()), eof_(eof)
{
}

CaptureFile CaptureFile::open(const std::string& path)
{
    if (path == "-")
        return CaptureFile("standard input", UniqueFd(::dup(STDIN_FILENO)), {}, false);
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd)
        throw Error("cannot read " + path + ": " + errno_text(errno));
    return CaptureFile(path, std::move(fd), {}, false);
}

CaptureFile CaptureFile::from_bytes(std::vector<uint8_t> bytes)
{
    return CaptureFile("input", UniqueFd(), std::move(bytes), true);
}

void CaptureFile::not_a_capture_file(const std::string& what) const
{
    throw Error(name_ + " is not a capture file xdpcap can read: " + what + " at offset " + std::to_string(offset_));
}

void CaptureFile::broken(const std::string& what, const std::string& detail) const
{
    throw Error(name_ + ": " + what + " at offset " + std::to_string(offset_) + ": " + detail);
}

bool CaptureFile::fill(size_t n, const char* what)
{
    if (end_ - begin_ >= n)
        return true;
    if (begin_ > 0) {
        std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
        end_ -= begin_;
        begin_ = 0;
    }
    if (buffer_.size() < n)
        buffer_.resize(std::max(n, kReadChunk));
    while (end_ < n && !eof_) {
        if (buffer_.size() - end_ < kReadChunk / 4)
            buffer_.resize(buffer_.size() + kReadChunk);
        const ssize_t got = ::read(fd_.get(), buffer_.data() + end_, buffer_.size() - end_);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            throw Error("cannot read " + name_ + ": " + errno_text(errno));
        if (got == 0)
            eof_ = true;
        end_ += static_cast<size_t>(got);
    }
    if (end_ >= n)
        return true;
    if (end_ == 0)
        return false;
    broken("truncated", std::string("the input ends inside ") + what + " of " + std::to_string(n) + " bytes");
}

uint16_t CaptureFile::u16(const uint8_t* p) const noexcept
{
    uint16_t v;
    std::memcpy(&v, p, 2);
    return swapped_ ? __builtin_bswap16(v) : v;
}

uint32_t CaptureFile::u32(const uint8_t* p) const noexcept
{
    uint32_t v;
    std::memcpy(&v, p, 4);
    return swapped_ ? __builtin_bswap32(v) : v;
}

uint64_t CaptureFile::u64(const uint8_t* p) const noexcept
{
    uint64_t v;
    std::memcpy(&v, p, 8);
    return swapped_ ? __builtin_bswap64(v) : v;
}

void CaptureFile::start()
{
    started_ = true;
    if (!fill(4, "the file header"))
        not_a_capture_file("the input is empty");
    uint32_t magic;
    std::memcpy(&magic, buffer_.data() + begin_, 4);
    if (magic == kShbType) {
        pcapng_ = true;
        return;
    }
    for (const bool swapped : {false, true}) {
        const uint32_t m = swapped ? __builtin_bswap32(magic) : magic;
        if (m == kPcapMagicMicro || m == kPcapMagicNano) {
            swapped_ = swapped;
            nanoseconds_ = m == kPcapMagicNano;
            fill(24, "the pcap file header");
            const uint8_t* h = buffer_.data() + begin_;
            interfaces_.push_back(Interface{"", static_cast<uint16_t>(u32(h + 20) & 0xffff), u32(h + 16)});
            begin_ += 24;
            offset_ += 24;
            return;
        }
    }
    not_a_capture_file("neither pcap nor pcapng (it starts with 0x" + [&] {
        char hex[9];
        std::snprintf(hex, sizeof hex, "%08x", __builtin_bswap32(magic));
        return std::string(hex);
    }() + ")");
}

std::optional<CaptureFile::Record> CaptureFile::next()
{
    begin_ += consumed_;
    offset_ += consumed_;
    consumed_ = 0;
    if (!started_)
        start();
    return pcapng_ ? next_pcapng() : next_pcap();
}

std::optional<CaptureFile::Record> CaptureFile::next_pcap()
{
    if (!fill(16, "a packet record header"))
        return std::nullopt;
    const uint8_t* h = buffer_.data() + begin_;
    const uint32_t cap_len = u32(h + 8);
    if (cap_len > kMaxBlock)
        broken("bad record length", "a packet record of " + std::to_string(cap_len) + " bytes");
    // Its header was there, so the record's end is too or the input is cut.
    fill(16 + size_t{cap_len}, "a packet record");
    h = buffer_.data() + begin_;
    Record r{Record::Kind::Packet, {}, 0, {}, {}};
    r.packet.timestamp_ns = uint64_t{u32(h)} * 1'000'000'000 + uint64_t{u32(h + 4)} * (nanoseconds_ ? 1 : 1000);
    // As libpcap: bytes beyond the file's snapshot length (262144 where the
    // header gives none or more) are not handed out.
    constexpr uint32_t kMaxEthernetSnaplen = 262144;
    uint32_t snaplen = interfaces_.empty() ? 0 : static_cast<uint32_t>(interfaces_.front().snaplen);
    if (snaplen == 0 || snaplen > kMaxEthernetSnaplen)
        snaplen = kMaxEthernetSnaplen;
    r.packet.cap_len = std::min(cap_len, snaplen);
    // As in the file, even when impossible: the text view says so as tcpdump.
    r.packet.orig_len = u32(h + 12);
    r.packet.data = h + 16;
    consumed_ = 16 + size_t{cap_len};
    return r;
}

template <class Visit>
void CaptureFile::for_each_option(std::span<const uint8_t> options, Visit&& visit) const
{
    for (size_t at = 0; at + 4 <= options.size();) {
        const uint16_t code = u16(options.data() + at);
        const uint16_t length = u16(options.data() + at + 2);
        if (code == kOptEndOfOpt || at + 4 + length > options.size())
            break;
        visit(code, options.subspan(at + 4, length));
        at += 4 + pad4(length);
    }
}

void CaptureFile::section_header(std::span<const uint8_t> block)
{
    if (block.size() < 28)
        broken("bad section header", "a section header block of " + std::to_string(block.size()) + " bytes");
    if (u16(block.data() + 12) != 1)
        broken("bad section header", "pcapng major version " + std::to_string(u16(block.data() + 12)));
    // A new section: its interfaces are numbered from 0 again.
    section_base_ = interfaces_.size();
    ticks_per_second_.clear();
    section_by_xdpcap_ = false;
    constexpr std::string_view kXdpcap = "xdpcap ";
    for_each_option(block.subspan(24, block.size() - 28), [&](uint16_t code, std::span<const uint8_t> value) {
        if (code == kShbUserAppl)
            section_by_xdpcap_ =
                std::string_view(reinterpret_cast<const char*>(value.data()), value.size()).starts_with(kXdpcap);
    });
}

std::string described_container(std::string_view description)
{
    static constexpr std::string_view kIfindex = " (ifindex ", kContainer = ", container ";
    const size_t open = description.find(kIfindex);
    const size_t close = open == std::string_view::npos ? open : description.find(')', open);
    if (close == std::string_view::npos)
        return {};
    const std::string_view inside = description.substr(open, close - open);
    const size_t at = inside.find(kContainer);
    if (at == std::string_view::npos)
        return {};
    const std::string_view rest = inside.substr(at + kContainer.size());
    return std::string(rest.substr(0, rest.find(", ")));
}

void CaptureFile::interface_description(std::span<const uint8_t> body)
{
    if (body.size() < 8)
        broken("bad interface description", "an interface description block too short");
    Interface iface{"", u16(body.data()), u32(body.data() + 4), section_by_xdpcap_};
    uint64_t per_second = 1'000'000;
    for_each_option(body.subspan(8), [&](uint16_t code, std::span<const uint8_t> value) {
        const auto* text = reinterpret_cast<const char*>(value.data());
        if (code == kIfName)
            iface.name.assign(text, strnlen(text, value.size()));
        else if (code == kIfDescription && iface.written_by_xdpcap)
            iface.container = described_container(std::string_view(text, strnlen(text, value.size())));
        else if (code == kIfTsresol && !value.empty()) {
            const uint8_t resol = value[0];
            const unsigned exponent = resol & 0x7f;
            if ((resol & 0x80) ? exponent > 63 : exponent > 19)
                broken("bad interface description", "if_tsresol " + std::to_string(resol));
            per_second = 1;
            for (unsigned i = 0; i < exponent; ++i)
                per_second *= (resol & 0x80) ? 2 : 10;
        }
    });
    interfaces_.push_back(std::move(iface));
    ticks_per_second_.push_back(per_second);
}

std::optional<CaptureFile::Block> CaptureFile::next_block()
{
    if (!fill(12, "a block header"))
        return std::nullopt;
    const uint8_t* h = buffer_.data() + begin_;
    uint32_t type;
    std::memcpy(&type, h, 4);
    if (type == kShbType) {
        uint32_t bom;
        std::memcpy(&bom, h + 8, 4);
        if (bom == kByteOrderMagic)
            swapped_ = false;
        else if (bom == __builtin_bswap32(kByteOrderMagic))
            swapped_ = true;
        else
            broken("bad section header", "a section header without the byte-order magic");
    } else {
        type = u32(h);
    }
    const uint32_t length = u32(h + 4);
    if (length < 12 || length % 4 != 0 || length > kMaxBlock)
        broken("bad block length", "a block of length " + std::to_string(length));
    fill(length, "a block");
    h = buffer_.data() + begin_;
    if (u32(h + length - 4) != length)
        broken("bad block length", "a block whose trailing length differs from its leading one");
    consumed_ = length;
    return Block{type, std::span<const uint8_t>(h, length)};
}

std::optional<CaptureFile::Record> CaptureFile::next_pcapng()
{
    const std::optional<Block> block = next_block();
    if (!block)
        return std::nullopt;
    Record r{Record::Kind::Other, {}, 0, {}, block->bytes};
    switch (block->type) {
    case kShbType:
        section_header(block->bytes);
        r.kind = Record::Kind::SectionHeader;
        break;
    case kIdbType:
        interface_description(block->bytes.subspan(8, block->bytes.size() - 12));
        r.kind = Record::Kind::InterfaceDescription;
        break;
    case kIsbType:
        r.kind = Record::Kind::Statistics;
        break;
    case kDsbType:
        // Type and length, then the secrets; a length beyond the block
        // leaves it an unknown block, copied as it is.
        if (block->bytes.size() >= 20) {
            const uint32_t length = u32(block->bytes.data() + 12);
            if (length <= block->bytes.size() - 20) {
                r.kind = Record::Kind::Secrets;
                r.secrets_type = u32(block->bytes.data() + 8);
                r.secrets = block->bytes.subspan(16, length);
            }
        }
        break;
    case kEpbType:
    case kObsoletePacketType:
    case kSpbType:
        packet_block(*block, r.packet);
        r.kind = Record::Kind::Packet;
        break;
    default:
        break;
    }
    return r;
}

void CaptureFile::packet_block(const Block& block, Packet& p)
{
    const size_t length = block.bytes.size();
    const std::span<const uint8_t> body = block.bytes.subspan(8, length - 12);
    size_t fixed;
    uint32_t local_id;
    if (block.type == kSpbType) {
        if (body.size() < 4)
            broken("bad packet block", "a simple packet block too short");
        local_id = 0;
        p.orig_len = u32(body.data());
        fixed = 4;
        p.cap_len = static_cast<uint32_t>(std::min<size_t>(p.orig_len, body.size() - fixed));
    } else {
        if (body.size() < 20)
            broken("bad packet block", "a packet block too short");
        local_id = block.type == kEpbType ? u32(body.data()) : u16(body.data());
        const uint64_t ticks = (uint64_t{u32(body.data() + 4)} << 32) | u32(body.data() + 8);
        p.cap_len = u32(body.data() + 12);
        p.orig_len = u32(body.data() + 16);
        fixed = 20;
        if (p.cap_len > body.size() - fixed)
            broken("bad packet block",
                   "a packet of " + std::to_string(p.cap_len) + " bytes in a block of " + std::to_string(length));
        if (local_id < ticks_per_second_.size())
            p.timestamp_ns = to_ns(ticks, ticks_per_second_[local_id]);
        if (block.type == kObsoletePacketType)
            p.drop_count = u16(body.data() + 2);
    }
    if (local_id >= ticks_per_second_.size())
        broken("bad packet block",
               "a packet of interface " + std::to_string(local_id) + ", which the section does not describe");
    p.interface_id = static_cast<uint32_t>(section_base_ + local_id);
    p.data = body.data() + fixed;
    const size_t snap = interfaces_[p.interface_id].snaplen;
    if (block.type == kSpbType && snap && p.cap_len > snap)
        p.cap_len = static_cast<uint32_t>(snap);
    // A Simple Packet Block has no options.
    if (block.type != kSpbType && fixed + pad4(p.cap_len) < body.size())
        packet_options(body.subspan(fixed + pad4(p.cap_len)), p);
}

void CaptureFile::packet_options(std::span<const uint8_t> options, Packet& p) const
{
    for_each_option(options, [&](uint16_t code, std::span<const uint8_t> value) {
        const size_t length = value.size();
        if (code == kOptComment) {
            const std::string_view text(reinterpret_cast<const char*>(value.data()), length);
            if (p.comment.empty())
                p.comment = text;
            if (p.process_comment.empty() && text.starts_with("proc "))
                p.process_comment = text;
        } else if (code == kEpbProcessIdThreadId && length >= 8) {
            p.pid = u32(value.data());
            p.tid = u32(value.data() + 4);
        } else if (code == kEpbFlags && length >= 4) {
            p.flags = u32(value.data());
        } else if (code == kEpbDropCount && length >= 8) {
            p.drop_count = u64(value.data());
        } else if (code == kEpbQueue && length >= 4) {
            p.queue = u32(value.data());
        } else if (code == kEpbVerdict && length >= 9 && value[0] == kVerdictEbpfXdp) {
            p.xdp_verdict = u64(value.data() + 1);
        }
    });
}

} // namespace xdpcap
