#include "programs/uprobes.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <elf.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_set>
#include <utility>

#include "base/error.hpp"
#include "base/unique_fd.hpp"
#include "host/cgroups.hpp"

#include "uprobes.skel.h"

namespace xdpcap {

struct TlsKeyProbes::Reader {
    std::vector<LineSink> sinks;
    uint64_t unchecked = 0;
    // Both ends of a connection may be probed, and a handshake read again
    // through another SSL object: each line once.
    std::unordered_set<std::string> written;
    std::exception_ptr failure; // the sink's, kept past libbpf's C frames
};

void TlsKeyProbes::Deleter::operator()(xdpcap_uprobes* skel) const noexcept
{
    xdpcap_uprobes__destroy(skel);
}

void TlsKeyProbes::Deleter::operator()(bpf_link* link) const noexcept
{
    bpf_link__destroy(link);
}

void TlsKeyProbes::Deleter::operator()(ring_buffer* ring) const noexcept
{
    ring_buffer__free(ring);
}

namespace {

struct KnownBuild {
    const char* build_id;
    OpensslLayout layout;
};

// Measured on each build with a handshake whose keys OpenSSL itself logged
// (SSL_CTX_set_keylog_callback): where the client random, the secrets and
// the session's master key lie in the SSL object. TLS 1.3's secrets are
// checked again on every handshake (key_log_lines); TLS 1.2's master key
// cannot be, so only these builds are read at all.
constexpr KnownBuild kKnownBuilds[] = {
    // Debian 12, libssl3 3.0.19-1~deb12u2, amd64.
    {"c0b9959017cf64b03131964573944fc72958bb2b",
     {.version = 0, .hand_state = 92, .client_random = 352, .session = 2328, .tls13_secrets = 1412,
      .master_key_length = 8, .master_key = 80}},
};

std::string hex(const uint8_t* bytes, size_t size)
{
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string text;
    text.reserve(2 * size);
    for (size_t i = 0; i < size; ++i) {
        text.push_back(kDigits[bytes[i] >> 4]);
        text.push_back(kDigits[bytes[i] & 0xf]);
    }
    return text;
}

using Secret = std::vector<uint8_t>;

// RFC 8446 7.1 HKDF-Expand-Label, for an output no longer than the hash:
// a single HMAC block.
Secret expand_label(const EVP_MD* md, const uint8_t* secret, size_t length, std::string_view label,
                    const uint8_t* context, size_t context_length)
{
    std::vector<uint8_t> info;
    info.push_back(static_cast<uint8_t>(length >> 8));
    info.push_back(static_cast<uint8_t>(length));
    constexpr std::string_view kPrefix = "tls13 ";
    info.push_back(static_cast<uint8_t>(kPrefix.size() + label.size()));
    info.insert(info.end(), kPrefix.begin(), kPrefix.end());
    info.insert(info.end(), label.begin(), label.end());
    info.push_back(static_cast<uint8_t>(context_length));
    info.insert(info.end(), context, context + context_length);
    info.push_back(1);
    std::array<uint8_t, EVP_MAX_MD_SIZE> out{};
    unsigned int out_length = 0;
    if (!HMAC(md, secret, static_cast<int>(length), info.data(), info.size(), out.data(), &out_length) ||
        out_length < length)
        return {};
    return Secret(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(length));
}

bool equal(const Secret& derived, const uint8_t* stored)
{
    return !derived.empty() && std::memcmp(derived.data(), stored, derived.size()) == 0;
}

// TLS 1.3's lines when the record's secrets hold together for hash `md`.
std::vector<std::string> tls13_lines(const xdpcap_tls_handshake& h, const EVP_MD* md, const std::string& random)
{
    const size_t length = static_cast<size_t>(EVP_MD_get_size(md));
    const auto at = [&h](xdpcap_tls13_secret which) { return h.tls13[which]; };
    const Secret client_handshake =
        expand_label(md, at(XDPCAP_TLS13_HANDSHAKE_SECRET), length, "c hs traffic",
                     at(XDPCAP_TLS13_HANDSHAKE_TRAFFIC_HASH), length);
    const Secret server_handshake =
        expand_label(md, at(XDPCAP_TLS13_HANDSHAKE_SECRET), length, "s hs traffic",
                     at(XDPCAP_TLS13_HANDSHAKE_TRAFFIC_HASH), length);
    if (client_handshake.empty() || server_handshake.empty())
        return {};
    // Each Finished key comes from its side's handshake traffic secret, each
    // application secret from the master secret: all five must agree.
    const bool holds =
        equal(expand_label(md, client_handshake.data(), length, "finished", nullptr, 0),
              at(XDPCAP_TLS13_CLIENT_FINISHED_SECRET)) &&
        equal(expand_label(md, server_handshake.data(), length, "finished", nullptr, 0),
              at(XDPCAP_TLS13_SERVER_FINISHED_SECRET)) &&
        equal(expand_label(md, at(XDPCAP_TLS13_MASTER_SECRET), length, "c ap traffic",
                           at(XDPCAP_TLS13_SERVER_FINISHED_HASH), length),
              at(XDPCAP_TLS13_CLIENT_APP_TRAFFIC_SECRET)) &&
        equal(expand_label(md, at(XDPCAP_TLS13_MASTER_SECRET), length, "s ap traffic",
                           at(XDPCAP_TLS13_SERVER_FINISHED_HASH), length),
              at(XDPCAP_TLS13_SERVER_APP_TRAFFIC_SECRET)) &&
        equal(expand_label(md, at(XDPCAP_TLS13_MASTER_SECRET), length, "exp master",
                           at(XDPCAP_TLS13_SERVER_FINISHED_HASH), length),
              at(XDPCAP_TLS13_EXPORTER_MASTER_SECRET));
    if (!holds)
        return {};
    const auto line = [&random](const char* label, const uint8_t* secret, size_t size) {
        return std::string(label).append(" ").append(random).append(" ").append(hex(secret, size));
    };
    return {line("CLIENT_HANDSHAKE_TRAFFIC_SECRET", client_handshake.data(), length),
            line("SERVER_HANDSHAKE_TRAFFIC_SECRET", server_handshake.data(), length),
            line("CLIENT_TRAFFIC_SECRET_0", at(XDPCAP_TLS13_CLIENT_APP_TRAFFIC_SECRET), length),
            line("SERVER_TRAFFIC_SECRET_0", at(XDPCAP_TLS13_SERVER_APP_TRAFFIC_SECRET), length),
            line("EXPORTER_SECRET", at(XDPCAP_TLS13_EXPORTER_MASTER_SECRET), length)};
}

constexpr int32_t kTls10 = 0x0301;
constexpr int32_t kTls12 = 0x0303;
constexpr int32_t kTls13 = 0x0304;

std::string read_text(const std::string& path)
{
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// Where a 64-bit little-endian ELF file keeps its notes: its PT_NOTE segments.
std::optional<std::string> build_id_in_notes(const std::vector<uint8_t>& notes)
{
    size_t at = 0;
    const auto aligned = [](size_t n) { return (n + 3) & ~size_t{3}; };
    while (at + sizeof(Elf64_Nhdr) <= notes.size()) {
        Elf64_Nhdr note;
        std::memcpy(&note, notes.data() + at, sizeof(note));
        const size_t name_at = at + sizeof(note);
        const size_t desc_at = name_at + aligned(note.n_namesz);
        if (desc_at < name_at || desc_at + note.n_descsz > notes.size() || note.n_descsz > notes.size())
            return std::nullopt;
        if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && std::memcmp(notes.data() + name_at, "GNU", 4) == 0)
            return note.n_descsz ? std::optional(hex(notes.data() + desc_at, note.n_descsz)) : std::nullopt;
        at = desc_at + aligned(note.n_descsz);
    }
    return std::nullopt;
}

bool read_at(int fd, void* out, size_t size, uint64_t offset)
{
    return ::pread(fd, out, size, static_cast<off_t>(offset)) == static_cast<ssize_t>(size);
}

// The calls that make a handshake: read at their return.
constexpr const char* kHandshakeCalls[] = {"SSL_do_handshake", "SSL_connect", "SSL_accept"};
// The calls every program that speaks TLS through libssl makes afterwards
// (and that may make the handshake implicitly): read at their entry.
constexpr const char* kLaterCalls[] = {"SSL_read", "SSL_read_ex", "SSL_write", "SSL_write_ex", "SSL_shutdown",
                                       "SSL_free"};

// The host's own libssl.so.3, for processes that start during the capture.
constexpr const char* kHostLibraries[] = {"/usr/lib/x86_64-linux-gnu/libssl.so.3", "/lib/x86_64-linux-gnu/libssl.so.3",
                                          "/usr/lib64/libssl.so.3", "/usr/lib/libssl.so.3"};

struct Library {
    std::string path;  // as opened, through /proc/PID/root for another mount namespace
    std::string shown; // as the process names it
};

struct Found {
    std::vector<Library> libraries;
    std::vector<std::string> notes;
};

// Every distinct libssl.so.3 in use or on the host, and the selected
// processes that use none.
Found find_libraries(const OwnerSelection& selection)
{
    Found found;
    std::set<std::pair<dev_t, ino_t>> seen;
    const auto add = [&](const std::string& path, const std::string& shown) {
        struct stat st{};
        if (::stat(path.c_str(), &st) != 0 || !seen.insert({st.st_dev, st.st_ino}).second)
            return;
        found.libraries.push_back(Library{path, shown});
    };
    for (const char* path : kHostLibraries)
        add(path, path);
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
        const std::string name = entry.path().filename().string();
        if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
            continue;
        const std::string dir = std::string("/proc/").append(name);
        const std::vector<std::string> libraries = libssl_in_maps(read_text(std::string(dir).append("/maps")));
        for (const std::string& library : libraries)
            add(std::string(dir).append("/root").append(library), library);
        std::string comm = read_text(std::string(dir).append("/comm"));
        if (!comm.empty() && comm.back() == '\n')
            comm.pop_back();
        // -- COMMAND and --follow-forks may not have started their program yet.
        const bool named = (selection.pid && !selection.follow_forks && name == std::to_string(*selection.pid)) ||
            (selection.comm && comm == *selection.comm);
        if (named && libraries.empty() && !comm.empty())
            found.notes.push_back(std::string(comm).append(" (pid ").append(name).append(
                ") uses no OpenSSL 3 library (libssl.so.3): its TLS keys are not captured"));
    }
    return found;
}

constexpr size_t kRememberedLines = 65536;

// libbpf's ring callback: one handshake's lines to the sink.
int on_handshake(void* context, void* data, size_t size)
{
    auto& reader = *static_cast<TlsKeyProbes::Reader*>(context);
    if (size < sizeof(xdpcap_tls_handshake))
        return 0;
    xdpcap_tls_handshake handshake;
    std::memcpy(&handshake, data, sizeof(handshake));
    const std::vector<std::string> lines = key_log_lines(handshake);
    if (lines.empty())
        ++reader.unchecked;
    try {
        // Repeats come close together (a connection's two ends): a bounded
        // memory of lines does.
        if (reader.written.size() > kRememberedLines)
            reader.written.clear();
        for (const std::string& line : lines) {
            if (!reader.written.insert(line).second)
                continue;
            for (const TlsKeyProbes::LineSink& sink : reader.sinks)
                sink(line);
        }
    } catch (...) {
        reader.failure = std::current_exception();
        return -1; // stops the consume
    }
    return 0;
}

} // namespace

std::optional<OpensslLayout> known_openssl_layout(std::string_view build_id)
{
    for (const KnownBuild& known : kKnownBuilds) {
        if (build_id == known.build_id)
            return known.layout;
    }
    return std::nullopt;
}

std::optional<std::string> elf_build_id(int fd)
{
    Elf64_Ehdr header;
    if (!read_at(fd, &header, sizeof(header), 0) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
        header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB ||
        header.e_phentsize != sizeof(Elf64_Phdr) || header.e_phnum > 256)
        return std::nullopt;
    for (uint16_t i = 0; i < header.e_phnum; ++i) {
        Elf64_Phdr segment;
        if (!read_at(fd, &segment, sizeof(segment), header.e_phoff + uint64_t{i} * sizeof(segment)))
            return std::nullopt;
        if (segment.p_type != PT_NOTE || segment.p_filesz > 65536)
            continue;
        std::vector<uint8_t> notes(segment.p_filesz);
        if (!read_at(fd, notes.data(), notes.size(), segment.p_offset))
            return std::nullopt;
        if (auto id = build_id_in_notes(notes))
            return id;
    }
    return std::nullopt;
}

std::vector<std::string> libssl_in_maps(std::string_view maps)
{
    std::vector<std::string> found;
    while (!maps.empty()) {
        const size_t end = maps.find('\n');
        std::string_view line = maps.substr(0, end);
        maps = end == std::string_view::npos ? std::string_view{} : maps.substr(end + 1);
        const size_t slash = line.find('/');
        if (slash == std::string_view::npos)
            continue;
        const std::string_view path = line.substr(slash);
        constexpr std::string_view kName = "/libssl.so.3";
        if (path.size() < kName.size() || path.substr(path.size() - kName.size()) != kName)
            continue; // another file, or one deleted since it was mapped
        if (std::find(found.begin(), found.end(), path) == found.end())
            found.emplace_back(path);
    }
    return found;
}

std::vector<std::string> key_log_lines(const xdpcap_tls_handshake& h)
{
    if (std::all_of(std::begin(h.client_random), std::end(h.client_random), [](uint8_t b) { return b == 0; }))
        return {};
    const std::string random = hex(h.client_random, sizeof(h.client_random));
    if (h.version >= kTls10 && h.version <= kTls12) {
        if (h.master_key_length != XDPCAP_TLS_MASTER_KEY_SIZE)
            return {};
        return {std::string("CLIENT_RANDOM ").append(random).append(" ").append(hex(h.master_key, sizeof(h.master_key)))};
    }
    if (h.version != kTls13)
        return {};
    // The cipher suite's hash is the one under which the secrets agree.
    for (const EVP_MD* md : {EVP_sha256(), EVP_sha384()}) {
        if (auto lines = tls13_lines(h, md, random); !lines.empty())
            return lines;
    }
    return {};
}

TlsKeyProbes::TlsKeyProbes() : reader_(std::make_unique<Reader>()) {}
TlsKeyProbes::TlsKeyProbes(TlsKeyProbes&&) noexcept = default;
TlsKeyProbes& TlsKeyProbes::operator=(TlsKeyProbes&&) noexcept = default;
TlsKeyProbes::~TlsKeyProbes() = default;

TlsKeyProbes TlsKeyProbes::attach(const OwnerSelection& selection, std::vector<std::string>& notes)
{
    TlsKeyProbes probes;
    Found found = find_libraries(selection);
    notes.insert(notes.end(), found.notes.begin(), found.notes.end());
    std::optional<OpensslLayout> layout;
    std::vector<std::string> probed;
    for (const Library& library : found.libraries) {
        const UniqueFd fd(::open(library.path.c_str(), O_RDONLY | O_CLOEXEC));
        const std::optional<std::string> id = fd ? elf_build_id(fd.get()) : std::nullopt;
        const std::optional<OpensslLayout> known = id ? known_openssl_layout(*id) : std::nullopt;
        // One layout per load: the offsets are the programs' constants.
        if (!known || (layout && std::memcmp(&*layout, &*known, sizeof(*known)) != 0)) {
            notes.push_back(std::string(library.shown)
                                .append(" (build ID ")
                                .append(id.value_or("unknown"))
                                .append(") is an OpenSSL build xdpcap cannot read: TLS keys of the processes "
                                        "using it are not captured"));
            continue;
        }
        layout = known;
        probed.push_back(library.path);
    }
    if (found.libraries.empty())
        notes.emplace_back("no process uses OpenSSL 3 (libssl.so.3) and the host has none: no TLS keys are captured");
    if (!layout)
        return probes;

    probes.skel_.reset(xdpcap_uprobes__open());
    if (!probes.skel_)
        throw Error(std::string("cannot open the TLS key probes: ").append(errno_text(errno)));
    auto& rodata = *probes.skel_->rodata;
    rodata.version_offset = layout->version;
    rodata.hand_state_offset = layout->hand_state;
    rodata.client_random_offset = layout->client_random;
    rodata.session_offset = layout->session;
    rodata.tls13_secrets_offset = layout->tls13_secrets;
    rodata.master_key_length_offset = layout->master_key_length;
    rodata.master_key_offset = layout->master_key;
    if (selection.pid) {
        rodata.want_pid = *selection.pid;
        rodata.want_descendants = selection.follow_forks;
    }
    if (selection.comm) {
        rodata.match_comm = 1;
        std::memcpy(const_cast<char*>(rodata.want_comm), selection.comm->data(),
                    std::min(selection.comm->size(), sizeof(rodata.want_comm) - 1));
    }
    if (selection.cgroup) {
        const CgroupId cgroup = resolve_cgroup(*selection.cgroup);
        rodata.want_cgroup = cgroup.id;
        rodata.want_cgroup_level = cgroup.level;
    }
    if (xdpcap_uprobes__load(probes.skel_.get()) != 0)
        throw Error(std::string("cannot load the TLS key probes: ").append(errno_text(errno)));
    // One process: the library's other users never trap.
    const pid_t only = selection.pid && !selection.follow_forks ? static_cast<pid_t>(*selection.pid) : -1;
    for (const std::string& path : probed) {
        const auto attach_one = [&](bpf_program* program, const char* call, bool at_return) {
            // By hand: libbpf's LIBBPF_OPTS is a C statement expression.
            bpf_uprobe_opts opts{};
            opts.sz = sizeof(opts);
            opts.retprobe = at_return;
            opts.func_name = call;
            bpf_link* link = bpf_program__attach_uprobe_opts(program, only, path.c_str(), 0, &opts);
            if (!link)
                throw Error(std::string("cannot attach a uprobe to ").append(call).append(" in ").append(path).append(
                    ": ").append(errno_text(errno)));
            probes.links_.emplace_back(link);
        };
        for (const char* call : kHandshakeCalls) {
            attach_one(probes.skel_->progs.xdpcap_ssl_handshake, call, false);
            attach_one(probes.skel_->progs.xdpcap_ssl_handshake_done, call, true);
        }
        for (const char* call : kLaterCalls)
            attach_one(probes.skel_->progs.xdpcap_ssl_call, call, false);
    }
    probes.libraries_ = probed.size();
    probes.ring_.reset(ring_buffer__new(bpf_map__fd(probes.skel_->maps.handshakes), &on_handshake,
                                        probes.reader_.get(), nullptr));
    if (!probes.ring_)
        throw Error(std::string("cannot read the TLS key probes' ring: ").append(errno_text(errno)));
    return probes;
}

void TlsKeyProbes::add_sink(LineSink sink)
{
    reader_->sinks.push_back(std::move(sink));
}

int TlsKeyProbes::fd() const
{
    return ring_ ? ring_buffer__epoll_fd(ring_.get()) : -1;
}

void TlsKeyProbes::poll()
{
    if (!ring_)
        return;
    ring_buffer__consume(ring_.get());
    if (reader_->failure)
        std::rethrow_exception(std::exchange(reader_->failure, nullptr));
}

uint64_t TlsKeyProbes::unchecked() const noexcept
{
    return reader_->unchecked;
}

} // namespace xdpcap
