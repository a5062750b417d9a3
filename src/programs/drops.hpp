// --drops: the skb:kfree_skb raw tracepoint program of one captured
// interface, writing the frames the kernel drops there into the capture
// object's rings and counters. Its link is an fd: it dies with the process.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "base/hooks.hpp"
#include "programs/owners.hpp"
#include "base/unique_fd.hpp"

struct xdpcap_drops;
struct bpf_insn;

namespace xdpcap {

class DropProgram {
public:
    struct Deleter {
        void operator()(xdpcap_drops* skel) const noexcept;
    };
    // Raises Error with one line when the kernel cannot do it.
    static DropProgram load(uint32_t snaplen, uint32_t ifindex, Direction direction, uint32_t sample_every,
                            int events_fd, int counters_fd, int sample_ticks_fd, int stage_fd, int wake_fd, int wakeups_fd,
                            bool with_filter,
                            const Attribution& attribution);
    // The per-CPU map of struct xdpcap_drop_view a Drop filter reads.
    int view_map_fd() const;
    // `body`: translated for FilterContext::Drop with view_map_fd().
    void install_filter(std::span<const bpf_insn> body, int counters_fd);
    void attach();
    // Small dropped frames join the capture hooks' batches (bpf/sample.h)
    // of at most `batch_bytes` bytes, once CaptureProgram::enable_batching()
    // has found that the kernel runs the flush.
    void enable_batching(uint32_t batch_bytes) noexcept;
    // Why dropped frames keep only their linear bytes here; nothing when
    // their page fragments are read too.
    std::optional<std::string> limitation() const { return limitation_; }
    // Drops the kernel did not run the program for: it was already running
    // on that CPU (a drop in an interrupt of a drop). 0 where unknown.
    uint64_t missed() const noexcept;

private:
    DropProgram(std::unique_ptr<xdpcap_drops, Deleter> skel, std::optional<std::string> limitation)
        : skel_(std::move(skel)), limitation_(std::move(limitation))
    {
    }
    std::unique_ptr<xdpcap_drops, Deleter> skel_;
    std::optional<std::string> limitation_;
    UniqueFd filter_;
};

struct KernelBtf;

// The one-line refusal of --drops where the drop reasons cannot be named: no
// kernel BTF, or no reasons at all (kernels before 5.17).
std::optional<std::string> drop_reasons_refusal(const KernelBtf& btf);
// Raises it for the running kernel.
void require_drop_reasons();

} // namespace xdpcap
