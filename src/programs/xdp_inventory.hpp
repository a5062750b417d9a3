// What XDP programs an interface runs: the program attached in each mode
// and, behind a libxdp dispatcher, the component programs it calls. Used by
// -D and by the refusal (or, with tracing, the choice) of a busy interface.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/unique_fd.hpp"
#include "programs/receive_hook.hpp"

namespace xdpcap {

struct XdpProgramInfo {
    uint32_t id = 0;
    std::string name; // the full function name from BTF where there is one
    std::string tag;  // hex, as bpftool prints it
};

struct XdpAttachment {
    std::string mode; // "native", "generic" or "offload"
    XdpProgramInfo program;
    // Programs a libxdp dispatcher runs through freplace links, in id order.
    std::vector<XdpProgramInfo> components;
};

std::vector<XdpAttachment> xdp_attachments(uint32_t ifindex);

// Trace mode's targets on an interface running `attached`: the program
// itself, or every component of a dispatcher; with `wanted` (a name or an
// id) only the one it names. Raises Error listing the choices otherwise.
std::vector<XdpProgramInfo> trace_targets(const XdpAttachment& attached, const std::optional<std::string>& wanted);
XdpProgramInfo describe_program(uint32_t prog_id);
// The BTF type id of a program's main function (its first func_info), what
// fentry/fexit attach to: 0 when it carries no BTF, -1 (errno set) when the
// kernel cannot describe the program.
int64_t main_function_type_id(int prog_fd);

// Whether an attached XDP program is one of xdpcap's own (by its function
// name): another xdpcap captures there.
bool is_xdpcap_program(std::string_view name);

// A descriptor of the BPF link that keeps `prog_id` attached to the
// interface's XDP hook: held, it keeps the program there after its owner
// exits, until the last holder closes it. Empty where none does (attached
// through netlink, or detached meanwhile).
UniqueFd xdp_link_of(uint32_t ifindex, uint32_t prog_id);

// What /proc/PID/fdinfo/FD says of a BPF link (link_type, link_id, ...,
// prog_id) or program (prog_type, ..., prog_id) descriptor: nothing for
// any other kind of descriptor.
struct BpfFdinfo {
    bool link = false; // else a program
    uint32_t prog_id = 0;
};
std::optional<BpfFdinfo> parse_bpf_fdinfo(std::string_view fdinfo);

// The processes, by pid in increasing order, that hold a BPF link to the
// program `prog_id` (what keeps it attached) or, where none does, the
// program itself. A process whose descriptors cannot be read (gone, or
// not ours to see) is left out. `proc`: where procfs is mounted.
std::vector<int> program_holders(uint32_t prog_id, const std::string& proc = "/proc");
// "pid 123", "pids 123, 456" or "pid unknown": who holds the program.
std::string holders_text(uint32_t prog_id);

// -D's word on where a capture in the default mode takes the interface's
// received frames: the hook default_receive() chooses; tc ingress beside
// another xdpcap's XDP program, or after a foreign one; trace mode where a
// foreign program holds the XDP hook the capture would use, or nothing
// where it cannot be traced (`untraceable`: why).
std::string received_at_listing(const ReceiveFacts& facts, const std::vector<XdpAttachment>& attached,
                                const std::optional<std::string>& untraceable);

// tcpdump -D's listing, one interface per line, with the XDP programs.
std::string list_interfaces();

} // namespace xdpcap
