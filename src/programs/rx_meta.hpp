// What a NIC keeps about a received frame outside the frame (the VLAN tag it
// took out, the RSS hash) and how the capture gets it back: the XDP RX
// metadata kfuncs, callable only from a program bound to the device: on a
// native XDP hook the capture program itself, or with a filter a program in
// front of the filter.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "base/unique_fd.hpp"

struct xdpcap_rx_meta;
struct bpf_insn;

namespace xdpcap {

// The kfuncs this kernel has, from its BTF (probed once).
struct KernelRxMetadata {
    bool vlan = false; // bpf_xdp_metadata_rx_vlan_tag, Linux 6.8
    bool hash = false; // bpf_xdp_metadata_rx_hash, Linux 6.3
};
const KernelRxMetadata& kernel_rx_metadata();

// The build of the front program a kernel can load: with the VLAN kfunc
// (6.8), or with the hash kfunc alone (6.3 to 6.7; libbpf 1.1 cannot load an
// object that names a kfunc the kernel lacks); none without either.
enum class RxFrontBuild { VlanAndHash, HashOnly };
std::optional<RxFrontBuild> rx_front_build(const KernelRxMetadata& kernel) noexcept;
// The BPF object of a build, as embedded (for tests).
std::span<const uint8_t> rx_front_object(RxFrontBuild build) noexcept;

// What the front asks the driver for. A NIC hands out the RSS hash it kept
// in the RX descriptor; veth keeps none and computes the kernel's flow hash
// for the frame (skb_get_hash: the flow dissector, about 100 ns a frame, and
// the hash then set on the skb), so veth is asked only where the hash types
// are wanted (--rss-type-comments): a capture reads, never computes.
struct RxReads {
    bool vlan = false;
    bool hash = false;
    bool any() const noexcept { return vlan || hash; }
};
RxReads rx_reads(const KernelRxMetadata& kernel, const std::string& driver, bool hash_types_wanted) noexcept;

// BPF_F_XDP_DEV_BOUND_ONLY (Linux 6.3; libbpf 1.1's headers lack it).
constexpr uint32_t kXdpDevBoundOnly = 1U << 6;

// Of the reads a loaded device-bound program makes, those that reach the
// driver's own function, not the kernel's default: judged from the verified
// instructions; taken as reaching it where the kernel hides call targets.
RxReads rx_driver_reads(int prog_fd, RxReads reads);

// Which of the kfunc calls in a loaded program's translated instructions go
// to a driver's implementation rather than to the kernel's default (which
// answers -EOPNOTSUPP): `default_addresses` are the defaults' addresses, in
// the order the program calls them; `call_base` is __bpf_call_base.
// Exposed for tests. One answer per call, in program order.
struct KfuncCallTargets {
    bool known = false; // the kernel showed the call targets
    bool driver[2] = {false, false};
};
KfuncCallTargets kfunc_call_targets(std::span<const bpf_insn> xlated, uint64_t call_base,
                                    std::span<const uint64_t> default_addresses);

// The device-bound program in front of the XDP capture program: reads the
// frame's RX metadata into the per-CPU map the capture program and its filter
// read, then tail-calls `next`. Its kernel objects die with it.
class RxMetadataFront {
public:
    // Raises Error with the kernel's reason when it cannot be loaded for the
    // device (a driver without XDP, for one).
    static RxMetadataFront load(uint32_t ifindex, int rx_meta_map_fd, int next_prog_fd, RxReads reads);
    RxMetadataFront(RxMetadataFront&&) noexcept;
    RxMetadataFront& operator=(RxMetadataFront&&) noexcept;
    ~RxMetadataFront();

    int program_fd() const;
    // Whether the driver implements the kfunc: known once loaded, from where
    // the verifier pointed the call. Unknown (the kernel hides addresses)
    // counts as implemented; the samples then show what there is.
    RxReads driver_reads() const noexcept { return driver_; }

private:
    struct Objects;
    explicit RxMetadataFront(std::unique_ptr<Objects> objects);
    std::unique_ptr<Objects> objects_;
    RxReads driver_;
};

// Whether received VLAN tags can reach an XDP program outside the frame. A
// NIC's rx-vlan-offload (ethtool's rxvlan) takes them out. A veth ignores its
// own rxvlan: its frames keep the tags as its peer sent them, outside the
// frame while the peer's tx-vlan-offload is on (the default; assumed when the
// peer is in another network namespace).
bool rx_vlan_tags_outside_frames(const std::string& ifname, const std::string& driver);

// The setting that takes the tags out ("rx-vlan-offload on") and what
// keeps them in ("'ethtool -K eth0 rxvlan off' keeps them"); the
// veth's name its peer.
struct RxVlanRemedy {
    std::string setting;
    std::string remedy;
};
RxVlanRemedy rx_vlan_remedy(const std::string& ifname, const std::string& driver);

// Why a native XDP capture on the interface cannot have the tags the NIC
// takes out back (the kernel, or the driver, probed with a program bound to
// the device); nothing when it can.
std::optional<std::string> rx_vlan_missing_reason(uint32_t ifindex, const std::string& driver);
std::string no_vlan_from_driver(const std::string& driver);

} // namespace xdpcap
