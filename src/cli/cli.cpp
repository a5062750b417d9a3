#include "cli/cli.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <cxxopts.hpp>
#include <pcap/pcap.h>

#include "base/error.hpp"
#include "version.hpp"

namespace xdpcap {

namespace {

// Whole-string unsigned decimal; anything else (sign, junk, overflow) is rejected.
std::optional<uint64_t> parse_unsigned(const std::string& text)
{
    uint64_t value = 0;
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (text.empty() || ec != std::errc() || ptr != end)
        return std::nullopt;
    return value;
}

bool looks_negative(const std::string& text)
{
    return !text.empty() && text[0] == '-' && parse_unsigned(text.substr(1)).has_value();
}

uint64_t parse_count(const std::string& text)
{
    auto value = parse_unsigned(text);
    if (!value || *value == 0)
        throw Error("invalid packet count '" + text + "': expected a whole number of at least 1");
    return *value;
}

uint32_t parse_snaplen(const std::string& text)
{
    if (looks_negative(text))
        throw Error("invalid snapshot length '" + text + "': must not be negative");
    // Digits only but beyond 64 bits is still "above the maximum".
    const bool all_digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
    auto value = parse_unsigned(text);
    if (!value && all_digits)
        return kMaxSnaplen;
    if (!value)
        throw Error("invalid snapshot length '" + text + "': expected a whole number of bytes");
    // As in tcpdump: 0 or anything above the maximum means the maximum.
    if (*value == 0 || *value > kMaxSnaplen)
        return kMaxSnaplen;
    return static_cast<uint32_t>(*value);
}

uint32_t parse_ring_pages(const std::string& text)
{
    auto value = parse_unsigned(text);
    if (!value || *value == 0 || *value > kMaxRingPages || (*value & (*value - 1)) != 0)
        throw Error("invalid --ring-pages '" + text + "': expected a power of two from 1 to " +
                    std::to_string(kMaxRingPages));
    return static_cast<uint32_t>(*value);
}

// -C: millions of bytes, or with a k, m or g suffix KiB, MiB or GiB, as tcpdump.
uint64_t parse_file_size(const std::string& text)
{
    const std::string what = "invalid file size '" + text + "' for -C: ";
    if (looks_negative(text))
        throw Error(what + "must not be negative");
    size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9')
        ++digits;
    uint64_t unit = 1'000'000;
    if (digits + 1 == text.size()) {
        switch (text.back()) {
        case 'k':
        case 'K':
            unit = uint64_t{1} << 10;
            break;
        case 'm':
        case 'M':
            unit = uint64_t{1} << 20;
            break;
        case 'g':
        case 'G':
            unit = uint64_t{1} << 30;
            break;
        default:
            digits = 0;
        }
    } else if (digits != text.size()) {
        digits = 0;
    }
    if (digits == 0)
        throw Error(what + "expected a whole number of millions of bytes, or of KiB, MiB or GiB with k, m or g");
    auto value = parse_unsigned(text.substr(0, digits));
    constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    if (!value || *value > kMax / unit)
        throw Error(what + "too large");
    if (*value == 0)
        throw Error(what + "must be at least 1");
    return *value * unit;
}

// -G and -W: a whole number from 1 to INT_MAX, as tcpdump's.
uint32_t parse_positive_int(const std::string& text, const std::string& what)
{
    auto value = parse_unsigned(text);
    if (looks_negative(text))
        throw Error("invalid " + what + " '" + text + "': must not be negative");
    if (!value || *value == 0 || *value > static_cast<uint64_t>(std::numeric_limits<int>::max()))
        throw Error("invalid " + what + " '" + text + "': expected a whole number from 1 to " +
                    std::to_string(std::numeric_limits<int>::max()));
    return static_cast<uint32_t>(*value);
}

// -C/-G/-W/-z name files after -w: they need a file name to start from.
void check_rotation(const Config& config, const cxxopts::ParseResult& result)
{
    const std::pair<const char*, const char*> options[] = {
        {"-C", "file-size"}, {"-G", "rotate-seconds"}, {"-W", "file-count"}, {"-z", "postrotate-command"}};
    for (const auto& [flag_text, name] : options) {
        if (!result.count(name))
            continue;
        const std::string flag = flag_text;
        if (!config.output)
            throw Error(flag + " cannot be used without -w FILE");
        if (config.writes_to_stdout())
            throw Error(flag + " names files after -w: it cannot be used with -w - (standard output)");
    }
    if (!config.rotates() && (config.file_count || config.postrotate_command))
        throw Error(std::string(config.file_count ? "-W" : "-z") + " cannot be used without -C or -G");
}

uint32_t parse_sample(const std::string& text)
{
    auto value = parse_unsigned(text);
    if (!value || *value == 0 || *value > kMaxSampleEvery)
        throw Error("invalid --sample '" + text + "': expected a whole number N from 1 to " +
                    std::to_string(kMaxSampleEvery) + " (keep one packet in N)");
    return static_cast<uint32_t>(*value);
}

std::string parse_user(const std::string& text)
{
    if (text.empty())
        throw Error("-Z needs a user name");
    return text;
}

XdpMode parse_xdp_mode(const std::string& text)
{
    if (text == "auto")
        return XdpMode::Auto;
    if (text == "native" || text == "drv")
        return XdpMode::Native;
    if (text == "generic" || text == "skb")
        return XdpMode::Generic;
    throw Error("invalid --xdp-mode '" + text + "': expected native, generic or auto");
}

Direction parse_direction(const std::string& text)
{
    if (text == "in")
        return Direction::In;
    if (text == "out")
        return Direction::Out;
    if (text == "inout")
        return Direction::InOut;
    throw Error("invalid direction '" + text + "': expected in, out or inout");
}

// --at: entry, exit or both, comma-separated.
void parse_at(const std::string& text, Config& config)
{
    config.trace_entry = config.trace_exit = false;
    size_t start = 0;
    for (;;) {
        const size_t end = text.find(',', start);
        const std::string word = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
        bool& hook = word == "entry" ? config.trace_entry : config.trace_exit;
        if ((word != "entry" && word != "exit") || hook)
            throw Error("invalid --at '" + text + "': expected entry, exit or entry,exit");
        hook = true;
        if (end == std::string::npos)
            break;
        start = end + 1;
    }
    config.at_given = true;
}

void check_interface_name(const std::string& name)
{
    constexpr size_t kIfNameMax = 15; // IFNAMSIZ - 1
    if (name.empty())
        throw Error("interface name must not be empty");
    if (name.size() > kIfNameMax)
        throw Error("interface name '" + name + "' is too long (at most 15 characters)");
    if (name.find('/') != std::string::npos || name.find_first_of(" \t\n:") != std::string::npos)
        throw Error("interface name '" + name + "' contains a character interfaces cannot have");
}

// cxxopts says "Option ‘w’ is missing an argument"; we say
// "option -w is missing an argument", in plain ASCII.
std::string plain_cxxopts_message(std::string message)
{
    const std::string open = "\u2018", close = "\u2019";
    const auto start = message.find(open);
    const auto end = start == std::string::npos ? start : message.find(close, start);
    if (end != std::string::npos) {
        const std::string name = message.substr(start + open.size(), end - start - open.size());
        const std::string dashes = name.rfind('-', 0) == 0 ? "" : name.size() == 1 ? "-" : "--";
        message = message.substr(0, start) + dashes + name + message.substr(end + close.size());
    }
    if (!message.empty() && message[0] == 'O')
        message[0] = 'o';
    return message;
}

// cxxopts leaves the space it wrapped at on the end of the line.
std::string without_trailing_spaces(const std::string& text)
{
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        if (c == '\n') {
            while (!out.empty() && out.back() == ' ')
                out.pop_back();
        }
        out += c;
    }
    while (!out.empty() && out.back() == ' ')
        out.pop_back();
    return out;
}

// With -r nothing is attached: the options that shape a live capture mean
// nothing there and are refused rather than ignored.
// -y: tcpdump's names (libpcap's, any case); xdpcap captures Ethernet
// frames, whatever the device, so EN10MB is the one it takes.
void check_link_type(const std::string& name)
{
    const int dlt = pcap_datalink_name_to_val(name.c_str());
    if (dlt < 0)
        throw Error("invalid data link type '" + name + "' (-L lists the interface's: EN10MB)");
    if (dlt != DLT_EN10MB)
        throw Error("-y " + name + ": xdpcap captures Ethernet frames only; its one link type is EN10MB (see -L)");
}

void refuse_capture_options_with_read(const cxxopts::ParseResult& result)
{
    const std::pair<const char*, const char*> live_only[] = {
        {"xdp-mode", "--xdp-mode"},
        {"ring-pages", "--ring-pages"},
        {"buffer-size", "-B"},
        {"sample", "--sample"},
        {"drops", "--drops"},
        {"follow-forks", "--follow-forks"},
        {"cgroup", "--cgroup"},
        {"container-netns", "--container-netns"},
        {"no-promiscuous-mode", "-p"},
        {"at", "--at"},
        {"program", "--program"},
        {"file-size", "-C"},
        {"rotate-seconds", "-G"},
        {"file-count", "-W"},
        {"postrotate-command", "-z"},
        {"snapshot-length", "-s"},
        {"immediate-mode", "--immediate-mode"},
        {"linktype", "-y"},
        {"list-data-link-types", "-L"},
        {"rss-type-comments", "--rss-type-comments"},
        {"tls-keylog", "--tls-keylog"},
        {"tls-keys", "--tls-keys"},
        {"tls-keys-file", "--tls-keys-file"},
        {"tls-keys-from-start", "--tls-keys-from-start"},
    };
    for (const auto& [key, spelling] : live_only)
        if (result.count(key))
            throw Error(std::string(spelling) + " applies to a live capture, not to -r");
}

ProcessSelection parse_process_selection(const cxxopts::ParseResult& result)
{
    ProcessSelection process;
    if (result.count("pid")) {
        const std::string text = result["pid"].as<std::string>();
        const auto pid = parse_positive_int(text, "process id for --pid");
        if (pid > 0x3fffffff)
            throw Error("invalid process id for --pid: " + text);
        process.pid = static_cast<uint32_t>(pid);
    }
    process.follow_forks = result.count("follow-forks") > 0;
    if (process.follow_forks && !process.pid)
        throw Error("--follow-forks follows the processes --pid PID starts: give --pid");
    if (result.count("pname")) {
        std::string name = result["pname"].as<std::string>();
        if (name.empty())
            throw Error("--pname needs a command name");
        // The kernel keeps a task's command name in 16 bytes with the NUL:
        // a longer name matches no process.
        if (name.size() > 15)
            throw Error("--pname " + name + ": longer than the 15 bytes the kernel keeps of a command name (" +
                        name.substr(0, 15) + ")");
        process.comm = std::move(name);
    }
    if (result.count("cgroup")) {
        process.cgroup = result["cgroup"].as<std::string>();
        if (process.cgroup->empty())
            throw Error("--cgroup needs a cgroup directory");
    }
    if (result.count("container")) {
        process.container = result["container"].as<std::string>();
        if (process.container->empty())
            throw Error("--container needs a container's name or ID");
        if (process.cgroup)
            throw Error("give either --container or --cgroup: a container is its cgroup");
    }
    process.container_netns = result.count("container-netns") > 0;
    if (process.container_netns && !process.container)
        throw Error("--container-netns looks for -i inside the --container's network namespace: give --container");
    process.attribute = result.count("k") > 0 || process.filters();
    return process;
}

cxxopts::Options make_options()
{
    cxxopts::Options options("xdpcap", "Capture packets at the XDP hook, one pcapng interface per CPU.");
    options.custom_help("[-#AdDehKlLnNpqSUvxX] [-t...] [--version] (-i IFACE [-i IFACE]... | -r FILE) [-w FILE|-]\n"
                        "         [--print] [--print-cpu] [--immediate-mode] [-y EN10MB] [-s SNAPLEN] [-c COUNT]\n"
                        "         [-C SIZE] [-G SECONDS] [-W COUNT]\n"
                        "         [-z COMMAND] [-Q in|out|inout] [-F FILE] [-Z USER]\n"
                        "         [-B KIB|--ring-pages N] [--sample N] [--xdp-mode MODE] [--drops]\n"
                        "         [-k] [--pid PID [--follow-forks]] [--pname NAME] [--cgroup PATH]\n"
                        "         [--container NAME|ID [--container-netns]] [--tls-keylog FILE]\n"
                        "         [--at entry|exit|entry,exit] [--program NAME|ID]\n"
                        "         [--time-stamp-precision micro|nano] [--nano] [--rss-type-comments]\n"
                        "         [--tls-keys] [--tls-keys-file FILE [--tls-keys-from-start]] [--discard-secrets]");
    options.positional_help("[expression] [-- COMMAND [ARGS]]");
    // clang-format off
    options.add_options()
        ("i,interface", "Capture on IFACE (required): a name, or a number as tcpdump -D and -D list it; "
                         "repeat -i for several interfaces", cxxopts::value<std::string>(), "IFACE")
        ("w,write", "Write pcapng to FILE, or to standard output with -", cxxopts::value<std::string>(), "FILE")
        ("r,read", "Read packets from a pcap or pcapng FILE (- for standard input) instead of capturing",
             cxxopts::value<std::string>(), "FILE")
        ("s,snapshot-length", "Keep at most SNAPLEN bytes of each packet; 0 means the maximum, " +
             std::to_string(kMaxSnaplen), cxxopts::value<std::string>(), "SNAPLEN")
        ("c,count", "Stop after writing COUNT packets", cxxopts::value<std::string>(), "COUNT")
        ("C,file-size", "Start a new file when the current one is larger than SIZE millions of bytes "
                        "(or KiB, MiB, GiB with a k, m or g suffix); the next ones are FILE1, FILE2, ...",
             cxxopts::value<std::string>(), "SIZE")
        ("G,rotate-seconds", "Start a new file every SECONDS; FILE is a strftime(3) pattern",
             cxxopts::value<std::string>(), "SECONDS")
        ("W,file-count", "With -C: keep a ring of COUNT files; with -G alone: stop after COUNT files",
             cxxopts::value<std::string>(), "COUNT")
        ("z,postrotate-command", "Run COMMAND FILE on every file once it is closed",
             cxxopts::value<std::string>(), "COMMAND")
        ("U,packet-buffered", "Flush the output after every packet")
        ("immediate-mode", "Have the kernel wake xdpcap for every packet, not once a quarter of a ring is full, "
                           "and drain every millisecond, so each packet is written within about 2 ms")
        ("Q,direction", "Capture received (in), sent (out) or all (inout) packets",
             cxxopts::value<std::string>()->default_value("inout"), "DIR")
        ("p,no-promiscuous-mode", "Do not put the interface into promiscuous mode")
        ("F,filter-file", "Read the filter expression from FILE", cxxopts::value<std::string>(), "FILE")
        ("d,dump-filter", "Print the compiled filter (classic BPF and the eBPF run in the kernel) and exit")
        ("D,list-interfaces", "List the interfaces and the XDP programs attached to them, and exit")
        ("L,list-data-link-types", "List the link-layer types of each -i interface (EN10MB, the one xdpcap "
                                   "captures), and exit")
        ("y,linktype", "Link-layer type: EN10MB (Ethernet), the only one", cxxopts::value<std::string>(), "TYPE")
        ("v,verbose", "More detail: IP header fields and checksums on packet lines (-v, -vv, -vvv, as tcpdump), "
                      "per-CPU statistics; never changes what -w writes")
        ("q,quiet", "Quick output: less protocol detail per packet line (tcpdump's -q); no start-up warnings")
        ("e", "Print the link-level header (MAC addresses, ethertype, length) on each packet line")
        ("x", "Print each packet's data in hex, without (-x) or with (-xx) its link-level header")
        ("X", "Print each packet's data in hex and ASCII, without (-X) or with (-XX) its link-level header")
        ("A", "Print each packet's data in ASCII, without (-A) or with (-AA) its link-level header")
        ("t", "Timestamps: -t none, -tt seconds since 1970, -ttt delta since the previous packet, "
              "-tttt date and time, -ttttt delta since the first packet")
        ("time-stamp-precision", "Print timestamps in micro (the default) or nano seconds",
             cxxopts::value<std::string>(), "PREC")
        ("nano", "Print timestamps in nanoseconds (tcpdump's spelling of --time-stamp-precision nano)")
        ("number", "Print each packet's number first (also -#)")
        ("S", "Print absolute TCP sequence numbers, not relative to the connection's first (as tcpdump -S)")
        ("n", "Print addresses and ports as numbers (always so: accepted as tcpdump's -n and -nn)")
        ("N", "Do not print host names' domains (no host names are printed: accepted as tcpdump's -N)")
        ("K,dont-verify-checksums", "Do not verify IP, TCP and UDP checksums (as tcpdump -K; ICMP's and ICMPv6's still are)")
        ("l", "Line-buffered output: write each packet line as soon as it is made")
        ("print-cpu", "Start each packet line with the pcapng interface it is written to (IFACE@cpuN) and its "
                      "direction; with -e, the packet's hash follows")
        ("rss-type-comments", "Name each received packet's RSS hash type (L4_IPV4_TCP, ...) in its pcapng "
                              "comment, where the NIC hands the hash to XDP")
        ("print", "Print packet lines on standard output also while writing -w FILE")
        ("drops", "Also capture the packets the kernel drops on the interface, each with the kernel's reason "
                  "and the code that dropped it")
        ("k", "Name the process that owns each packet's local socket: its pid, thread and command in the "
              "file (epb_processid_threadid and a comment) and on packet lines")
        ("pid", "Capture only the packets of process PID's sockets (implies -k)", cxxopts::value<std::string>(), "PID")
        ("follow-forks", "With --pid: also the packets of the processes PID starts")
        ("pname", "Capture only the packets of processes with this command name (implies -k)",
             cxxopts::value<std::string>(), "NAME")
        ("cgroup", "Capture only the packets of processes in this cgroup v2 directory or below it (implies -k)",
             cxxopts::value<std::string>(), "PATH")
        ("container", "With -i: capture only the packets of this podman or docker container's processes (implies "
                      "-k); without -i: every packet on its interfaces, from this side of its veths",
             cxxopts::value<std::string>(), "NAME|ID")
        ("container-netns", "With --container: the -i interfaces are inside the container's network namespace")
        ("tls-keylog", "Write the TLS keys of the selected processes' OpenSSL 3 connections to FILE as an NSS "
                       "key log, read from the library with uprobes", cxxopts::value<std::string>(), "FILE")
        ("tls-keys", "Write the TLS secrets of the selected processes into the -w file (Decryption Secrets "
                     "Blocks): -- COMMAND's, logged to a private SSLKEYLOGFILE, and those read from OpenSSL 3 with "
                     "uprobes; the file is made mode 0600")
        ("tls-keys-file", "Follow the TLS key log FILE another program writes (as tail -F) and write its new "
                          "lines into the -w file; the file is made mode 0600", cxxopts::value<std::string>(), "FILE")
        ("tls-keys-from-start", "With --tls-keys-file: the lines already in FILE too, not only new ones")
        ("discard-secrets", "With -r and -w: copy the file without its Decryption Secrets Blocks")
        ("xdp-mode", "XDP attach mode: native, generic or auto", cxxopts::value<std::string>()->default_value("auto"), "MODE")
        ("ring-pages", "Per-CPU ring size in pages, a power of two, or auto (the default: 32 MiB shared by "
                       "the CPUs of every interface, 1 to 16 MiB each)",
             cxxopts::value<std::string>(), "N")
        ("B,buffer-size", "Per-CPU ring size in KiB, rounded down to a power of two pages (instead of "
                          "--ring-pages)", cxxopts::value<std::string>(), "KIB")
        ("sample", "Keep one packet in N of those the filter keeps, counted over all CPUs (1: every packet)",
             cxxopts::value<std::string>(), "N")
        ("Z,relinquish-privileges", "Once attached (with -r: once the files are open), run as USER and its "
                                    "primary group; -w FILE is created as USER", cxxopts::value<std::string>(),
                                    "USER")
        ("at", "Trace mode (IFACE already runs an XDP program): sample at its entry, exit or both "
               "(entry,exit, the default)", cxxopts::value<std::string>(), "HOOKS")
        ("program", "Trace mode: trace only this component of a libxdp dispatcher, by name or id",
             cxxopts::value<std::string>(), "NAME|ID")
        ("h,help", "Print this help and exit")
        ("version", "Print the version and exit")
        ("expression", "Filter expression", cxxopts::value<std::vector<std::string>>());
    // clang-format on
    options.parse_positional({"expression"});
    return options;
}

// cxxopts cannot name an option '#': -# (alone or among other flags that
// take no value, as in -#e) becomes --number before it parses.
std::vector<std::string> translate_number_flag(int argc, const char* const* argv)
{
    std::vector<std::string> args;
    bool number = false;
    bool options_end = false;
    for (int i = 0; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--")
            options_end = true;
        const bool flags = i > 0 && !options_end && arg.size() > 1 && arg[0] == '-' && arg[1] != '-' &&
            arg.find('#') != std::string::npos && arg.find_first_not_of("-#AdDehkKlLnNpqUvxXt") == std::string::npos;
        if (!flags) {
            args.push_back(std::move(arg));
            continue;
        }
        number = true;
        std::string rest = "-";
        for (char c : arg.substr(1)) {
            if (c != '#')
                rest += c;
        }
        if (rest.size() > 1)
            args.push_back(rest);
    }
    if (number)
        args.insert(args.begin() + (argc > 0 ? 1 : 0), "--number");
    return args;
}

text::TextOptions parse_text_options(const cxxopts::ParseResult& result)
{
    text::TextOptions text;
    const auto level = [&](const char* name) { return static_cast<uint8_t>(std::min<size_t>(result.count(name), 2)); };
    text.decode.quick = result.count("quiet") > 0;
    text.decode.link_header = result.count("e") > 0;
    text.decode.verbose = static_cast<uint8_t>(std::min<size_t>(result.count("verbose"), 3));
    text.decode.hex = level("x");
    text.decode.hex_ascii = level("X");
    text.decode.ascii = level("A");
    if (result.count("t") > 5)
        throw Error("only -t, -tt, -ttt, -tttt and -ttttt are supported");
    text.time = text::time_format_for(static_cast<unsigned>(result.count("t")));
    text.number = result.count("number") > 0;
    text.line_buffered = result.count("l") > 0;
    text.absolute_sequence = result.count("S") > 0;
    text.decode.verify_checksums = result.count("dont-verify-checksums") == 0;
    text.cpu_prefix = result.count("print-cpu") > 0;
    if (result.count("time-stamp-precision")) {
        const std::string precision = result["time-stamp-precision"].as<std::string>();
        if (precision == "nano")
            text.nanoseconds = true;
        else if (precision != "micro")
            throw Error("invalid --time-stamp-precision '" + precision + "': expected micro or nano");
        else if (result.count("nano"))
            throw Error("--nano and --time-stamp-precision micro ask for different precisions: give one");
    }
    if (result.count("nano"))
        text.nanoseconds = true;
    return text;
}

} // namespace

uint32_t ring_pages_from_kib(const std::string& text, size_t page_bytes)
{
    auto kib = parse_unsigned(text);
    const uint64_t max_kib = uint64_t{kMaxRingPages} * page_bytes / 1024;
    const uint64_t min_kib = (page_bytes + 1023) / 1024;
    if (!kib || *kib < min_kib || *kib > max_kib)
        throw Error("invalid -B '" + text + "': expected a size in KiB from " + std::to_string(min_kib) + " (one page) to " +
                    std::to_string(max_kib));
    uint64_t pages = *kib * 1024 / page_bytes;
    while (pages & (pages - 1))
        pages &= pages - 1; // down to the highest power of two
    return static_cast<uint32_t>(pages);
}

namespace {

// xdpcap [options] [expression] -- COMMAND [ARGS]: the rest is the command's.
std::vector<std::string> split_off_command(std::vector<std::string>& args)
{
    std::vector<std::string> command;
    if (const auto dashes = std::find(args.begin() + (args.empty() ? 0 : 1), args.end(), "--"); dashes != args.end()) {
        command.assign(dashes + 1, args.end());
        args.erase(dashes, args.end());
        if (command.empty())
            throw Error("-- must be followed by a command to run");
    }
    return command;
}

cxxopts::ParseResult parse_options(cxxopts::Options& options, const std::vector<std::string>& args)
{
    std::vector<const char*> arg_pointers;
    for (const std::string& arg : args)
        arg_pointers.push_back(arg.c_str());
    try {
        return options.parse(static_cast<int>(arg_pointers.size()), arg_pointers.data());
    } catch (const cxxopts::exceptions::exception& e) {
        throw Error(plain_cxxopts_message(e.what()) + " (see xdpcap --help)");
    }
}

// -i, -r, -L, -F: where the packets come from.
void parse_sources(const cxxopts::ParseResult& result, Config& config)
{
    if (result.count("filter-file"))
        config.filter_file = result["filter-file"].as<std::string>();
    // Every -i in order; arguments() keeps them all (and, unlike a vector
    // value, does not split names at commas).
    for (const auto& argument : result.arguments()) {
        if (argument.key() != "interface")
            continue;
        const std::string& name = argument.value();
        check_interface_name(name);
        for (const std::string& earlier : config.interfaces) {
            if (earlier == name)
                throw Error("interface '" + name + "' is given twice with -i");
        }
        config.interfaces.push_back(name);
    }
    if (config.interfaces.size() > 1 &&
        std::find(config.interfaces.begin(), config.interfaces.end(), "any") != config.interfaces.end())
        throw Error("-i any captures every interface: give it alone, without other -i");
    if (result.count("read")) {
        config.read_file = result["read"].as<std::string>();
        if (config.read_file->empty())
            throw Error("-r needs a file name (or - for standard input)");
        if (!config.interfaces.empty())
            throw Error("give either -i (capture on an interface) or -r (read a file), not both");
        refuse_capture_options_with_read(result);
    }
    if (result.count("linktype"))
        check_link_type(result["linktype"].as<std::string>());
    config.list_link_types = result.count("list-data-link-types") > 0;
    if (config.list_link_types && config.interfaces.empty())
        throw Error("-L lists an interface's link types: give it with -i IFACE");
    if (config.interfaces.empty() && !config.dump_filter && !config.read_file && !result.count("container"))
        throw Error("no interface given: use -i IFACE, or -r FILE to read a capture file (see xdpcap --help)");
}

// -w, -s, -c and the rotation: where the packets go.
void parse_output(const cxxopts::ParseResult& result, Config& config)
{
    if (result.count("write")) {
        config.output = result["write"].as<std::string>();
        if (config.output->empty())
            throw Error("output file name must not be empty");
    }
    if (result.count("snapshot-length"))
        config.snaplen = parse_snaplen(result["snapshot-length"].as<std::string>());
    if (result.count("count"))
        config.count = parse_count(result["count"].as<std::string>());
    if (result.count("file-size"))
        config.file_size = parse_file_size(result["file-size"].as<std::string>());
    if (result.count("rotate-seconds"))
        config.rotate_seconds = parse_positive_int(result["rotate-seconds"].as<std::string>(), "number of seconds for -G");
    if (result.count("file-count"))
        config.file_count = parse_positive_int(result["file-count"].as<std::string>(), "number of files for -W");
    if (result.count("postrotate-command")) {
        config.postrotate_command = result["postrotate-command"].as<std::string>();
        if (config.postrotate_command->empty())
            throw Error("-z needs a command");
    }
    check_rotation(config, result);
}

// --tls-keys, --tls-keys-file, --discard-secrets: after -- COMMAND.
void parse_tls_keys(const cxxopts::ParseResult& result, Config& config)
{
    TlsKeys& keys = config.tls_keys;
    keys.command = result.count("tls-keys") > 0;
    if (result.count("tls-keys-file")) {
        keys.file = result["tls-keys-file"].as<std::string>();
        if (keys.file->empty())
            throw Error("--tls-keys-file needs the key log file's name");
    }
    keys.from_start = result.count("tls-keys-from-start") > 0;
    if (keys.from_start && !keys.file)
        throw Error("--tls-keys-from-start reads --tls-keys-file's lines from its start: give --tls-keys-file");
    if (keys.command && !config.process.wanted())
        throw Error("--tls-keys reads the TLS keys of the processes the capture selects: give -- COMMAND, --pid, "
                    "--pname, --cgroup, --container or -k, or --tls-keys-file for a key log another program "
                    "writes");
    if (keys.wanted() && !config.writes_pcapng())
        throw Error("--tls-keys and --tls-keys-file write TLS secrets into a pcapng file: give -w FILE or -w -");
    config.discard_secrets = result.count("discard-secrets") > 0;
    if (config.discard_secrets && (!config.read_file || !config.writes_pcapng()))
        throw Error("--discard-secrets copies a file without its secrets: give -r FILE and -w FILE");
}

// The switches, the processes, the text view, the mode and the direction.
void parse_behaviour(const cxxopts::ParseResult& result, Config& config, std::vector<std::string> command)
{
    config.packet_buffered = result.count("packet-buffered") > 0;
    config.immediate = result.count("immediate-mode") > 0;
    config.verbose = result.count("verbose") > 0;
    config.rss_type_comments = result.count("rss-type-comments") > 0;
    config.quiet = result.count("quiet") > 0;
    config.print = result.count("print") > 0;
    config.drops = result.count("drops") > 0;
    config.process = parse_process_selection(result);
    // --container without -i: the container's interfaces seen from this
    // side, every packet on them (a restarted container's too, whose
    // processes are new).
    if (config.interfaces.empty() && !config.read_file && !config.dump_filter && config.process.container) {
        if (config.process.container_netns)
            throw Error("--container-netns looks for -i inside the --container's network namespace: give -i");
        config.container_interfaces = std::move(config.process.container);
        config.process.container.reset();
        config.process.attribute = result.count("k") > 0 || config.process.filters();
    }
    if (!command.empty()) {
        if (config.process.pid)
            throw Error("give either --pid or -- COMMAND: the command's packets are those of its process");
        if (config.read_file)
            throw Error("-- COMMAND applies to a live capture, not to -r");
        config.process.command = std::move(command);
        config.process.attribute = true;
    }
    if (result.count("tls-keylog")) {
        config.tls_keylog = result["tls-keylog"].as<std::string>();
        if (config.tls_keylog->empty())
            throw Error("--tls-keylog needs a file name");
        // Reading another program's memory is for the processes asked for.
        if (!config.process.wanted())
            throw Error("--tls-keylog reads the keys of the processes the capture selects: give --pid, --pname, "
                        "--cgroup, --container, -- COMMAND, or -k for every process");
    }
    parse_tls_keys(result, config);
    config.text = parse_text_options(result);
    if (config.print && config.writes_to_stdout())
        throw Error("--print cannot be used with -w -: standard output carries the pcapng stream");
    config.xdp_mode = parse_xdp_mode(result["xdp-mode"].as<std::string>());
    config.direction = parse_direction(result["direction"].as<std::string>());
    config.promiscuous = result.count("no-promiscuous-mode") == 0;
}

// -B and --ring-pages, --sample, -Z, --at and --program.
void parse_kernel_side(const cxxopts::ParseResult& result, Config& config)
{
    if (result.count("ring-pages") && result.count("buffer-size"))
        throw Error("give the ring size either with -B (KiB) or with --ring-pages, not both");
    if (result.count("ring-pages") && result["ring-pages"].as<std::string>() != "auto") {
        config.ring_pages = parse_ring_pages(result["ring-pages"].as<std::string>());
        config.ring_option = "--ring-pages " + result["ring-pages"].as<std::string>();
    }
    if (result.count("buffer-size")) {
        const auto page = ::sysconf(_SC_PAGESIZE);
        config.ring_pages =
            ring_pages_from_kib(result["buffer-size"].as<std::string>(), page > 0 ? static_cast<size_t>(page) : 4096);
        config.ring_option = "-B " + result["buffer-size"].as<std::string>();
    }
    if (result.count("sample"))
        config.sample_every = parse_sample(result["sample"].as<std::string>());
    if (result.count("relinquish-privileges"))
        config.user = parse_user(result["relinquish-privileges"].as<std::string>());
    if (result.count("at"))
        parse_at(result["at"].as<std::string>(), config);
    if (result.count("program")) {
        config.trace_program = result["program"].as<std::string>();
        if (config.trace_program->empty())
            throw Error("--program must name a program or give its id");
    }
    if ((config.at_given || config.trace_program) && config.direction == Direction::Out)
        throw Error("--at and --program trace an XDP program on received frames; -Q out captures none");
}

void parse_expression(const cxxopts::ParseResult& result, Config& config)
{
    if (result.count("expression")) {
        for (const auto& word : result["expression"].as<std::vector<std::string>>()) {
            if (!config.filter.empty())
                config.filter += ' ';
            config.filter += word;
        }
    }
    if (config.filter_file && !config.filter.empty())
        throw Error("give the filter expression either with -F or on the command line, not both");
}

} // namespace

CliOutcome parse_cli(int argc, const char* const* argv)
{
    auto options = make_options();
    std::vector<std::string> args = translate_number_flag(argc, argv);
    std::vector<std::string> command = split_off_command(args);
    const cxxopts::ParseResult result = parse_options(options, args);
    if (result.count("help"))
        return ShowText{without_trailing_spaces(options.help({""}))};
    if (result.count("version"))
        return ShowText{"xdpcap " + std::string(kVersion) + "\n"};

    Config config;
    config.dump_filter = result.count("dump-filter") > 0;
    config.list_interfaces = result.count("list-interfaces") > 0;
    if (config.list_interfaces)
        return config;
    parse_sources(result, config);
    parse_output(result, config);
    parse_behaviour(result, config, std::move(command));
    parse_kernel_side(result, config);
    parse_expression(result, config);
    return config;
}

} // namespace xdpcap
