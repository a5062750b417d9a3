// TLS keys of processes already running, without their cooperation: uprobes
// on OpenSSL 3's libssl.so.3 read each connection's client random and
// secrets once its handshake is done (bpf/uprobes.bpf.c), and these become
// NSS key log lines. Only library builds whose layout xdpcap knows are
// probed, and TLS 1.3's secrets are checked against each other before a line
// is made: a wrong key is never written.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "programs/owners.hpp"
#include "uprobes.h"

struct xdpcap_uprobes;
struct ring_buffer;
struct bpf_link;

namespace xdpcap {

// Where one libssl build keeps what the probes read (bytes from the start of
// struct ssl_st, and of SSL_SESSION for the master key).
struct OpensslLayout {
    uint32_t version;
    uint32_t hand_state;
    uint32_t client_random;
    uint32_t session;
    uint32_t tls13_secrets; // handshake_secret, the first of XDPCAP_TLS13_SECRETS
    uint32_t master_key_length;
    uint32_t master_key;
};

// The layout of the libssl build with this GNU build ID (lower-case hex);
// nothing for a build xdpcap does not know.
std::optional<OpensslLayout> known_openssl_layout(std::string_view build_id);

// The GNU build ID of an ELF file, in lower-case hex; nothing when it has
// none or is no ELF file xdpcap reads (64-bit, this machine's byte order).
std::optional<std::string> elf_build_id(int fd);

// The files named libssl.so.3 among a /proc/PID/maps text, once each.
std::vector<std::string> libssl_in_maps(std::string_view maps);

// The NSS key log lines of one handshake the probes read, without line ends:
// CLIENT_RANDOM for TLS 1.2 and earlier; for TLS 1.3 the handshake and first
// traffic secrets of both sides and the exporter secret, only when each
// derives from the ones before it as RFC 8446 says (which also tells SHA-256
// from SHA-384). Nothing for anything else.
std::vector<std::string> key_log_lines(const xdpcap_tls_handshake& handshake);

// The probes of every libssl.so.3 of a known build that the processes use.
class TlsKeyProbes {
public:
    using LineSink = std::function<void(const std::string& line)>;

    // Finds the libssl.so.3 files the running processes map, and the host's
    // own, loads the probes with `selection` and attaches them to each of a
    // known build. `notes` gets one line for each library of a build it
    // cannot read and each selected process (--pid, --pname) that maps no
    // libssl.so.3: their keys are not captured. Raises Error in one line when
    // the kernel refuses the probes.
    static TlsKeyProbes attach(const OwnerSelection& selection, std::vector<std::string>& notes);
    // Each new line goes to every sink, in the order added.
    void add_sink(LineSink sink);

    TlsKeyProbes(TlsKeyProbes&&) noexcept;
    TlsKeyProbes& operator=(TlsKeyProbes&&) noexcept;
    ~TlsKeyProbes();

    // Readable when records wait; -1 when nothing is probed.
    int fd() const;
    // Hands every waiting handshake's lines to the sink.
    void poll();
    // Probed libraries.
    size_t libraries() const noexcept { return libraries_; }
    // Handshakes read whose secrets did not check: no line was made.
    uint64_t unchecked() const noexcept;

    struct Deleter {
        void operator()(xdpcap_uprobes* skel) const noexcept;
        void operator()(bpf_link* link) const noexcept;
        void operator()(ring_buffer* ring) const noexcept;
    };
    struct Reader; // what the ring's callback writes to

private:
    TlsKeyProbes();

    // Destroyed in reverse: the ring and the links before the programs.
    std::unique_ptr<xdpcap_uprobes, Deleter> skel_;
    std::vector<std::unique_ptr<bpf_link, Deleter>> links_;
    std::unique_ptr<ring_buffer, Deleter> ring_;
    std::unique_ptr<Reader> reader_;
    size_t libraries_ = 0;
};

} // namespace xdpcap
