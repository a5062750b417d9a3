// Loads the capture program from the embedded skeleton and attaches it to an
// interface through a BPF link, so the kernel detaches it if we die.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "config.hpp"
#include "unique_fd.hpp"
#include "xdpcap_abi.h"

struct xdpcap_capture;
struct bpf_insn;

namespace xdpcap {

struct SkeletonDeleter {
    void operator()(xdpcap_capture* skel) const noexcept;
};

class CaptureProgram {
public:
    // Prefers the multi-buffer (xdp.frags) program and falls back to the
    // linear one where the kernel cannot load it.
    static CaptureProgram load(uint32_t snaplen, uint32_t ifindex, bool with_filter = false);

    // Loads the translated filter as an XDP program that runs first, counts
    // every packet as seen and tail-calls the capture program for the packets
    // it keeps. attach() then attaches it instead. Raises Error with the
    // verifier's reason if the kernel refuses it.
    void install_filter(std::span<const bpf_insn> filter_body);

    // Raises Error; in auto mode tries native first, then generic.
    void attach(uint32_t ifindex, XdpMode mode, const std::string& ifname);
    void detach() noexcept { link_.reset(); }
    bool attached() const noexcept { return static_cast<bool>(link_); }
    XdpMode attached_mode() const noexcept { return attached_mode_; }
    bool multi_buffer() const noexcept { return multi_buffer_; }
    // The interface went away and the kernel released the link.
    bool link_defunct() const;

    int events_map_fd() const;
    // Indexed by CPU id, over every possible CPU.
    std::vector<xdpcap_counters> read_counters() const;

private:
    CaptureProgram(std::unique_ptr<xdpcap_capture, SkeletonDeleter> skel, bool multi_buffer)
        : skel_(std::move(skel)), multi_buffer_(multi_buffer)
    {
    }
    int program_fd() const;

    int entry_fd() const; // what attach() attaches

    std::unique_ptr<xdpcap_capture, SkeletonDeleter> skel_;
    UniqueFd filter_prog_;
    UniqueFd link_;
    bool multi_buffer_;
    XdpMode attached_mode_ = XdpMode::Auto;
};

// Raises Error naming the program when the interface already has XDP attached.
void refuse_if_xdp_attached(uint32_t ifindex, const std::string& ifname);

} // namespace xdpcap
