#include "app/extcap.hpp"

#include <fcntl.h>
#include <net/if.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <memory>
#include <string_view>
#include <variant>

#include "app/app.hpp"
#include "cli/cli.hpp"
#include "cli/config.hpp"
#include "base/error.hpp"
#include "filter/compile.hpp"
#include "filter/translate.hpp"
#include "base/unique_fd.hpp"
#include "version.hpp"

namespace xdpcap::extcap {

namespace {

struct Choice {
    std::string value;
    std::string display;
};

// One field of Wireshark's capture options dialog. Its call is xdpcap's own
// long option, passed on unchanged to the capture, so the CLI validates it.
struct ConfigArg {
    std::string option;
    std::string display;
    std::string type;    // extcap(4): integer, unsigned, selector, boolflag
    std::string fields;  // further {key=value} fields, such as a range
    std::string tooltip;
    std::vector<Choice> choices; // a selector's values; the first is the default
    bool is_flag() const { return type == "boolflag"; }
};

// Ring sizes Wireshark offers: every power of two --ring-pages accepts, after
// "auto" (xdpcap's default, as --ring-pages auto). An unsigned field without a default opens as 0,
// out of its range, and greys out the dialog's Save button.
std::vector<Choice> ring_size_choices()
{
    const long page = sysconf(_SC_PAGESIZE);
    std::vector<Choice> choices = {{"auto", "Default (32 MiB shared by the CPUs)"}};
    for (uint64_t pages = 1; pages <= 65536; pages *= 2) {
        const uint64_t kib = pages * static_cast<uint64_t>(page > 0 ? page : 4096) / 1024;
        choices.push_back({std::to_string(pages), std::to_string(pages) + (pages == 1 ? " page (" : " pages (") +
                                                      (kib >= 1024 ? std::to_string(kib / 1024) + " MiB)"
                                                                   : std::to_string(kib) + " KiB)")});
    }
    return choices;
}

// A new capture option (a trace mode, say) is one entry here.
const std::vector<ConfigArg>& config_args()
{
    static const std::vector<ConfigArg> args = {
        {"--snapshot-length", "Snapshot length", "integer",
         "{range=0," + std::to_string(kMaxSnaplen) + "}{default=0}",
         "Bytes kept of each packet; 0 keeps up to " + std::to_string(kMaxSnaplen),
         {}},
        {"--direction", "Direction", "selector", "", "Frames received (XDP or tc ingress hook), sent (tc egress hook) or both",
         {{"inout", "Received and sent"}, {"in", "Received"}, {"out", "Sent"}}},
        {"--xdp-mode", "XDP mode", "selector", "", "How the XDP program is attached to the interface",
         {{"auto", "Native XDP (tc ingress on a veth or where the driver has none)"},
          {"native", "Native (in the driver)"},
          {"generic", "Generic (any driver, slower)"}}},
        {"--at", "Trace points", "selector", "",
         "Where the interface already runs an XDP program: trace it at entry, exit or both",
         {{"entry,exit", "Entry and exit"}, {"entry", "Entry"}, {"exit", "Exit"}}},
        {"--ring-pages", "Ring size (pages per CPU)", "selector", "",
         "Per-CPU ring size; the default gives each CPU 1 to 16 MiB of 32 MiB; a larger ring absorbs longer "
         "bursts", ring_size_choices()},
        {"--no-promiscuous-mode", "Leave promiscuous mode alone", "boolflag", "{default=false}",
         "Do not put the interface into promiscuous mode", {}},
        {"--drops", "Kernel drops", "boolflag", "{default=false}",
         "Also capture the packets the kernel drops on the interface, each with the drop reason in its comment",
         {}},
        // The process selection: an empty field selects nothing (every process).
        {"-k", "Process names", "boolflag", "{default=false}",
         "Name the process that owns each packet's local socket (command, pid, thread, container) in its comment",
         {}},
        {"--pid", "Process ID", "string", "{default=}{validation=^[0-9]*$}",
         "Only the packets of this process's sockets; empty for every process", {}},
        {"--pname", "Process name", "string", "{default=}",
         "Only the packets of processes with this command name (the kernel keeps 15 bytes); empty for any", {}},
        {"--container", "Container", "string", "{default=}",
         "Only the packets of this podman or docker container's processes (name or ID); empty for any", {}},
    };
    return args;
}

// Wireshark's extcap parser (extcap_parser.c) unescapes nothing: a field's
// value runs to the first '}' followed by '{', white space or the end of
// the line, and a line that is not valid UTF-8 is dropped whole. These
// helpers keep every value within those rules.

// The length of the valid UTF-8 character at text[at], 0 if there is none
// (as g_utf8_validate: no overlong forms, surrogates or code points past
// U+10FFFF).
size_t utf8_length(std::string_view text, size_t at)
{
    const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
    const unsigned char lead = byte(at);
    if (lead < 0x80)
        return 1;
    const size_t length = lead >= 0xc2 && lead <= 0xdf ? 2 : lead >= 0xe0 && lead <= 0xef ? 3
        : lead >= 0xf0 && lead <= 0xf4                 ? 4
                                                       : 0;
    if (length == 0 || at + length > text.size())
        return 0;
    for (size_t i = 1; i < length; ++i) {
        if ((byte(at + i) & 0xc0) != 0x80)
            return 0;
    }
    const unsigned char second = byte(at + 1);
    if ((lead == 0xe0 && second < 0xa0) || (lead == 0xed && second > 0x9f) || (lead == 0xf0 && second < 0x90) ||
        (lead == 0xf4 && second > 0x8f))
        return 0;
    return length;
}

bool is_control(unsigned char c)
{
    return c < 0x20 || c == 0x7f;
}

// Would end a value early right after a '}': '{' or white space, which for
// the parser may be any Unicode space (so any character past ASCII).
bool ends_value_after_brace(std::string_view text, size_t at)
{
    if (at >= text.size())
        return false; // the value's own closing '}' comes next
    const auto c = static_cast<unsigned char>(text[at]);
    return c == '{' || c == ' ' || is_control(c) || c >= 0x80;
}

void append_hex_escape(std::string& out, unsigned char c)
{
    static constexpr char kDigits[] = "0123456789abcdef";
    out += "\\x";
    out += kDigits[c >> 4];
    out += kDigits[c & 0xf];
}

// A text Wireshark shows (display, tooltip), shown as it is: a '}' that
// would end the value early gets an invisible word joiner (U+2060) after
// it; control bytes and bytes that are not UTF-8 show as \xNN.
std::string shown(std::string_view text)
{
    std::string out;
    for (size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        const size_t length = is_control(c) ? 0 : utf8_length(text, i);
        if (length == 0) {
            append_hex_escape(out, c);
            ++i;
            continue;
        }
        out.append(text, i, length);
        i += length;
        if (c == '}' && ends_value_after_brace(text, i))
            out += "\xe2\x81\xa0"; // U+2060 WORD JOINER, in UTF-8
    }
    return out;
}

// An interface's value, which Wireshark passes back as --extcap-interface:
// the name as it is, but for '\' doubled and, as \xNN, a '}' that would
// end the value early, control bytes and bytes that are not UTF-8.
// interface_name() reads it back.
std::string call_value(std::string_view name)
{
    std::string out;
    for (size_t i = 0; i < name.size();) {
        const auto c = static_cast<unsigned char>(name[i]);
        const size_t length = is_control(c) ? 0 : utf8_length(name, i);
        if (c == '\\') {
            out += "\\\\";
        } else if (length == 0 || (c == '}' && ends_value_after_brace(name, i + 1))) {
            append_hex_escape(out, c);
            i += 1;
            continue;
        } else {
            out.append(name, i, length);
        }
        i += length;
    }
    return out;
}

std::string from_call_value(std::string_view value)
{
    std::string name;
    for (size_t i = 0; i < value.size(); ++i) {
        if (value[i] != '\\') {
            name += value[i];
            continue;
        }
        if (i + 1 < value.size() && value[i + 1] == '\\') {
            name += '\\';
            ++i;
            continue;
        }
        unsigned byte = 0;
        const char* digits = value.data() + i + 2;
        if (i + 4 > value.size() || value[i + 1] != 'x' ||
            std::from_chars(digits, digits + 2, byte, 16).ptr != digits + 2)
            throw Error("extcap interface value '" + std::string(value) + "' has a bad escape at byte " +
                        std::to_string(i));
        name += static_cast<char>(byte);
        i += 3;
    }
    return name;
}

const ConfigArg* find_config_arg(const std::string& option)
{
    for (const ConfigArg& arg : config_args()) {
        if (arg.option == option)
            return &arg;
    }
    return nullptr;
}

std::string interface_name(const std::string& value)
{
    const std::string prefix = kInterfacePrefix;
    if (value.rfind(prefix, 0) != 0 || value.size() == prefix.size())
        throw Error("extcap interface '" + value + "' is not one of xdpcap's (" + prefix + "IFACE)");
    return from_call_value(std::string_view(value).substr(prefix.size()));
}

std::vector<std::string> network_interfaces()
{
    std::unique_ptr<struct if_nameindex, decltype(&if_freenameindex)> list(if_nameindex(), if_freenameindex);
    if (!list)
        throw Error("cannot list the network interfaces: " + errno_text(errno));
    std::vector<std::string> names;
    for (const struct if_nameindex* entry = list.get(); entry->if_index != 0; ++entry)
        names.emplace_back(entry->if_name);
    return names;
}

// What Wireshark checks as the user types a capture filter: empty output
// means valid, otherwise the output is the reason.
void check_filter(const std::string& expression)
{
    if (expression.find_first_not_of(' ') == std::string::npos)
        return;
    const ClassicProgram classic = compile_filter(expression);
    (void)translate_filter(classic.instructions(), FilterTarget{});
}

std::string version_line()
{
    return std::string("extcap {version=") + kVersion + "}{help=man:xdpcap(8)}\n";
}

} // namespace

bool is_extcap_call(int argc, const char* const* argv)
{
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--")
            return false;
        if (arg.rfind("--extcap-", 0) == 0 || arg == "--capture" || arg == "--fifo" || arg.rfind("--fifo=", 0) == 0)
            return true;
    }
    return false;
}

Request parse(int argc, const char* const* argv)
{
    Request request;
    std::vector<Action> actions;
    bool filter_given = false;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        std::string name = arg;
        std::string value;
        bool inline_value = false;
        if (const auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
            name = arg.substr(0, eq);
            value = arg.substr(eq + 1);
            inline_value = true;
        }
        const auto take_value = [&]() -> std::string {
            if (inline_value)
                return value;
            if (i + 1 >= argc)
                throw Error("extcap option " + name + " is missing its value");
            return argv[++i];
        };
        const auto no_value = [&] {
            if (inline_value)
                throw Error("extcap option " + name + " takes no value");
        };

        if (name == "--extcap-interfaces") {
            no_value();
            actions.push_back(Action::Interfaces);
        } else if (name == "--extcap-dlts") {
            no_value();
            actions.push_back(Action::Dlts);
        } else if (name == "--extcap-config") {
            no_value();
            actions.push_back(Action::Config);
        } else if (name == "--capture") {
            no_value();
            actions.push_back(Action::Capture);
        } else if (name == "--extcap-interface") {
            request.interface = interface_name(take_value());
        } else if (name == "--fifo") {
            request.fifo = take_value();
            if (request.fifo.empty())
                throw Error("extcap option --fifo needs a path");
        } else if (name == "--extcap-capture-filter") {
            request.filter = take_value();
            filter_given = true;
        } else if (name == "--extcap-version") {
            // Wireshark tells its own version (--extcap-version=4.0); nothing depends on it.
        } else if (name == "--extcap-control-in" || name == "--extcap-control-out") {
            (void)take_value(); // sent only to tools that declare controls; xdpcap has none
        } else if (const ConfigArg* config = find_config_arg(name)) {
            if (config->is_flag()) {
                no_value();
                request.options.push_back(name);
            } else if (std::string v = take_value(); !v.empty()) { // an empty field means the default
                request.options.push_back(name);
                request.options.push_back(std::move(v));
            }
        } else {
            throw Error("unknown extcap option '" + arg + "'");
        }
    }

    if (actions.size() > 1)
        throw Error("extcap: give one of --extcap-interfaces, --extcap-dlts, --extcap-config and --capture");
    request.action = !actions.empty() ? actions.front() : filter_given ? Action::CheckFilter : Action::Version;
    const bool needs_interface = request.action == Action::Dlts || request.action == Action::Capture ||
        request.action == Action::CheckFilter;
    if (needs_interface && request.interface.empty())
        throw Error("extcap: no interface given: use --extcap-interface " + std::string(kInterfacePrefix) + "IFACE");
    if (request.action == Action::Capture && request.fifo.empty())
        throw Error("extcap: --capture needs --fifo PATH");
    return request;
}

std::string interfaces_text(const std::vector<std::string>& interfaces)
{
    std::string text = version_line();
    for (const std::string& name : interfaces) {
        text += "interface {value=" + std::string(kInterfacePrefix) + call_value(name) +
            "}{display=xdpcap capture on " + shown(name) + "}\n";
    }
    return text;
}

std::string dlts_text()
{
    return "dlt {number=1}{name=EN10MB}{display=Ethernet}\n";
}

std::string config_text()
{
    std::string text;
    const auto& args = config_args();
    for (size_t n = 0; n < args.size(); ++n) {
        const ConfigArg& arg = args[n];
        const std::string number = std::to_string(n);
        // Calls and values come back as they are: xdpcap's own words, which
        // the parser keeps as written (the unit test holds them to that).
        text += "arg {number=" + number + "}{call=" + arg.option + "}{display=" + shown(arg.display) +
            "}{type=" + arg.type + "}" + arg.fields + "{tooltip=" + shown(arg.tooltip) + "}\n";
        for (size_t c = 0; c < arg.choices.size(); ++c) {
            text += "value {arg=" + number + "}{value=" + arg.choices[c].value + "}{display=" +
                shown(arg.choices[c].display) + "}" + (c == 0 ? "{default=true}" : "") + "\n";
        }
    }
    return text;
}

std::vector<std::string> capture_command(const Request& request)
{
    // -q: no start-up warnings, since Wireshark shows whatever reaches stderr
    // as an error (run() leaves out the start lines too).
    std::vector<std::string> command = {"xdpcap", "-i", request.interface, "-w", request.fifo, "-q"};
    command.insert(command.end(), request.options.begin(), request.options.end());
    // One word, last; "--" would start a command to run. A leading space
    // keeps a filter that starts with '-' from reading as an option, and
    // changes nothing for libpcap.
    if (request.filter.find_first_not_of(' ') != std::string::npos)
        command.push_back(request.filter.front() == '-' ? " " + request.filter : request.filter);
    return command;
}

int run(int argc, const char* const* argv)
{
    const Request request = parse(argc, argv);
    switch (request.action) {
    case Action::Version:
        std::fputs(version_line().c_str(), stdout);
        return kExitOk;
    case Action::Interfaces:
        std::fputs(interfaces_text(network_interfaces()).c_str(), stdout);
        return kExitOk;
    case Action::Dlts:
        std::fputs(dlts_text().c_str(), stdout);
        return kExitOk;
    case Action::Config:
        std::fputs(config_text().c_str(), stdout);
        return kExitOk;
    case Action::CheckFilter:
        try {
            check_filter(request.filter);
        } catch (const Error& e) {
            std::printf("%s\n", e.what());
            return kExitSetup;
        }
        return kExitOk;
    case Action::Capture:
        break;
    }
    // Opened before anything can fail: Wireshark's capture child may already
    // be waiting for a writer, and would go on waiting for one that exited
    // with an error. Closed on return, after the capture's own descriptor.
    const UniqueFd writer(::open(request.fifo.c_str(), O_WRONLY | O_CLOEXEC));
    if (!writer)
        throw Error("cannot open " + request.fifo + ": " + errno_text(errno));
    const std::vector<std::string> command = capture_command(request);
    std::vector<const char*> args;
    for (const std::string& word : command)
        args.push_back(word.c_str());
    Config config = std::get<Config>(parse_cli(static_cast<int>(args.size()), args.data()));
    // Wireshark takes anything on stderr for an error.
    config.statistics = false;
    config.warnings = false;
    config.start_lines = false;
    return run_capture(config);
}

} // namespace xdpcap::extcap
