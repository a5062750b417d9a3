#include "app/app.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include "app/live.hpp"
#include "app/replay.hpp"
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

int dump_filter(const std::string& expression, const std::string& interface)
{
    // The netmask of the interface meant, also when -i gave its index.
    std::string name = interface;
    if (interface_index_argument(interface)) {
        try {
            name = lookup_interface(interface).name;
        } catch (const Error&) {
        }
    }
    const ClassicProgram classic =
        compile_filter(expression, name.empty() ? kNetmaskUnknown : interface_netmask(name));
    const auto ebpf = translate_filter(classic.instructions(), FilterTarget{});
    std::printf("classic BPF from libpcap (%zu instructions):\n%s\n", classic.instructions().size(),
                dump_classic(classic).c_str());
    std::printf("eBPF run in the XDP program (%zu instructions):\n%s", ebpf.size(), dump_ebpf(ebpf).c_str());
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
                         lookup_interface(argument).name.c_str());
        return kExitOk;
    }
    std::string filter = config.filter_file ? read_filter_file(*config.filter_file) : config.filter;
    if (config.dump_filter)
        return dump_filter(filter, config.interfaces.empty() ? std::string() : config.interfaces.front());
    if (config.read_file)
        return read_capture_file(config, filter, ReadPrivileges::GiveUp);
    return run_live_capture(config, std::move(filter));
}

} // namespace xdpcap
