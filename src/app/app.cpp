#include "app/app.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "app/live.hpp"
#include "app/replay.hpp"
#include "app/sessions.hpp"
#include "filter/compile.hpp"
#include "filter/disasm.hpp"
#include "filter/translate.hpp"
#include "host/interfaces.hpp"
#include "programs/xdp_inventory.hpp"
#include "base/error.hpp"
#include "base/unique_fd.hpp"

namespace xdpcap {

namespace {

// As tcpdump -F: the whole file is the expression; line breaks are spaces
// and '#' starts a comment that runs to the end of its line.
// A filter is short: a file larger than this is a mistake (or /dev/zero).
constexpr size_t kMaxFilterFileBytes = 1 << 20;

std::string read_filter_file(const std::string& path)
{
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd)
        throw Error("cannot read filter file " + path + ": " + errno_text(errno));
    std::string expression;
    char chunk[4096];
    for (;;) {
        const ssize_t n = ::read(fd.get(), chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            throw Error("cannot read filter file " + path + ": " + errno_text(errno));
        if (n == 0)
            break;
        if (expression.size() + static_cast<size_t>(n) > kMaxFilterFileBytes)
            throw Error("filter file " + path + " is larger than " + std::to_string(kMaxFilterFileBytes >> 20) +
                        " MiB; a filter expression is not");
        expression.append(chunk, static_cast<size_t>(n));
    }
    bool comment = false;
    for (char& c : expression) {
        if (c == '#')
            comment = true;
        else if (c == '\n')
            comment = false;
        if (comment || c == '\n' || c == '\r' || c == '\t')
            c = ' ';
    }
    return expression;
}

// -d: where the filter would run. With -i, the hooks that interface's
// capture takes (lookup_interfaces() and choose_trace() settle them as a
// capture does); without one, each hook a receive could take.
struct DumpedHook {
    FilterContext context;
    std::string where;
};

std::vector<DumpedHook> dumped_hooks(const Config& config, std::optional<live::ChosenInterface> chosen)
{
    std::vector<DumpedHook> hooks;
    const Direction direction = chosen ? chosen->direction : config.direction;
    if (chosen && !chosen->traced.empty()) {
        const char* points = chosen->trace_entry && chosen->trace_exit ? "fentry and fexit"
            : chosen->trace_entry                                      ? "fentry"
                                                                       : "fexit";
        hooks.push_back({FilterContext::Trace, std::string(points) + " of " + live::program_text(chosen->traced.front())});
    } else if (direction != Direction::Out) {
        const ReceiveAt receive = chosen ? chosen->receive : ReceiveAt::NativeXdpElseTc;
        if (receive != ReceiveAt::Tc)
            hooks.push_back({FilterContext::Xdp, "XDP"});
        if (receive == ReceiveAt::Tc)
            hooks.push_back({FilterContext::TcIngress, "tc ingress"});
        else if (receive == ReceiveAt::NativeXdpElseTc)
            hooks.push_back({FilterContext::TcIngress, chosen ? "tc ingress, where the driver refuses native XDP"
                                                              : "tc ingress, on a veth or where the driver "
                                                                "refuses native XDP"});
    }
    if (direction != Direction::In)
        hooks.push_back({FilterContext::TcEgress, "tc egress"});
    // Its map of the dropped frame is made when it loads: "map fd -1" here.
    if (config.drops)
        hooks.push_back({FilterContext::Drop, "skb:kfree_skb (--drops)"});
    return hooks;
}

int dump_filter(const Config& config, const std::string& expression)
{
    // The interface meant (also when -i gave its index): its netmask and hooks.
    std::optional<live::ChosenInterface> chosen;
    if (!config.interfaces.empty()) {
        Config first = config;
        first.interfaces.resize(1);
        try {
            std::vector<live::ChosenInterface> interfaces = live::lookup_interfaces(first);
            // Trace mode, or tc ingress beside another xdpcap; a refusal
            // there is the capture's to make.
            try {
                live::choose_trace(interfaces, first);
            } catch (const Error&) {
            }
            chosen = std::move(interfaces.front());
        } catch (const Error&) {
        }
    }
    const ClassicProgram classic =
        compile_filter(expression, chosen ? interface_netmask(chosen->iface.name) : kNetmaskUnknown);
    std::printf("classic BPF from libpcap (%zu instructions):\n%s", classic.instructions().size(),
                dump_classic(classic).c_str());
    for (const DumpedHook& hook : dumped_hooks(config, std::move(chosen))) {
        const auto ebpf = translate_filter(classic.instructions(), FilterTarget{hook.context});
        std::printf("\neBPF run at %s (%zu instructions):\n%s", hook.where.c_str(), ebpf.size(),
                    dump_ebpf(ebpf).c_str());
    }
    return kExitOk;
}

} // namespace

int run_capture(const Config& config)
{
    if (config.list_interfaces) {
        std::fputs(list_interfaces().c_str(), stdout);
        return kExitOk;
    }
    // tcpdump -L's lines, on standard error as tcpdump writes them: frames
    // are captured as Ethernet on every device.
    if (config.list_link_types) {
        for (const std::string& argument : config.interfaces)
            std::fprintf(stderr, "Data link types for %s (use option -y to set):\n  EN10MB (Ethernet)\n",
                         names_any_device(argument) ? "any" : lookup_interface(argument).name.c_str());
        return kExitOk;
    }
    std::string filter = config.filter_file ? read_filter_file(*config.filter_file) : config.filter;
    if (config.dump_filter)
        return dump_filter(config, filter);
    if (config.read_file)
        return read_capture_file(config, filter, ReadPrivileges::GiveUp);
    return run_live_capture(config, std::move(filter));
}

} // namespace xdpcap
