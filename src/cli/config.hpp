// What the user asked for, validated. Produced by the CLI, read by the rest.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/hooks.hpp"
#include "text/options.hpp"
#include "xdpcap_abi.h"

namespace xdpcap {

inline constexpr uint32_t kMaxSnaplen = XDPCAP_MAX_SNAPLEN;
inline constexpr uint32_t kMaxRingPages = 65536;
inline constexpr uint32_t kMaxSampleEvery = 0xffffffffu;

// Process attribution and the process filters (-k, --pid, --pname,
// --follow-forks, --cgroup). The filters run in the kernel and imply -k.
struct ProcessSelection {
    bool attribute = false;           // -k: name each packet's process
    std::optional<uint32_t> pid;      // --pid
    bool follow_forks = false;        // --follow-forks: and the processes it starts
    std::optional<std::string> comm;  // --pname: a command name, as the kernel keeps it (15 bytes)
    std::optional<std::string> cgroup; // --cgroup: a cgroup v2 directory, and those below it
    std::vector<std::string> command;  // -- COMMAND [ARGS]: run it; only its packets (and its children's)
    std::optional<std::string> container; // --container: a podman or docker container's cgroup
    bool container_netns = false;         // --container-netns: -i names interfaces inside it

    bool filters() const { return pid || comm || cgroup || !command.empty() || container; }
    bool wanted() const { return attribute || filters(); }
};

// TLS session secrets written into the file as Decryption Secrets Blocks.
// Without any of these nothing about keys is collected or written.
struct TlsKeys {
    // --tls-keys: -- COMMAND's SSLKEYLOGFILE, and the selected processes'
    // keys read from OpenSSL 3 by uprobes (with any process selection)
    bool command = false;
    std::optional<std::string> file;  // --tls-keys-file: a key log another program writes
    bool from_start = false;          // --tls-keys-from-start: the lines already in it too

    bool wanted() const { return command || file.has_value(); }
};

struct Config {
    // -i, in the order given: names, or ifindexes (a number that is no
    // interface's name), resolved when the capture starts. Never empty for
    // a capture but --container's without -i; extcap gives exactly one.
    std::vector<std::string> interfaces;
    // --container NAME without -i: every packet on the host-side interfaces
    // whose other end is in that container's network namespace (-i any's
    // hooks), not a process selection; `interfaces` is then empty.
    std::optional<std::string> container_interfaces;
    std::optional<std::string> output; // "-" is stdout; unset means text lines on stdout
    std::optional<std::string> read_file; // -r: read this capture file ("-": stdin) instead of capturing
    uint32_t snaplen = kMaxSnaplen;
    std::optional<uint64_t> count;
    bool packet_buffered = false;
    bool immediate = false; // --immediate-mode: woken for every packet, not for a quarter ring
    bool verbose = false;
    bool rss_type_comments = false; // --rss-type-comments: received packets' RSS hash type in their comments
    bool quiet = false; // -q: tcpdump's quick (shorter) decode, and no start-up warnings
    bool print = false; // --print: text lines on stdout while -w writes a file
    bool drops = false; // --drops: also the kernel's drops on the interface (skb:kfree_skb)
    ProcessSelection process;
    // --tls-keylog: the selected processes' TLS keys, read from OpenSSL 3 by
    // uprobes, written to this file as NSS key log lines.
    std::optional<std::string> tls_keylog;
    TlsKeys tls_keys;
    bool discard_secrets = false; // --discard-secrets: -r -w copies no Decryption Secrets Block
    text::TextOptions text; // -e, -x, -X, -A, -t..., -#, --time-stamp-precision
    bool statistics = true; // at the end, on stderr (not for Wireshark: it reads stderr as errors)
    bool warnings = true; // start-up warnings on stderr (for Wireshark the interface descriptions carry them)
    bool start_lines = true; // "listening on ..." and "tracing ..." on stderr (not for Wireshark)
    XdpMode xdp_mode = XdpMode::Auto;
    Direction direction = Direction::InOut;
    bool promiscuous = true; // -p turns it off
    std::optional<uint32_t> ring_pages; // unset: sized from the CPU count (default_ring_pages)
    std::string ring_option;            // how the size was given ("--ring-pages 8", "-B 32"), for messages
    uint32_t sample_every = 1;          // --sample N: one packet in N of those the filter keeps
    std::optional<std::string> user;    // -Z: run as this user once attached
    std::string filter;         // libpcap expression; empty: capture everything
    std::optional<std::string> filter_file; // -F: read the expression from this file
    bool dump_filter = false;   // -d: print the compiled filter and exit
    bool list_interfaces = false; // -D: list interfaces and their XDP programs, and exit
    bool list_link_types = false; // -L: list each -i interface's link types (EN10MB), and exit
    // Trace mode (the interface already runs XDP): --at's hook points and
    // --program's choice among a dispatcher's components.
    bool trace_entry = true;
    bool trace_exit = true;
    bool at_given = false;
    std::optional<std::string> trace_program;
    // tcpdump's file rotation: -C (bytes), -G (seconds), -W (files), -z (command).
    std::optional<uint64_t> file_size;
    std::optional<uint32_t> rotate_seconds;
    std::optional<uint32_t> file_count;
    std::optional<std::string> postrotate_command;

    bool writes_pcapng() const { return output.has_value(); }
    bool writes_to_stdout() const { return output && *output == "-"; }
    bool rotates() const { return file_size || rotate_seconds; }
};

} // namespace xdpcap
