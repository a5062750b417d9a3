#include <gtest/gtest.h>

#include <unistd.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "base/error.hpp"

using namespace xdpcap;

namespace {

CliOutcome parse(std::initializer_list<const char*> args)
{
    std::vector<const char*> argv{"xdpcap"};
    argv.insert(argv.end(), args);
    return parse_cli(static_cast<int>(argv.size()), argv.data());
}

Config parse_config(std::initializer_list<const char*> args)
{
    return std::get<Config>(parse(args));
}

// The message of the Error that parsing raises; fails the test if none.
std::string error_of(std::initializer_list<const char*> args)
{
    try {
        parse(args);
    } catch (const Error& e) {
        EXPECT_EQ(e.exit_status(), kExitSetup);
        const std::string message = e.what();
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
        return message;
    }
    ADD_FAILURE() << "no error raised";
    return {};
}

} // namespace

TEST(Cli, Defaults)
{
    const Config c = parse_config({"-i", "eth0"});
    EXPECT_EQ(c.interfaces, std::vector<std::string>{"eth0"});
    EXPECT_FALSE(c.output);
    EXPECT_EQ(c.snaplen, kMaxSnaplen);
    EXPECT_FALSE(c.count);
    EXPECT_EQ(c.xdp_mode, XdpMode::Auto);
    EXPECT_FALSE(c.ring_pages.has_value());
    EXPECT_FALSE(c.packet_buffered);
}

TEST(Cli, TcpdumpSpellings)
{
    const Config c = parse_config({"-i", "eth0", "-w", "-", "-s", "96", "-c", "10", "-U", "-v", "--xdp-mode",
                                   "generic", "--ring-pages", "64"});
    EXPECT_TRUE(c.writes_to_stdout());
    EXPECT_EQ(c.snaplen, 96u);
    EXPECT_EQ(c.count, 10u);
    EXPECT_TRUE(c.packet_buffered);
    EXPECT_TRUE(c.verbose);
    EXPECT_EQ(c.xdp_mode, XdpMode::Generic);
    EXPECT_EQ(c.ring_pages, 64u);
}

TEST(Cli, LongSpellings)
{
    const Config c = parse_config({"--interface=veth1", "--write", "out.pcapng", "--snapshot-length", "0",
                                   "--count", "1", "--packet-buffered", "--quiet"});
    EXPECT_EQ(c.interfaces, std::vector<std::string>{"veth1"});
    EXPECT_EQ(*c.output, "out.pcapng");
    EXPECT_EQ(c.snaplen, kMaxSnaplen);
    EXPECT_EQ(c.count, 1u);
    EXPECT_TRUE(c.quiet);
}

TEST(Cli, FilterWords)
{
    const Config c = parse_config({"-i", "e", "tcp", "port", "443", "and", "not", "host", "198.18.0.9"});
    EXPECT_EQ(c.filter, "tcp port 443 and not host 198.18.0.9");
    EXPECT_EQ(*parse_config({"-i", "e", "-F", "expr.txt"}).filter_file, "expr.txt");
    // -d needs no interface, as with tcpdump -d.
    EXPECT_TRUE(parse_config({"-d", "udp"}).dump_filter);
}

TEST(Cli, SnaplenAboveMaximumIsClamped)
{
    EXPECT_EQ(parse_config({"-i", "e", "-s", "262144"}).snaplen, kMaxSnaplen);
}

TEST(Cli, HelpAndVersion)
{
    const auto help = std::get<ShowText>(parse({"--help"})).text;
    EXPECT_NE(help.find("--interface"), std::string::npos);
    EXPECT_NE(help.find("--ring-pages"), std::string::npos);
    EXPECT_EQ(std::get<ShowText>(parse({"--version"})).text.rfind("xdpcap ", 0), 0u);
}

TEST(Cli, BadInput)
{
    EXPECT_NE(error_of({}).find("no interface"), std::string::npos);
    EXPECT_NE(error_of({"-w", "x"}).find("-i IFACE"), std::string::npos);
    EXPECT_NE(error_of({"-i", "e", "-c", "0"}).find("invalid packet count '0'"), std::string::npos);
    EXPECT_NE(error_of({"-i", "e", "-c", "-1"}).find("invalid packet count"), std::string::npos);
    EXPECT_NE(error_of({"-i", "e", "-c", "abc"}).find("invalid packet count 'abc'"), std::string::npos);
    EXPECT_NE(error_of({"-i", "e", "-c", "99999999999999999999999"}).find("invalid packet count"), std::string::npos);
    EXPECT_NE(error_of({"-i", "e", "-s", "-5"}).find("must not be negative"), std::string::npos);
    EXPECT_NE(error_of({"-i", "e", "-s", "12x"}).find("invalid snapshot length"), std::string::npos);
    EXPECT_NE(error_of({"-i", "e", "--ring-pages", "3"}).find("power of two"), std::string::npos);
    EXPECT_FALSE(parse_config({"-i", "e", "--ring-pages", "auto"}).ring_pages.has_value());
    EXPECT_NE(error_of({"-i", "e", "--ring-pages", "0"}).find("power of two"), std::string::npos);
    EXPECT_NE(error_of({"-i", "e", "--ring-pages", "131072"}).find("power of two"), std::string::npos);
    EXPECT_NE(error_of({"-i", "e", "--xdp-mode", "fast"}).find("native, generic or auto"), std::string::npos);
    EXPECT_NE(error_of({"-i", "e", "--bogus"}).find("bogus"), std::string::npos);
    EXPECT_NE(error_of({"-i", "e", "-w"}).find("option -w is missing an argument"), std::string::npos);
    EXPECT_NE(error_of({"-i", "averyveryverylongname"}).find("too long"), std::string::npos);
    EXPECT_NE(error_of({"-i", "a/b"}).find("cannot have"), std::string::npos);
    EXPECT_NE(error_of({"-i", "e", "-F", "f", "tcp"}).find("either with -F or on the command line"),
              std::string::npos);
}

TEST(Cli, DirectionAsTcpdump)
{
    EXPECT_EQ(parse_config({"-i", "eth0"}).direction, Direction::InOut);
    EXPECT_EQ(parse_config({"-i", "eth0", "-Q", "in"}).direction, Direction::In);
    EXPECT_EQ(parse_config({"-i", "eth0", "-Q", "out"}).direction, Direction::Out);
    EXPECT_EQ(parse_config({"-i", "eth0", "--direction=inout"}).direction, Direction::InOut);
    EXPECT_EQ(parse_config({"-i", "eth0", "--direction", "out"}).direction, Direction::Out);
    EXPECT_EQ(error_of({"-i", "eth0", "-Q", "both"}), "invalid direction 'both': expected in, out or inout");
    EXPECT_EQ(error_of({"-i", "eth0", "-Q", "IN"}), "invalid direction 'IN': expected in, out or inout");
}

TEST(Cli, PromiscuousByDefault)
{
    EXPECT_TRUE(parse_config({"-i", "eth0"}).promiscuous);
    EXPECT_FALSE(parse_config({"-i", "eth0", "-p"}).promiscuous);
    EXPECT_FALSE(parse_config({"-i", "eth0", "--no-promiscuous-mode"}).promiscuous);
}

TEST(Cli, SnaplenBeyondSixtyFourBitsMeansTheMaximum)
{
    EXPECT_EQ(parse_config({"-i", "e", "-s", "99999999999999999999999999"}).snaplen, kMaxSnaplen);
    EXPECT_EQ(error_of({"-i", "e", "-s", "9999999999999999999999x"}),
              "invalid snapshot length '9999999999999999999999x': expected a whole number of bytes");
}

TEST(Cli, TraceHookPoints)
{
    const Config plain = parse_config({"-i", "e"});
    EXPECT_TRUE(plain.trace_entry && plain.trace_exit);
    EXPECT_FALSE(plain.at_given);
    EXPECT_FALSE(plain.trace_program);
    const Config entry = parse_config({"-i", "e", "--at", "entry"});
    EXPECT_TRUE(entry.trace_entry && !entry.trace_exit && entry.at_given);
    const Config exit = parse_config({"-i", "e", "--at", "exit"});
    EXPECT_TRUE(!exit.trace_entry && exit.trace_exit);
    const Config both = parse_config({"-i", "e", "--at", "exit,entry"});
    EXPECT_TRUE(both.trace_entry && both.trace_exit);
    for (const char* bad : {"", "entry,", "entry,entry", "middle", "Entry", ",exit"})
        EXPECT_EQ(error_of({"-i", "e", "--at", bad}),
                  "invalid --at '" + std::string(bad) + "': expected entry, exit or entry,exit");
}

TEST(Cli, TraceProgram)
{
    EXPECT_EQ(*parse_config({"-i", "e", "--program", "xdp_verdicts"}).trace_program, "xdp_verdicts");
    EXPECT_EQ(*parse_config({"-i", "e", "--program", "42"}).trace_program, "42");
    EXPECT_EQ(error_of({"-i", "e", "--program", ""}), "--program must name a program or give its id");
    EXPECT_EQ(error_of({"-i", "e", "-Q", "out", "--program", "x"}),
              "--at and --program trace an XDP program on received frames; -Q out captures none");
    EXPECT_EQ(error_of({"-i", "e", "-Q", "out", "--at", "exit"}),
              "--at and --program trace an XDP program on received frames; -Q out captures none");
}

TEST(Cli, SeveralInterfacesInTheOrderGiven)
{
    EXPECT_EQ(parse_config({"-i", "veth0", "--interface=veth1", "-i", "eth2"}).interfaces,
              (std::vector<std::string>{"veth0", "veth1", "eth2"}));
    // A comma is a character names may have, not a separator.
    EXPECT_EQ(parse_config({"-i", "a,b"}).interfaces, std::vector<std::string>{"a,b"});
    // A number is resolved when the capture starts: a name first, else an ifindex.
    EXPECT_EQ(parse_config({"-i", "2", "-i", "eth0"}).interfaces, (std::vector<std::string>{"2", "eth0"}));
}

// -i any: every interface; it is given alone.
TEST(Cli, AnyIsTakenAlone)
{
    EXPECT_EQ(parse_config({"-i", "any"}).interfaces, std::vector<std::string>{"any"});
    for (const std::string& message : {error_of({"-i", "eth0", "-i", "any"}), error_of({"-i", "any", "-i", "eth0"})})
        EXPECT_EQ(message, "-i any captures every interface: give it alone, without other -i");
}

TEST(Cli, AnInterfaceGivenTwiceIsRefused)
{
    EXPECT_EQ(error_of({"-i", "eth0", "-i", "eth1", "-i", "eth0"}), "interface 'eth0' is given twice with -i");
    EXPECT_NE(error_of({"-i", "eth0", "-i", ""}).find("must not be empty"), std::string::npos);
}

// -C is in millions of bytes, or KiB/MiB/GiB with a suffix, as tcpdump's.
TEST(Cli, RotationOptions)
{
    const Config c = parse_config({"-i", "e", "-w", "cap", "-C", "3", "-G", "60", "-W", "5", "-z", "gzip"});
    EXPECT_EQ(c.file_size, 3'000'000u);
    EXPECT_EQ(c.rotate_seconds, 60u);
    EXPECT_EQ(c.file_count, 5u);
    EXPECT_EQ(c.postrotate_command, "gzip");
    EXPECT_TRUE(c.rotates());
    EXPECT_EQ(parse_config({"-i", "e", "-w", "cap", "-C", "2k"}).file_size, 2048u);
    EXPECT_EQ(parse_config({"-i", "e", "-w", "cap", "-C", "2M"}).file_size, 2u << 20);
    EXPECT_EQ(parse_config({"-i", "e", "-w", "cap", "-C", "1g"}).file_size, 1u << 30);
    EXPECT_EQ(parse_config({"-i", "e", "-w", "cap", "--file-size", "1", "--file-count", "2",
                            "--postrotate-command", "x"}).file_count, 2u);
    EXPECT_EQ(parse_config({"-i", "e", "-w", "cap", "--rotate-seconds", "1"}).rotate_seconds, 1u);
    EXPECT_FALSE(parse_config({"-i", "e", "-w", "cap"}).rotates());
}

TEST(Cli, RotationRefusals)
{
    for (const char* option : {"-C", "-G", "-W", "-z"}) {
        EXPECT_EQ(error_of({"-i", "e", option, "1"}), std::string(option) + " cannot be used without -w FILE");
        EXPECT_NE(error_of({"-i", "e", "-w", "-", option, "1"}).find("standard output"), std::string::npos)
            << option;
    }
    EXPECT_EQ(error_of({"-i", "e", "-w", "f", "-W", "2"}), "-W cannot be used without -C or -G");
    EXPECT_EQ(error_of({"-i", "e", "-w", "f", "-z", "gzip"}), "-z cannot be used without -C or -G");
    for (const char* bad : {"0", "-1", "x", "1x", "1kk", "k", "", "99999999999999999999", "9007199254740992g"})
        EXPECT_NE(error_of({"-i", "e", "-w", "f", "-C", bad}).find("invalid file size"), std::string::npos) << bad;
    for (const char* option : {"-G", "-W"}) {
        for (const char* bad : {"0", "-1", "x", "2147483648", "1.5", ""})
            EXPECT_NE(error_of({"-i", "e", "-w", "f", "-C", "1", option, bad}).find("invalid number of"),
                      std::string::npos)
                << option << " " << bad;
    }
    EXPECT_EQ(error_of({"-i", "e", "-w", "f", "-C", "1", "-z", ""}), "-z needs a command");
}

TEST(Cli, HelpHasNoTrailingSpaces)
{
    const auto help = std::get<ShowText>(parse({"--help"})).text;
    size_t start = 0;
    int line_number = 1;
    while (start < help.size()) {
        size_t end = help.find('\n', start);
        if (end == std::string::npos)
            end = help.size();
        const std::string line = help.substr(start, end - start);
        EXPECT_TRUE(line.empty() || (line.back() != ' ' && line.back() != '\t'))
            << "line " << line_number << " ends in white space: '" << line << "'";
        start = end + 1;
        ++line_number;
    }
    // The wrapped descriptions are still there, word for word.
    EXPECT_NE(help.find("Write pcapng to FILE, or to standard output\n"), std::string::npos) << help;
    EXPECT_EQ(help.back(), '\n');
    for (const char* option : {"-Z, --relinquish-privileges USER", "-B, --buffer-size KIB", "--sample N"})
        EXPECT_NE(help.find(option), std::string::npos) << option;
}

TEST(Cli, RunAsUser)
{
    EXPECT_FALSE(parse_config({"-i", "e"}).user);
    EXPECT_EQ(parse_config({"-i", "e", "-Z", "nobody"}).user, "nobody");
    EXPECT_EQ(parse_config({"-i", "e", "--relinquish-privileges=tcpdump"}).user, "tcpdump");
    EXPECT_NE(error_of({"-i", "e", "-Z", ""}).find("-Z needs a user name"), std::string::npos);
    EXPECT_NE(error_of({"-i", "e", "-Z"}).find("option -Z is missing an argument"), std::string::npos);
}

TEST(Cli, Sample)
{
    EXPECT_EQ(parse_config({"-i", "e"}).sample_every, 1u);
    EXPECT_EQ(parse_config({"-i", "e", "--sample", "1"}).sample_every, 1u);
    EXPECT_EQ(parse_config({"-i", "e", "--sample", "10"}).sample_every, 10u);
    EXPECT_EQ(parse_config({"-i", "e", "--sample=4294967295"}).sample_every, 4294967295u);
    for (const char* bad : {"0", "-1", "-10", "ten", "1.5", "", "4294967296", "10x"})
        EXPECT_NE(error_of({"-i", "e", "--sample", bad}).find("invalid --sample"), std::string::npos) << bad;
}

TEST(Cli, BufferSizeInKib)
{
    // 4 KiB pages: KiB / 4, rounded down to a power of two.
    EXPECT_EQ(ring_pages_from_kib("4", 4096), 1u);
    EXPECT_EQ(ring_pages_from_kib("7", 4096), 1u);
    EXPECT_EQ(ring_pages_from_kib("8", 4096), 2u);
    EXPECT_EQ(ring_pages_from_kib("100", 4096), 16u); // 25 pages -> 16
    EXPECT_EQ(ring_pages_from_kib("1024", 4096), 256u);
    EXPECT_EQ(ring_pages_from_kib("262144", 4096), kMaxRingPages);
    EXPECT_EQ(ring_pages_from_kib("64", 65536), 1u); // 64 KiB pages
    EXPECT_EQ(ring_pages_from_kib("200", 65536), 2u);
    for (const char* bad : {"0", "3", "-4", "abc", "262145", ""}) {
        try {
            ring_pages_from_kib(bad, 4096);
            ADD_FAILURE() << bad << " accepted";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("invalid -B"), std::string::npos) << e.what();
        }
    }
    const Config c = parse_config({"-i", "e", "-B", "1024"});
    ASSERT_TRUE(c.ring_pages);
    EXPECT_EQ(uint64_t{*c.ring_pages} * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)), 1024u * 1024u);
    EXPECT_EQ(c.ring_option, "-B 1024");
    EXPECT_EQ(parse_config({"-i", "e", "--buffer-size=2048"}).ring_pages, *c.ring_pages * 2);
    EXPECT_EQ(error_of({"-i", "e", "-B", "64", "--ring-pages", "16"}),
              "give the ring size either with -B (KiB) or with --ring-pages, not both");
    EXPECT_NE(error_of({"-i", "e", "-B", "0"}).find("invalid -B '0'"), std::string::npos);
}

// The text view's options, spelled and counted as tcpdump does.
TEST(Cli, TextViewOptions)
{
    const Config plain = parse_config({"-i", "e"});
    EXPECT_FALSE(plain.text.decode.quick);
    EXPECT_FALSE(plain.text.decode.link_header);
    EXPECT_EQ(plain.text.time, text::TimeFormat::Clock);
    EXPECT_FALSE(plain.text.nanoseconds);
    EXPECT_FALSE(plain.text.number);
    EXPECT_FALSE(plain.text.line_buffered);

    const Config c = parse_config({"-i", "e", "-q", "-e", "-xx", "-X", "-A", "-l"});
    EXPECT_TRUE(c.text.decode.quick);
    EXPECT_TRUE(c.quiet);
    EXPECT_TRUE(c.text.decode.link_header);
    EXPECT_EQ(c.text.decode.hex, 2);
    EXPECT_EQ(c.text.decode.hex_ascii, 1);
    EXPECT_EQ(c.text.decode.ascii, 1);
    EXPECT_TRUE(c.text.line_buffered);
    EXPECT_EQ(parse_config({"-i", "e", "-XX"}).text.decode.hex_ascii, 2);
    // tcpdump's -n and -nn: numbers are all xdpcap prints anyway.
    EXPECT_EQ(parse_config({"-i", "e", "-n"}).interfaces, std::vector<std::string>{"e"});
    EXPECT_EQ(parse_config({"-nn", "-i", "e", "-#"}).interfaces, std::vector<std::string>{"e"});
    EXPECT_EQ(parse_config({"-i", "e", "-x"}).text.decode.hex, 1);
    // -v to -vvv, counted wherever the v's are; more are -vvv, as tcpdump
    // has nothing beyond. Any of them also asks for per-CPU statistics.
    EXPECT_EQ(plain.text.decode.verbose, 0);
    EXPECT_FALSE(plain.verbose);
    EXPECT_EQ(parse_config({"-i", "e", "-v"}).text.decode.verbose, 1);
    EXPECT_TRUE(parse_config({"-i", "e", "-v"}).verbose);
    EXPECT_EQ(parse_config({"-i", "e", "-vv"}).text.decode.verbose, 2);
    EXPECT_EQ(parse_config({"-v", "-i", "e", "-v", "-v"}).text.decode.verbose, 3);
    EXPECT_EQ(parse_config({"-i", "e", "-vvvv"}).text.decode.verbose, 3);
    EXPECT_EQ(parse_config({"-i", "e", "-evx"}).text.decode.verbose, 1);

    const text::TimeFormat formats[] = {text::TimeFormat::None, text::TimeFormat::Epoch, text::TimeFormat::Delta,
                                        text::TimeFormat::DateClock, text::TimeFormat::SinceFirst};
    const char* spellings[] = {"-t", "-tt", "-ttt", "-tttt", "-ttttt"};
    for (int i = 0; i < 5; ++i)
        EXPECT_EQ(parse_config({"-i", "e", spellings[i]}).text.time, formats[i]) << spellings[i];
    EXPECT_EQ(parse_config({"-i", "e", "-t", "-t", "-t"}).text.time, text::TimeFormat::Delta);
    // As tcpdump: six or more are refused, not taken as five.
    EXPECT_EQ(error_of({"-i", "e", "-tttttt"}), "only -t, -tt, -ttt, -tttt and -ttttt are supported");
    EXPECT_EQ(error_of({"-i", "e", "-ttt", "-ttt"}), "only -t, -tt, -ttt, -tttt and -ttttt are supported");
    EXPECT_TRUE(parse_config({"-i", "e", "--time-stamp-precision", "nano"}).text.nanoseconds);
    EXPECT_TRUE(parse_config({"-i", "e", "--time-stamp-precision=nano"}).text.nanoseconds);
    EXPECT_FALSE(parse_config({"-i", "e", "--time-stamp-precision=micro"}).text.nanoseconds);
    EXPECT_NE(error_of({"-i", "e", "--time-stamp-precision", "pico"}).find("micro or nano"), std::string::npos);
}

// cxxopts cannot name an option '#': -# is translated before it parses.
TEST(Cli, NumberFlag)
{
    EXPECT_TRUE(parse_config({"-i", "e", "-#"}).text.number);
    EXPECT_TRUE(parse_config({"-#", "-i", "e"}).text.number);
    EXPECT_TRUE(parse_config({"-i", "e", "--number"}).text.number);
    const Config bundled = parse_config({"-i", "e", "-#ex"});
    EXPECT_TRUE(bundled.text.number);
    EXPECT_TRUE(bundled.text.decode.link_header);
    EXPECT_EQ(bundled.text.decode.hex, 1);
    // After "--" the words are the command's, -# included.
    const Config command = parse_config({"-i", "e", "--", "prog", "-#"});
    EXPECT_EQ(command.process.command, (std::vector<std::string>{"prog", "-#"}));
    EXPECT_FALSE(command.text.number);
}

TEST(Cli, PrintWithPcapng)
{
    EXPECT_TRUE(parse_config({"-i", "e", "-w", "f", "--print"}).print);
    const std::string refusal = error_of({"-i", "e", "-w", "-", "--print"});
    EXPECT_NE(refusal.find("--print cannot be used with -w -"), std::string::npos) << refusal;
}

TEST(Cli, ReadAFileInsteadOfCapturing)
{
    const Config c = parse_config({"-r", "in.pcapng", "-w", "out.pcapng", "-c", "5", "udp"});
    EXPECT_EQ(c.read_file, "in.pcapng");
    EXPECT_TRUE(c.interfaces.empty());
    EXPECT_EQ(c.output, "out.pcapng");
    EXPECT_EQ(c.filter, "udp");
    EXPECT_EQ(parse_config({"--read", "-"}).read_file, "-");
    // Reading as another user than root's default one.
    EXPECT_EQ(parse_config({"-r", "in.pcapng", "-Z", "nobody"}).user, "nobody");
    EXPECT_EQ(error_of({"-r", "in.pcapng", "-i", "eth0"}),
              "give either -i (capture on an interface) or -r (read a file), not both");
    EXPECT_EQ(error_of({"-r", ""}), "-r needs a file name (or - for standard input)");
    // What the file records selects its packets: direction, process.
    EXPECT_EQ(parse_config({"-r", "f", "-Q", "in"}).direction, Direction::In);
    EXPECT_EQ(parse_config({"-r", "f", "-Q", "out"}).direction, Direction::Out);
    EXPECT_EQ(error_of({"-r", "f", "--drops"}), "--drops applies to a live capture, not to -r");
    EXPECT_EQ(error_of({"-r", "f", "-s", "96"}), "-s applies to a live capture, not to -r");
    EXPECT_EQ(error_of({"-r", "f", "-G", "5"}), "-G applies to a live capture, not to -r");
    EXPECT_EQ(error_of({}), "no interface given: use -i IFACE, or -r FILE to read a capture file (see xdpcap --help)");
}

// Options tcpdump users type: what has a meaning here is taken, the rest
// refused with the reason.
TEST(Cli, TcpdumpHabits)
{
    const Config plain = parse_config({"-i", "eth0"});
    EXPECT_TRUE(plain.text.decode.verify_checksums);
    EXPECT_FALSE(plain.immediate);
    EXPECT_FALSE(plain.text.cpu_prefix);
    EXPECT_FALSE(plain.list_link_types);

    EXPECT_FALSE(parse_config({"-i", "eth0", "-K"}).text.decode.verify_checksums);
    EXPECT_FALSE(parse_config({"-i", "eth0", "--dont-verify-checksums"}).text.decode.verify_checksums);
    EXPECT_FALSE(parse_config({"-r", "f.pcap", "-K"}).text.decode.verify_checksums);
    EXPECT_TRUE(parse_config({"-i", "eth0", "--immediate-mode"}).immediate);
    EXPECT_TRUE(parse_config({"-i", "eth0", "--print-cpu"}).text.cpu_prefix);
    EXPECT_NO_THROW(parse_config({"-i", "eth0", "-N", "-nn"}));
    EXPECT_NO_THROW(parse_config({"-i", "eth0", "-y", "EN10MB"}));
    EXPECT_NO_THROW(parse_config({"-i", "eth0", "-y", "en10mb"}));
    EXPECT_TRUE(parse_config({"-i", "eth0", "-L"}).list_link_types);
    EXPECT_TRUE(parse_config({"-#KN", "-i", "eth0"}).text.number);

    EXPECT_EQ(error_of({"-i", "eth0", "-y", "LINUX_SLL"}),
              "-y LINUX_SLL: xdpcap captures Ethernet frames only; its one link type is EN10MB (see -L)");
    EXPECT_EQ(error_of({"-i", "eth0", "-y", "NOSUCHTYPE"}),
              "invalid data link type 'NOSUCHTYPE' (-L lists the interface's: EN10MB)");
    EXPECT_EQ(error_of({"-L"}), "-L lists an interface's link types: give it with -i IFACE");
    EXPECT_EQ(error_of({"-r", "f.pcap", "--immediate-mode"}),
              "--immediate-mode applies to a live capture, not to -r");
    EXPECT_EQ(error_of({"-r", "f.pcap", "-y", "EN10MB"}), "-y applies to a live capture, not to -r");
}

TEST(Cli, ProcessSelection)
{
    const Config k = parse_config({"-i", "eth0", "-k"});
    EXPECT_TRUE(k.process.attribute);
    EXPECT_FALSE(k.process.filters());
    const Config pid = parse_config({"-i", "eth0", "--pid", "42", "--follow-forks"});
    EXPECT_TRUE(pid.process.attribute);
    EXPECT_EQ(pid.process.pid, 42u);
    EXPECT_TRUE(pid.process.follow_forks);
    EXPECT_EQ(parse_config({"-i", "eth0", "--pname", "a-fifteen-bytes"}).process.comm, "a-fifteen-bytes");
    EXPECT_FALSE(parse_config({"-i", "eth0"}).process.wanted());
}

TEST(Cli, ProcessSelectionBadInput)
{
    EXPECT_NE(error_of({"-i", "eth0", "--pid", "0"}).find("--pid"), std::string::npos);
    EXPECT_NE(error_of({"-i", "eth0", "--pid", "abc"}).find("--pid"), std::string::npos);
    EXPECT_NE(error_of({"-i", "eth0", "--follow-forks"}).find("give --pid"), std::string::npos);
    EXPECT_NE(error_of({"-i", "eth0", "--pname", ""}).find("--pname needs"), std::string::npos);
    // The kernel keeps 15 bytes of a command name: a longer one matches nothing.
    EXPECT_EQ(error_of({"-i", "eth0", "--pname", "a-very-long-command-name-28c"}),
              "--pname a-very-long-command-name-28c: longer than the 15 bytes the kernel keeps of a command name "
              "(a-very-long-com)");
    EXPECT_EQ(error_of({"-r", "f.pcapng", "--pname", "sixteen-bytes-xx"}),
              "--pname sixteen-bytes-xx: longer than the 15 bytes the kernel keeps of a command name "
              "(sixteen-bytes-x)");
    // A file records pids, command names and container names, not cgroups nor forks.
    const Config read = parse_config({"-r", "f.pcapng", "-k", "--pid", "3", "--pname", "curl", "--container", "web"});
    EXPECT_TRUE(read.process.attribute);
    EXPECT_EQ(read.process.pid, 3u);
    EXPECT_EQ(read.process.comm, "curl");
    EXPECT_EQ(read.process.container, "web");
    EXPECT_EQ(error_of({"-r", "f.pcapng", "--cgroup", "/x"}), "--cgroup applies to a live capture, not to -r");
    EXPECT_EQ(error_of({"-r", "f.pcapng", "--pid", "3", "--follow-forks"}),
              "--follow-forks applies to a live capture, not to -r");
}

// --container without -i takes the container's host-side interfaces and
// selects no process; with -i it stays a process selection.
TEST(Cli, ContainerWithoutInterface)
{
    const Config alone = parse_config({"--container", "web", "-w", "x.pcapng"});
    EXPECT_EQ(alone.container_interfaces, "web");
    EXPECT_TRUE(alone.interfaces.empty());
    EXPECT_FALSE(alone.process.container);
    EXPECT_FALSE(alone.process.wanted());
    EXPECT_TRUE(parse_config({"--container", "web", "-k"}).process.attribute);
    const Config with_i = parse_config({"-i", "eth0", "--container", "web"});
    EXPECT_FALSE(with_i.container_interfaces);
    EXPECT_EQ(with_i.process.container, "web");
    EXPECT_TRUE(with_i.process.attribute);
    EXPECT_EQ(error_of({"--container", "web", "--container-netns"}),
              "--container-netns looks for -i inside the --container's network namespace: give -i");
    EXPECT_FALSE(parse_config({"-r", "f.pcapng", "--container", "web"}).container_interfaces);
}

TEST(Cli, TlsKeylog)
{
    EXPECT_FALSE(parse_config({"-i", "eth0", "-k"}).tls_keylog);
    EXPECT_EQ(parse_config({"-i", "eth0", "--pid", "42", "--tls-keylog", "k.log"}).tls_keylog, "k.log");
    EXPECT_EQ(parse_config({"-i", "eth0", "-k", "--tls-keylog", "k.log"}).tls_keylog, "k.log");
    EXPECT_EQ(parse_config({"-i", "eth0", "--tls-keylog", "k.log", "--", "curl", "x"}).tls_keylog, "k.log");
    // Another program's memory is read only for the processes asked for.
    EXPECT_EQ(error_of({"-i", "eth0", "--tls-keylog", "k.log"}),
              "--tls-keylog reads the keys of the processes the capture selects: give --pid, --pname, --cgroup, "
              "--container, -- COMMAND, or -k for every process");
    EXPECT_EQ(error_of({"-i", "eth0", "-k", "--tls-keylog", ""}), "--tls-keylog needs a file name");
    EXPECT_EQ(error_of({"-r", "f.pcapng", "-k", "--tls-keylog", "k.log"}),
              "--tls-keylog applies to a live capture, not to -r");
}

TEST(Cli, CommandAfterDashes)
{
    const Config c = parse_config({"-i", "eth0", "-w", "f.pcapng", "tcp", "--", "curl", "-s", "--fail", "x"});
    EXPECT_EQ(c.process.command, (std::vector<std::string>{"curl", "-s", "--fail", "x"}));
    EXPECT_EQ(c.filter, "tcp");
    EXPECT_TRUE(c.process.attribute);
    EXPECT_TRUE(c.process.filters());
    EXPECT_NE(error_of({"-i", "eth0", "--"}).find("-- must be followed by a command"), std::string::npos);
    EXPECT_NE(error_of({"-i", "eth0", "--pid", "3", "--", "curl"}).find("either --pid or -- COMMAND"),
              std::string::npos);
    EXPECT_NE(error_of({"-r", "f", "--", "curl"}).find("live capture"), std::string::npos);
}

// tcpdump's --nano is --time-stamp-precision nano.
TEST(Cli, NanoAsTcpdump)
{
    EXPECT_FALSE(parse_config({"-i", "e"}).text.nanoseconds);
    EXPECT_TRUE(parse_config({"-i", "e", "--nano"}).text.nanoseconds);
    EXPECT_TRUE(parse_config({"-r", "f", "--nano"}).text.nanoseconds);
    EXPECT_TRUE(parse_config({"-i", "e", "--nano", "--time-stamp-precision", "nano"}).text.nanoseconds);
    EXPECT_NE(error_of({"-i", "e", "--nano", "--time-stamp-precision=micro"}).find("give one"), std::string::npos);
}

// -v is about what is printed; the RSS type comment in the file has its own option.
TEST(Cli, VerboseLeavesTheFileAlone)
{
    EXPECT_FALSE(parse_config({"-i", "e", "-v", "-w", "f"}).rss_type_comments);
    EXPECT_TRUE(parse_config({"-i", "e", "--rss-type-comments", "-w", "f"}).rss_type_comments);
    EXPECT_NE(error_of({"-r", "f", "--rss-type-comments"}).find("live capture"), std::string::npos);
    // -q quiets warnings; the start lines stay.
    EXPECT_TRUE(parse_config({"-i", "e", "-q"}).start_lines);
}

TEST(Cli, TlsKeys)
{
    EXPECT_FALSE(parse_config({"-i", "eth0", "-w", "f.pcapng", "--", "curl", "x"}).tls_keys.wanted());
    const Config command = parse_config({"-i", "eth0", "-w", "f.pcapng", "--tls-keys", "--", "curl", "x"});
    EXPECT_TRUE(command.tls_keys.command);
    EXPECT_TRUE(command.tls_keys.wanted());
    const Config file =
        parse_config({"-i", "eth0", "-w", "-", "--tls-keys-file", "/tmp/keys.log", "--tls-keys-from-start"});
    EXPECT_EQ(file.tls_keys.file, "/tmp/keys.log");
    EXPECT_TRUE(file.tls_keys.from_start);
    EXPECT_FALSE(file.tls_keys.command);
    EXPECT_TRUE(parse_config({"-r", "in.pcapng", "-w", "out.pcapng", "--discard-secrets"}).discard_secrets);
    // With another process selection: the keys the uprobes read.
    EXPECT_TRUE(parse_config({"-i", "eth0", "-w", "f.pcapng", "--tls-keys", "--pid", "42"}).tls_keys.command);
    EXPECT_TRUE(parse_config({"-i", "eth0", "-w", "f.pcapng", "--tls-keys", "-k"}).tls_keys.command);
}

TEST(Cli, TlsKeysBadInput)
{
    EXPECT_EQ(error_of({"-i", "eth0", "-w", "f.pcapng", "--tls-keys"}),
              "--tls-keys reads the TLS keys of the processes the capture selects: give -- COMMAND, --pid, --pname, "
              "--cgroup, --container or -k, or --tls-keys-file for a key log another program writes");
    EXPECT_EQ(error_of({"-i", "eth0", "--tls-keys-file", "k.log"}),
              "--tls-keys and --tls-keys-file write TLS secrets into a pcapng file: give -w FILE or -w -");
    EXPECT_NE(error_of({"-i", "eth0", "-w", "f", "--tls-keys-from-start"}).find("give --tls-keys-file"),
              std::string::npos);
    EXPECT_EQ(error_of({"-r", "f.pcapng", "-w", "g", "--tls-keys-file", "k.log"}),
              "--tls-keys-file applies to a live capture, not to -r");
    EXPECT_EQ(error_of({"-r", "f.pcapng", "--discard-secrets"}),
              "--discard-secrets copies a file without its secrets: give -r FILE and -w FILE");
    EXPECT_EQ(error_of({"-i", "eth0", "-w", "f", "--discard-secrets"}),
              "--discard-secrets copies a file without its secrets: give -r FILE and -w FILE");
}
