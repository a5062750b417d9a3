#include "output/packet_output.hpp"

#include <charconv>
#include <cstring>

#include <linux/bpf.h>

namespace xdpcap {

PacketOutput::PacketOutput(Sink sink, Format format, bool packet_buffered, std::vector<std::string> interface_names)
    : sink_(std::move(sink)), format_(format), packet_buffered_(packet_buffered),
      interface_names_(std::move(interface_names))
{
    // More lines than a buffer can hold: never reallocated per packet.
    if (format_ == Format::Text)
        line_owners_.reserve(Sink::kDefaultBufferSize / 32);
}

void PacketOutput::begin(const pcapng::SectionHeader& shb, const std::vector<pcapng::InterfaceDescription>& idbs)
{
    sink_.start();
    if (format_ != Format::Pcapng)
        return;
    header_.clear();
    pcapng::append_section_header(header_, shb);
    for (const auto& idb : idbs)
        pcapng::append_interface_description(header_, idb);
    sink_.append(header_);
    sink_.flush();
}

void PacketOutput::rotate(RotationPlan plan, std::optional<FileCommand> command)
{
    size_limit_ = plan.size_limit();
    rotate_at_ns_ = plan.rotate_at_ns();
    plan_.emplace(std::move(plan));
    command_ = std::move(command);
}

void PacketOutput::finish(const std::vector<pcapng::InterfaceStatistics>& isbs)
{
    if (!file_open_)
        return;
    if (plan_) {
        close_file(isbs);
        return;
    }
    if (format_ == Format::Pcapng) {
        std::vector<uint8_t> blocks;
        for (const auto& isb : isbs)
            pcapng::append_interface_statistics(blocks, isb);
        sink_.append(blocks);
    }
    sink_.flush();
}

void PacketOutput::close_file(const std::vector<pcapng::InterfaceStatistics>& isbs)
{
    std::vector<uint8_t> blocks;
    for (const auto& isb : isbs)
        pcapng::append_interface_statistics(blocks, isb);
    sink_.append(blocks);
    // Whatever happens from here, nothing more goes into this file.
    file_open_ = false;
    size_limit_ = rotate_at_ns_ = 0;
    const std::string name = sink_.name();
    sink_.close();
    if (command_)
        command_->run(name);
}

bool PacketOutput::next_file(uint64_t realtime_ns, uint32_t pending_interface)
{
    if (!plan_)
        return true; // a packet stamped at the end of time: nothing to rotate
    if (!file_open_)
        return false;
    const uint64_t size = sink_.bytes();
    close_file(file_statistics_ ? file_statistics_(pending_interface) : std::vector<pcapng::InterfaceStatistics>{});
    if (plan_->advance(realtime_ns, size) == RotationPlan::Next::Stop) {
        file_limit_reached_ = true;
        return false;
    }
    sink_.reopen(plan_->current());
    sink_.append(header_);
    file_open_ = true;
    size_limit_ = plan_->size_limit();
    rotate_at_ns_ = plan_->rotate_at_ns();
    return true;
}

void PacketOutput::write_block(uint32_t interface_id, const Sample& sample, uint64_t realtime_ns,
                               bool stays_until_release)
{
    const bool exit = sample.hook == XDPCAP_HOOK_FEXIT;
    const pcapng::EnhancedPacket packet{interface_id,    realtime_ns,         sample.cap_len, sample.orig_len,
                                       sample.rx_queue,  sample.drops_before, sample.data,    sample.direction,
                                       exit,             sample.verdict};
    if (stays_until_release && sample.cap_len >= kReferMinLength) {
        const size_t tail = pcapng::enhanced_packet_tail_size(sample.cap_len, exit);
        sink_.reserve_around_reference(pcapng::kEpbHeadSize + tail);
        pcapng::write_enhanced_packet_head(sink_.reserve(pcapng::kEpbHeadSize), packet);
        sink_.commit(pcapng::kEpbHeadSize);
        sink_.refer(sample.data, sample.cap_len);
        pcapng::write_enhanced_packet_tail(sink_.reserve(tail), packet);
        sink_.commit(tail);
        return;
    }
    const size_t size = pcapng::enhanced_packet_size(sample.cap_len, exit);
    uint8_t* out = sink_.reserve(size);
    sink_.commit(pcapng::write_enhanced_packet(out, packet));
}

const char* xdp_action_name(uint32_t action) noexcept
{
    switch (action) {
    case XDP_ABORTED:
        return "XDP_ABORTED";
    case XDP_DROP:
        return "XDP_DROP";
    case XDP_PASS:
        return "XDP_PASS";
    case XDP_TX:
        return "XDP_TX";
    case XDP_REDIRECT:
        return "XDP_REDIRECT";
    default:
        return nullptr;
    }
}

namespace {

char* put_text(char* p, const char* text, size_t n)
{
    std::memcpy(p, text, n);
    return p + n;
}

char* put_number(char* p, uint64_t value)
{
    return std::to_chars(p, p + 20, value).ptr;
}

char* put_padded(char* p, uint64_t value, int width)
{
    for (int i = width - 1; i >= 0; --i) {
        p[i] = static_cast<char>('0' + value % 10);
        value /= 10;
    }
    return p + width;
}

} // namespace

// "HH:MM:SS.nnnnnnnnn eth0@cpu3 In rxq 0 len 1514 cap 1514\n"; sent
// packets say "Out txq N"; trace-mode exit records end with the verdict
// ("XDP_DROP", or "verdict N" for a value that is no XDP action).
void PacketOutput::write_line(uint32_t interface_id, const Sample& sample, uint64_t realtime_ns)
{
    const auto second = static_cast<time_t>(realtime_ns / 1'000'000'000ull);
    if (second != cached_second_) {
        tm local{};
        localtime_r(&second, &local);
        char* p = cached_hms_;
        p = put_padded(p, static_cast<uint64_t>(local.tm_hour), 2);
        *p++ = ':';
        p = put_padded(p, static_cast<uint64_t>(local.tm_min), 2);
        *p++ = ':';
        put_padded(p, static_cast<uint64_t>(local.tm_sec), 2);
        cached_second_ = second;
    }
    const std::string& name = interface_names_[interface_id];
    char* const start = reinterpret_cast<char*>(sink_.reserve(96 + name.size()));
    // After reserve(), which may have flushed: this line belongs to the next chunk.
    if (sink_.flushes() != owners_since_flush_) {
        line_owners_.clear();
        owners_since_flush_ = sink_.flushes();
    }
    line_owners_.push_back(interface_id);
    char* p = put_text(start, cached_hms_, 8);
    *p++ = '.';
    p = put_padded(p, realtime_ns % 1'000'000'000ull, 9);
    *p++ = ' ';
    p = put_text(p, name.data(), name.size());
    if (sample.direction == XDPCAP_DIR_EGRESS)
        p = put_text(p, " Out txq ", 9);
    else
        p = put_text(p, " In rxq ", 8);
    p = put_number(p, sample.rx_queue);
    p = put_text(p, " len ", 5);
    p = put_number(p, sample.orig_len);
    p = put_text(p, " cap ", 5);
    p = put_number(p, sample.cap_len);
    if (sample.hook == XDPCAP_HOOK_FEXIT) {
        if (const char* verdict = xdp_action_name(sample.verdict)) {
            *p++ = ' ';
            p = put_text(p, verdict, std::strlen(verdict));
        } else {
            p = put_text(p, " verdict ", 9);
            p = put_number(p, sample.verdict);
        }
    }
    *p++ = '\n';
    sink_.commit(static_cast<size_t>(p - start));
}

} // namespace xdpcap
