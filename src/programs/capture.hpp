// Loads the capture programs from the embedded skeleton and attaches them to
// an interface: XDP (through a BPF link, so the kernel detaches it if we die)
// or tc ingress for received frames, and tc egress for sent frames
// (tc_hook.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/hooks.hpp"
#include "programs/drops.hpp"
#include "programs/receive_hook.hpp"
#include "programs/tc_hook.hpp"
#include "programs/trace.hpp"
#include "programs/rx_meta.hpp"
#include "base/unique_fd.hpp"
#include "programs/xdp_inventory.hpp"
#include "xdpcap_abi.h"

struct xdpcap_capture;
struct bpf_insn;
struct ring_buffer;

namespace xdpcap {

struct SkeletonDeleter {
    void operator()(xdpcap_capture* skel) const noexcept;
};

// Unmaps the staging entries' view.
struct StageUnmapper {
    size_t bytes = 0;
    void operator()(void* base) const noexcept;
};

// Frees libbpf's reader of the wakeups' ring buffer.
struct WakeupsDeleter {
    void operator()(ring_buffer* rb) const noexcept;
};

// The maps every interface's programs share when one set of per-CPU rings
// serves many interfaces (-i any): the rings' array, the staging entries
// (so each CPU's ring gets its frames in the order they came, whatever the
// interface), the wake flag and its ring buffer, and the counters and
// --sample ticks, in which each interface has a slot of its own.
struct SharedMaps {
    UniqueFd events, counters, stage, sample_ticks, wake, wakeups;
};

struct Sharing {
    uint32_t slot = 0;  // this interface's
    uint32_t slots = 1; // how many the shared maps hold
    const SharedMaps* maps = nullptr; // none for the first interface: its maps become the shared ones
    // Its first key in the shared counters and --sample ticks.
    uint32_t counters_base() const noexcept { return slot * XDPCAP_COUNTERS_ENTRIES; }
};

class CaptureProgram {
public:
    // Loads the programs of the hooks `direction` needs. Prefers the
    // multi-buffer (xdp.frags) XDP program and falls back to the linear one
    // where the kernel cannot load it.
    // `receive` None (trace mode): received frames come from load_trace()'s
    // programs instead. `trace_programs`: how many programs load_trace()
    // will trace. `sample_every` N > 1: each hook keeps one packet in N of
    // those its filter keeps, counted over all CPUs.
    // `sharing`: the programs write into maps shared with other interfaces
    // (not with trace mode or --drops).
    // `rx_reads`: what a native XDP hook asks the driver for (rx_meta.hpp);
    // without a filter the XDP capture program is then also loaded bound
    // to the device, to read it itself.
    static CaptureProgram load(uint32_t snaplen, uint32_t ifindex, bool with_filter = false,
                               Direction direction = Direction::In, ReceiveAt receive = ReceiveAt::Xdp,
                               uint32_t trace_programs = 0, uint32_t sample_every = 1,
                               const Attribution& attribution = {}, std::optional<Sharing> sharing = {},
                               RxReads rx_reads = {});
    // The maps to share with the interfaces loaded after this one (before
    // release_object()).
    SharedMaps shared_maps() const;
    // Trace mode: loads fentry (`entry`) and fexit (`exit`) programs on each
    // target; attach() attaches them.
    // `filter` as for TracePrograms::load().
    void load_trace(const std::vector<XdpProgramInfo>& targets, bool entry, bool exit,
                    std::span<const bpf_insn> filter = {});
    bool tracing() const noexcept { return traced_; }
    // --drops: loads the kfree_skb program for this interface (before
    // install_drop_filter()); attach() then attaches it after the hooks.
    void load_drops(Direction direction, bool with_filter);
    bool captures_drops() const noexcept { return drops_loaded_; }
    // The map a Hook::Drop filter reads.
    int drop_view_map_fd() const { return drops_->view_map_fd(); }
    // What the tracing programs cannot read here (the pages of fragments),
    // one line each; empty when they read every frame whole.
    std::vector<std::string> page_limitations() const
    {
        std::vector<std::string> lines;
        if (trace_ && trace_->limitation())
            lines.push_back(*trace_->limitation());
        if (drops_ && drops_->limitation())
            lines.push_back(*drops_->limitation());
        return lines;
    }
    void install_drop_filter(std::span<const bpf_insn> filter_body);

    // The capture programs are Hook::Xdp's and Hook::TcIngress's, which take
    // received frames (one of them is attached), and Hook::TcEgress's, which
    // takes sent ones. Whether the hook's program is loaded, to be attached
    // or held in reserve.
    bool loads(Hook hook) const noexcept;

    // Loads the translated filter as a program of the hook's type that runs
    // first, counts every packet as seen and tail-calls the hook's capture
    // program for the packets it keeps. attach() then attaches it instead.
    // Raises Error with the verifier's reason if the kernel refuses it.
    void install_filter(Hook hook, std::span<const bpf_insn> filter_body);

    // Attaches every loaded hook. Raises Error; in auto mode XDP tries native
    // first, then generic (ReceiveAt::NativeXdpElseTc: then tc ingress instead). Natively, on kernels with the XDP RX metadata
    // kfuncs, the capture program loaded bound to the device attaches, or
    // with a filter a device-bound program runs in front of it
    // (rx_meta.hpp); where the driver refuses either, the capture program
    // runs alone and rx_metadata_failure() says why.
    void attach(uint32_t ifindex, XdpMode mode, const std::string& ifname);
    void detach() noexcept
    {
        link_.reset();
        rx_front_.reset();
        kept_.bound.reset();
        egress_.reset();
        tc_ingress_.reset();
        trace_.reset();
        if (drops_)
            drop_misses_ = drops_->missed();
        drops_.reset();
    }
    // --drops: drops the kernel skipped because the drop program was
    // already running on that CPU.
    uint64_t drop_misses() const noexcept { return drops_ ? drops_->missed() : drop_misses_; }
    // The per-CPU map of xdpcap_rx_meta the front program fills; -1 where
    // the kernel has no RX metadata kfunc to fill it.
    int rx_meta_map_fd() const;
    // The same for an XDP filter's wire view: -1 too where no VLAN tag can
    // be in it (no VLAN kfunc), so the filter reads the frame alone.
    int rx_vlan_view_map_fd() const;
    // Once attached: received frames carry the VLAN tag the NIC took out /
    // the NIC's RSS hash, as the driver provides them.
    bool restores_rx_vlan() const noexcept { return driver_reads().vlan; }
    bool reads_rx_hash() const noexcept { return driver_reads().hash; }
    // Why there is no RX metadata program in front: empty when there is one,
    // or where none was tried (generic mode, no kfunc, trace mode).
    const std::string& rx_metadata_failure() const noexcept { return rx_front_failure_; }
    XdpMode attached_mode() const noexcept { return attached_mode_; }
    bool multi_buffer() const noexcept { return multi_buffer_; }
    // Received frames (at either hook, or traced) / sent frames.
    bool receives() const noexcept { return ingress_; }
    bool sends() const noexcept { return egress_loaded_; }
    // Once attached: received frames are taken at tc ingress, not XDP.
    bool receives_at_tc() const noexcept { return tc_ingress_.has_value(); }
    // "tcx" or "clsact" once egress (ingress) is attached at tc.
    const char* egress_mechanism() const noexcept;
    const char* ingress_mechanism() const noexcept;
    // The interface went away and the kernel released the hooks.
    bool link_defunct() const;

    // Several small frames per perf record (bpf/sample.h): tried once
    // loaded, by running the flush program on this CPU. Batches fit rings
    // of `ring_bytes` several times over. Empty when the hooks now stage
    // frames; else why each frame goes out on its own. After load_trace()
    // and load_drops(): their programs stage into the same entries.
    std::string enable_batching(size_t ring_bytes);
    bool batching() const noexcept { return batching_; }
    // Frames staged on `cpu` and not yet emitted: a hint read from the
    // mapped staging entries, no system call.
    uint32_t staged(int cpu) const noexcept;
    // The timestamp of the oldest frame staged on `cpu`, or UINT64_MAX
    // when none is: the CPU's ring may still deliver frames that old.
    uint64_t staged_since(int cpu) const noexcept;
    // Runs the flush program on `cpu`; false when the kernel would not.
    bool flush(int cpu) const noexcept;
    int stage_map_fd() const;

    // The loop's sleep (bpf/sample.h wake_loop): with `sleeping` set, the
    // next frame sampled clears it and puts a record in the ring buffer
    // whose fd is wakeups_fd(). False when that could not be set up: the
    // loop then never waits without a timeout.
    bool can_wake() const noexcept { return wake_view_ && wakeups_; }
    void set_sleeping(bool sleeping) const noexcept;
    int wakeups_fd() const;
    // Empties the wakeups' ring buffer: its records only wake the loop.
    void consume_wakeups() const noexcept;

    int events_map_fd() const;
    // The hook's capture program (behind any filter), to run it directly.
    int program_fd(Hook hook) const;
    // The counters of the hook's key (its row's `counters`), indexed by CPU
    // id over every possible CPU; zero for a hook not loaded. Xdp and
    // TcIngress share the received frames' key; in trace mode that adds
    // entry's and exit's (read_trace_counters() has them on their own).
    std::vector<xdpcap_counters> read_counters(Hook hook) const;
    // Trace mode: one hook point's counters, over every traced program or
    // of one (its index in load_trace()'s targets).
    std::vector<xdpcap_counters> read_trace_counters(bool exit) const;
    std::vector<xdpcap_counters> read_trace_counters(uint32_t program, bool exit) const;
    // Trace mode: the hook points traced, as kTraceEntry | kTraceExit; else 0.
    unsigned trace_points() const noexcept { return trace_points_; }

    // Frees libbpf's copy of the object (its BTF, line info and
    // instructions, about 0.4 MiB), keeping the programs and maps the capture
    // still uses by their descriptors: with many interfaces it is most of
    // what each one costs. After load_trace(), load_drops(), the filters and
    // enable_batching(), which need the object; attach() does not.
    void release_object() noexcept;

private:
    CaptureProgram(std::unique_ptr<xdpcap_capture, SkeletonDeleter> skel, bool multi_buffer, Direction direction,
                   ReceiveAt receive, uint32_t ifindex, const Attribution& attribution, uint32_t counters_base);
    // The object, for what only the loading steps do; raises Error once released.
    xdpcap_capture& object() const;
    std::vector<xdpcap_counters> read_key(uint32_t key) const;
    // Maps the wake entry and opens the wakeups' reader; left empty on failure.
    void open_wake() noexcept;
    void attach_xdp(uint32_t ifindex, XdpMode mode, const std::string& ifname);
    // What the attached device-bound program, bound capture or front, reads from the driver.
    RxReads driver_reads() const noexcept
    {
        if (rx_front_)
            return rx_front_->driver_reads();
        return kept_.bound && link_ && attached_mode_ == XdpMode::Native ? bound_driver_ : RxReads{};
    }
    int entry_fd(Hook hook) const; // what attach() attaches

    std::unique_ptr<xdpcap_capture, SkeletonDeleter> skel_; // until release_object()
    // What the capture uses once loaded, held apart from the object. The
    // filters' tail-call maps among them: the kernel empties a program array
    // when its last descriptor closes.
    struct Kept {
        UniqueFd programs[kHookCount]; // by the hook's ABI value: Xdp, TcIngress, TcEgress
        UniqueFd flush, events, counters, stage, wakeups, rx_meta;
        UniqueFd bound; // the XDP capture program bound to the device, where loaded so
        UniqueFd next[3]; // capture_next, ingress_next, egress_next
    } kept_;
    static size_t next_of(Hook hook) noexcept { return hook == Hook::TcEgress ? 2 : hook == Hook::TcIngress ? 1 : 0; }
    std::unique_ptr<void, StageUnmapper> stage_view_; // the staging entries, read-only
    std::unique_ptr<void, StageUnmapper> wake_view_;  // the xdpcap_wake entry, read and written
    std::unique_ptr<ring_buffer, WakeupsDeleter> wakeups_;
    bool batching_ = false;
    UniqueFd filter_prog_[kHookCount]; // by the hook's ABI value
    UniqueFd link_;
    std::optional<RxMetadataFront> rx_front_; // attached instead of entry_fd(Hook::Xdp)
    std::string rx_front_failure_;
    RxReads rx_reads_;
    RxReads bound_driver_; // the reads of the bound program that reach the driver
    std::optional<TcHook> egress_;
    std::optional<TcHook> tc_ingress_;
    std::optional<TracePrograms> trace_;
    std::optional<DropProgram> drops_;
    bool drops_loaded_ = false; // stays after detach() for the counters
    uint64_t drop_misses_ = 0;  // as of detach()
    bool traced_ = false; // load_trace() ran; stays after detach() for the counters
    unsigned trace_points_ = 0;
    uint32_t trace_programs_ = 0;
    bool multi_buffer_;
    bool ingress_;
    bool egress_loaded_;
    ReceiveAt receive_;
    uint32_t ifindex_;
    uint32_t counters_base_; // this interface's first key in the counters
    Attribution attribution_;
    XdpMode attached_mode_ = XdpMode::Auto;
};

// Raises Error naming the program when the interface already has XDP
// attached, or, when it is another xdpcap's, naming that xdpcap's pid.
// `default_at_tc`: without --xdp-mode the capture would take received
// frames at tc ingress, after that program; the line says so.
void refuse_if_xdp_attached(uint32_t ifindex, const std::string& ifname, bool default_at_tc = false);

} // namespace xdpcap
