// Wireshark's calls (extcap(4)) and xdpcap's answers, without root.
#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "base/error.hpp"
#include "app/extcap.hpp"

using namespace xdpcap;

namespace {

std::vector<const char*> argv_of(std::initializer_list<const char*> args)
{
    std::vector<const char*> argv{"xdpcap"};
    argv.insert(argv.end(), args);
    return argv;
}

extcap::Request parse(std::initializer_list<const char*> args)
{
    const auto argv = argv_of(args);
    return extcap::parse(static_cast<int>(argv.size()), argv.data());
}

bool is_call(std::initializer_list<const char*> args)
{
    const auto argv = argv_of(args);
    return extcap::is_extcap_call(static_cast<int>(argv.size()), argv.data());
}

std::string error_of(std::initializer_list<const char*> args)
{
    try {
        parse(args);
    } catch (const Error& e) {
        EXPECT_EQ(e.exit_status(), kExitSetup);
        return e.what();
    }
    ADD_FAILURE() << "no error raised";
    return {};
}

std::vector<std::string> lines_of(const std::string& text)
{
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        lines.push_back(line);
    return lines;
}

} // namespace

TEST(Extcap, RecognisesWiresharksCalls)
{
    EXPECT_TRUE(is_call({"--extcap-interfaces", "--extcap-version=4.0"}));
    EXPECT_TRUE(is_call({"--extcap-config", "--extcap-interface", "xdpcap:eth0"}));
    EXPECT_TRUE(is_call({"--capture", "--extcap-interface", "xdpcap:eth0", "--fifo", "/tmp/f"}));
    EXPECT_TRUE(is_call({"--extcap-version"}));
    EXPECT_FALSE(is_call({"-i", "eth0", "-w", "out.pcapng"}));
    EXPECT_FALSE(is_call({"--version"}));
    // After "--" everything is the command to run.
    EXPECT_FALSE(is_call({"-i", "eth0", "--", "--capture"}));
}

TEST(Extcap, Actions)
{
    EXPECT_EQ(parse({"--extcap-interfaces", "--extcap-version=4.0"}).action, extcap::Action::Interfaces);
    EXPECT_EQ(parse({"--extcap-version=4.0"}).action, extcap::Action::Version);
    const auto dlts = parse({"--extcap-dlts", "--extcap-interface", "xdpcap:eth0"});
    EXPECT_EQ(dlts.action, extcap::Action::Dlts);
    EXPECT_EQ(dlts.interface, "eth0");
    EXPECT_EQ(parse({"--extcap-config", "--extcap-interface=xdpcap:eth0"}).action, extcap::Action::Config);
    const auto check = parse({"--extcap-interface", "xdpcap:eth0", "--extcap-capture-filter", "tcp port 80"});
    EXPECT_EQ(check.action, extcap::Action::CheckFilter);
    EXPECT_EQ(check.filter, "tcp port 80");
}

TEST(Extcap, CaptureRequestBecomesTheNormalCommandLine)
{
    const auto r = parse({"--capture", "--extcap-interface", "xdpcap:cap0", "--fifo", "/tmp/wireshark_extcap_x",
                          "--extcap-capture-filter", "udp port 53", "--snapshot-length", "96", "--direction=in",
                          "--xdp-mode", "generic", "--ring-pages", "", "--no-promiscuous-mode", "--drops"});
    EXPECT_EQ(r.action, extcap::Action::Capture);
    EXPECT_EQ(r.fifo, "/tmp/wireshark_extcap_x");
    const std::vector<std::string> expected = {
        "xdpcap", "-i", "cap0", "-w", "/tmp/wireshark_extcap_x", "-q", "--snapshot-length", "96", "--direction", "in",
        "--xdp-mode", "generic", "--no-promiscuous-mode", "--drops", "udp port 53"};
    const auto command = extcap::capture_command(r);
    EXPECT_EQ(command, expected);

    // ... which the CLI accepts as the capture asked for.
    std::vector<const char*> argv;
    for (const auto& word : command)
        argv.push_back(word.c_str());
    const Config c = std::get<Config>(parse_cli(static_cast<int>(argv.size()), argv.data()));
    EXPECT_EQ(c.interfaces, std::vector<std::string>{"cap0"});
    EXPECT_EQ(c.output, "/tmp/wireshark_extcap_x");
    EXPECT_EQ(c.snaplen, 96u);
    EXPECT_EQ(c.direction, Direction::In);
    EXPECT_EQ(c.xdp_mode, XdpMode::Generic);
    EXPECT_FALSE(c.promiscuous);
    EXPECT_FALSE(c.ring_pages.has_value());
    EXPECT_EQ(c.filter, "udp port 53");
    EXPECT_TRUE(c.quiet);
}

// The dialog's process fields: -k and a selection reach the capture; a field
// left empty selects nothing.
TEST(Extcap, ProcessSelectionBecomesTheNormalCommandLine)
{
    const auto r = parse({"--capture", "--extcap-interface", "xdpcap:lo", "--fifo", "/f", "-k", "--pid", "1234",
                          "--pname", "", "--container=web"});
    const std::vector<std::string> expected = {"xdpcap", "-i", "lo", "-w", "/f", "-q", "-k", "--pid", "1234",
                                               "--container", "web"};
    const auto command = extcap::capture_command(r);
    EXPECT_EQ(command, expected);
    std::vector<const char*> argv;
    for (const auto& word : command)
        argv.push_back(word.c_str());
    const Config c = std::get<Config>(parse_cli(static_cast<int>(argv.size()), argv.data()));
    EXPECT_TRUE(c.process.attribute);
    EXPECT_EQ(c.process.pid, 1234u);
    EXPECT_EQ(c.process.container, "web");
    EXPECT_FALSE(c.process.comm.has_value());
}

TEST(Extcap, CaptureWithoutFilterOrOptions)
{
    const auto r = parse({"--capture", "--extcap-interface", "xdpcap:lo", "--fifo", "/f", "--extcap-capture-filter", ""});
    const std::vector<std::string> expected = {"xdpcap", "-i", "lo", "-w", "/f", "-q"};
    EXPECT_EQ(extcap::capture_command(r), expected);
}

TEST(Extcap, BadCalls)
{
    EXPECT_NE(error_of({"--extcap-dlts", "--extcap-interface", "eth0"}).find("xdpcap:IFACE"), std::string::npos);
    EXPECT_NE(error_of({"--extcap-dlts"}).find("no interface"), std::string::npos);
    EXPECT_NE(error_of({"--capture", "--extcap-interface", "xdpcap:eth0"}).find("--fifo"), std::string::npos);
    EXPECT_NE(error_of({"--capture", "--fifo", "/f", "--extcap-interface"}).find("missing its value"),
              std::string::npos);
    EXPECT_NE(error_of({"--extcap-interfaces", "--extcap-config"}).find("one of"), std::string::npos);
    EXPECT_NE(error_of({"--extcap-interfaces", "--bogus"}).find("'--bogus'"), std::string::npos);
    EXPECT_NE(error_of({"--extcap-interfaces=1"}).find("takes no value"), std::string::npos);
    for (const std::string& message : {error_of({"--extcap-dlts"}), error_of({"--extcap-interfaces", "-i"})})
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(Extcap, InterfacesText)
{
    const auto lines = lines_of(extcap::interfaces_text({"lo", "eth0"}));
    ASSERT_EQ(lines.size(), 3u);
    EXPECT_TRUE(std::regex_match(lines[0], std::regex(R"(extcap \{version=[0-9.]+\}\{help=[^}]+\})"))) << lines[0];
    EXPECT_EQ(lines[1], "interface {value=xdpcap:lo}{display=xdpcap capture on lo}");
    EXPECT_EQ(lines[2], "interface {value=xdpcap:eth0}{display=xdpcap capture on eth0}");
}

TEST(Extcap, DltsText)
{
    EXPECT_EQ(extcap::dlts_text(), "dlt {number=1}{name=EN10MB}{display=Ethernet}\n");
}

TEST(Extcap, ConfigText)
{
    const auto lines = lines_of(extcap::config_text());
    const std::regex arg_re(R"(arg \{number=(\d+)\}\{call=(-k|--[a-z-]+)\}\{display=[^}]+\}\{type=(\w+)\}(\{[a-z]+=[^}]*\})*)");
    const std::regex value_re(R"(value \{arg=(\d+)\}\{value=([\w,]+)\}\{display=[^}]+\}(\{default=true\})?)");
    std::vector<std::string> calls;
    std::vector<std::vector<std::string>> values;
    std::vector<int> defaults;
    for (const auto& line : lines) {
        std::smatch m;
        if (std::regex_match(line, m, arg_re)) {
            EXPECT_EQ(std::stoul(m[1]), calls.size()) << line;
            calls.push_back(m[2]);
            values.emplace_back();
            defaults.push_back(0);
        } else if (std::regex_match(line, m, value_re)) {
            ASSERT_FALSE(calls.empty()) << line;
            EXPECT_EQ(std::stoul(m[1]), calls.size() - 1) << line;
            values.back().push_back(m[2]);
            defaults.back() += m[3].matched ? 1 : 0;
        } else {
            ADD_FAILURE() << "not an arg or value line: " << line;
        }
    }
    const std::vector<std::string> expected_calls = {"--snapshot-length", "--direction", "--xdp-mode", "--at",
                                                     "--ring-pages", "--no-promiscuous-mode", "--drops",
                                                     "-k",           "--pid",        "--pname",
                                                     "--container"};
    EXPECT_EQ(calls, expected_calls);
    EXPECT_EQ(values[1], (std::vector<std::string>{"inout", "in", "out"}));
    EXPECT_EQ(values[2], (std::vector<std::string>{"auto", "native", "generic"}));
    EXPECT_EQ(values[3], (std::vector<std::string>{"entry,exit", "entry", "exit"}));
    EXPECT_EQ(defaults[1], 1);
    EXPECT_EQ(defaults[2], 1);
    EXPECT_EQ(defaults[3], 1);
    EXPECT_NE(lines[0].find("{range=0,262144}"), std::string::npos) << lines[0];
    EXPECT_EQ(values[4].front(), "auto");
    EXPECT_EQ(values[4].size(), 18u) << "auto and every power of two from 1 to 65536";
    EXPECT_EQ(defaults[4], 1);

    // Wireshark's dialog opens every field with a valid value, or it greys
    // out Save: a selector has one default value; a number field a default
    // inside its range; a flag a default.
    for (const auto& line : lines) {
        std::smatch m;
        if (!std::regex_match(line, m, arg_re))
            continue;
        const std::string type = m[3];
        const size_t n = std::stoul(m[1]);
        if (type == "selector") {
            EXPECT_EQ(defaults[n], 1) << line;
            continue;
        }
        std::smatch d;
        ASSERT_TRUE(std::regex_search(line, d, std::regex(R"(\{default=([^}]*)\})"))) << "no default: " << line;
        std::smatch r;
        if (std::regex_search(line, r, std::regex(R"(\{range=(\d+),(\d+)\})"))) {
            const unsigned long value = std::stoul(d[1]);
            EXPECT_TRUE(value >= std::stoul(r[1]) && value <= std::stoul(r[2])) << "default out of range: " << line;
        }
    }

    // Every value offered is one the CLI takes.
    for (size_t i = 0; i < calls.size(); ++i) {
        for (const auto& value : values[i]) {
            const char* argv[] = {"xdpcap", "-i", "eth0", calls[i].c_str(), value.c_str()};
            EXPECT_NO_THROW(parse_cli(5, argv)) << calls[i] << " " << value;
        }
    }
}

namespace {

// Wireshark's reading of one extcap line (extcap_parser.c): the sentence
// word, then every {key=value}, a value ending at the first '}' followed by
// '{', white space or the end of the line. Nothing is unescaped; a line
// that is not valid UTF-8 is dropped (checked on its own below).
std::vector<std::pair<std::string, std::string>> wireshark_fields(const std::string& line)
{
    static const std::regex sentence(R"(^[\t| ]*(arg|value|interface|extcap|dlt|control)(?=[\t| ]+\{))",
                                     std::regex::icase);
    static const std::regex field(R"(\{([a-zA-Z_-]*?)\=(.*?)\}(?=\{|$|\s))", std::regex::icase);
    std::vector<std::pair<std::string, std::string>> fields;
    if (!std::regex_search(line, sentence))
        return fields;
    for (auto it = std::sregex_iterator(line.begin(), line.end(), field); it != std::sregex_iterator(); ++it)
        fields.emplace_back((*it)[1].str(), (*it)[2].str());
    return fields;
}

std::string field_of(const std::string& line, const std::string& key)
{
    for (const auto& [k, v] : wireshark_fields(line)) {
        if (k == key)
            return v;
    }
    ADD_FAILURE() << "no {" << key << "=...} in " << line;
    return {};
}

// No control characters, and every byte past ASCII part of a valid UTF-8
// character (g_utf8_validate would drop the line otherwise).
bool clean_utf8(const std::string& line)
{
    for (size_t i = 0; i < line.size();) {
        const auto c = static_cast<unsigned char>(line[i]);
        if (c < 0x20 || c == 0x7f)
            return false;
        const size_t length = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
        if (length == 0 || (length == 2 && c < 0xc2) || i + length > line.size())
            return false;
        for (size_t k = 1; k < length; ++k) {
            if ((static_cast<unsigned char>(line[i + k]) & 0xc0) != 0x80)
                return false;
        }
        i += length;
    }
    return true;
}

std::string without_word_joiners(std::string text)
{
    for (size_t at; (at = text.find("\xe2\x81\xa0")) != std::string::npos;)
        text.erase(at, 3);
    return text;
}

} // namespace

// Names the kernel allows (anything but '/', ':' and white space): each
// reaches Wireshark whole, and the value it calls back with names it again.
TEST(Extcap, InterfaceNamesSurviveWiresharksParser)
{
    const std::vector<std::string> names = {"eth0", "a{b}c", "x}{y", "p}", "}{", "{v=1}{display=z}",
                                            "b\\s}{\\x41", "caf\xc3\xa9}", "bad\xff}{", "ctl\x1b]2;"};
    const auto lines = lines_of(extcap::interfaces_text(names));
    ASSERT_EQ(lines.size(), names.size() + 1);
    for (size_t i = 0; i < names.size(); ++i) {
        const std::string& line = lines[i + 1];
        EXPECT_TRUE(clean_utf8(line)) << line;
        const std::string value = field_of(line, "value");
        const auto argv = argv_of({"--extcap-dlts", "--extcap-interface", value.c_str()});
        EXPECT_EQ(extcap::parse(static_cast<int>(argv.size()), argv.data()).interface, names[i]) << line;
        const std::string display = field_of(line, "display");
        if (clean_utf8(names[i])) {
            EXPECT_EQ(without_word_joiners(display), "xdpcap capture on " + names[i]) << line;
        }
    }
    // Names that need nothing stay as they are.
    EXPECT_EQ(lines[1], "interface {value=xdpcap:eth0}{display=xdpcap capture on eth0}");
    EXPECT_EQ(field_of(lines[2], "value"), "xdpcap:a{b}c");
    EXPECT_EQ(field_of(lines[2], "display"), "xdpcap capture on a{b}c");
    EXPECT_EQ(field_of(lines[9], "display"), "xdpcap capture on bad\\xff}\xe2\x81\xa0{");
}

TEST(Extcap, BadEscapeInInterfaceValue)
{
    EXPECT_NE(error_of({"--extcap-dlts", "--extcap-interface", "xdpcap:a\\q"}).find("bad escape"), std::string::npos);
    EXPECT_NE(error_of({"--extcap-dlts", "--extcap-interface", "xdpcap:a\\x4"}).find("bad escape"), std::string::npos);
}

// Every field of the config and DLT answers reads back as written.
TEST(Extcap, ConfigFieldsSurviveWiresharksParser)
{
    for (const std::string& text : {extcap::config_text(), extcap::dlts_text()}) {
        for (const std::string& line : lines_of(text)) {
            EXPECT_TRUE(clean_utf8(line)) << line;
            std::string rebuilt = line.substr(0, line.find(' ') + 1);
            for (const auto& [key, value] : wireshark_fields(line))
                rebuilt += "{" + key + "=" + value + "}";
            EXPECT_EQ(rebuilt, line);
        }
    }
}
