#include "programs/owners.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <ifaddrs.h>
#include <mntent.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <utility>

#include "base/unique_fd.hpp"
#include "host/cgroups.hpp"
#include "host/existing_sockets.hpp"
#include "host/peer_namespaces.hpp"

#include "owners.skel.h"
#include "xdpcap_abi.h"
#include "base/error.hpp"

namespace xdpcap {

void SocketOwners::Deleter::operator()(xdpcap_owners* skel) const noexcept
{
    xdpcap_owners__destroy(skel);
}

namespace {

// Kprobes attach through the kprobe PMU or tracefs's kprobe_events.
bool kernel_has_kprobe_events()
{
    for (const char* path : {"/sys/bus/event_source/devices/kprobe/type", "/sys/kernel/tracing/kprobe_events",
                             "/sys/kernel/debug/tracing/kprobe_events"}) {
        if (::access(path, F_OK) == 0)
            return true;
    }
    return false;
}

} // namespace

SocketOwners SocketOwners::load(const OwnerSelection& selection)
{
    std::unique_ptr<xdpcap_owners, Deleter> skel(xdpcap_owners__open());
    if (!skel)
        throw Error("cannot open the process attribution programs: " + errno_text(errno));
    const bool kprobes = kernel_has_kprobe_events();
    for (bpf_program* kprobe : {skel->progs.xdpcap_socket_created, skel->progs.xdpcap_socket_connect,
                                skel->progs.xdpcap_socket_sendmsg, skel->progs.xdpcap_socket_recvmsg,
                                skel->progs.xdpcap_socket_accepted, skel->progs.xdpcap_socket_cloned,
                                skel->progs.xdpcap_socket_freed})
        bpf_program__set_autoload(kprobe, kprobes);
    for (bpf_program* other : {skel->progs.xdpcap_cgroup_sock_create, skel->progs.xdpcap_cgroup_connect4,
                               skel->progs.xdpcap_cgroup_connect6, skel->progs.xdpcap_cgroup_sendmsg4,
                               skel->progs.xdpcap_cgroup_sendmsg6, skel->progs.xdpcap_tcp_sendmsg,
                               skel->progs.xdpcap_sock_sent, skel->progs.xdpcap_sock_received,
                               skel->progs.xdpcap_tcp_state})
        bpf_program__set_autoload(other, !kprobes);
    bpf_program__set_autoload(skel->progs.xdpcap_neighbour_wait, selection.neighbours);
    skel->rodata->note_neighbours = selection.neighbours;
    if (selection.pid) {
        skel->rodata->want_pid = *selection.pid;
        skel->rodata->want_descendants = selection.follow_forks;
    }
    if (selection.comm) {
        skel->rodata->match_comm = 1;
        std::memcpy(const_cast<char*>(skel->rodata->want_comm), selection.comm->data(),
                    std::min(selection.comm->size(), sizeof(skel->rodata->want_comm) - 1));
    }
    if (selection.cgroup) {
        const CgroupId cgroup = resolve_cgroup(*selection.cgroup);
        skel->rodata->want_cgroup = cgroup.id;
        skel->rodata->want_cgroup_level = cgroup.level;
    }
    if (const int err = -xdpcap_owners__load(skel.get())) {
        if (err == EPERM)
            throw Error("cannot load the process attribution programs: " + errno_text(err) +
                        " (needs root or CAP_BPF and CAP_PERFMON)");
        throw Error(std::string("process attribution cannot load its ") +
                    (kprobes ? "kprobes on the kernel's socket security hooks (CONFIG_SECURITY_NETWORK)"
                             : "cgroup socket hooks and tracepoints") +
                    ": " + errno_text(err));
    }
    return SocketOwners(std::move(skel), kprobes, selection);
}

namespace {

// What a program hooks, for messages: the function or tracepoint.
std::string hook_name(const bpf_program* program)
{
    const char* section = bpf_program__section_name(program);
    const char* name = std::strchr(section, '/');
    return name ? name + 1 : section;
}

} // namespace

void SocketOwners::attach()
{
    // Each kept in the skeleton, which detaches it when destroyed.
    using Probe = std::pair<bpf_program*, bpf_link**>;
    // Without it -- COMMAND just keeps no ARP or NDP.
    if (selection_.neighbours)
        skel_->links.xdpcap_neighbour_wait =
            bpf_program__attach_raw_tracepoint(skel_->progs.xdpcap_neighbour_wait, "neigh_event_send_done");
    if (kprobes_) {
        const Probe probes[] = {
            {skel_->progs.xdpcap_socket_created, &skel_->links.xdpcap_socket_created},
            {skel_->progs.xdpcap_socket_connect, &skel_->links.xdpcap_socket_connect},
            {skel_->progs.xdpcap_socket_sendmsg, &skel_->links.xdpcap_socket_sendmsg},
            {skel_->progs.xdpcap_socket_recvmsg, &skel_->links.xdpcap_socket_recvmsg},
            {skel_->progs.xdpcap_socket_accepted, &skel_->links.xdpcap_socket_accepted},
            {skel_->progs.xdpcap_socket_cloned, &skel_->links.xdpcap_socket_cloned},
            {skel_->progs.xdpcap_socket_freed, &skel_->links.xdpcap_socket_freed},
        };
        for (const auto& [program, link] : probes) {
            *link = bpf_program__attach(program);
            if (!*link)
                throw Error("process attribution needs a kprobe on " + hook_name(program) + ": " +
                            errno_text(errno));
        }
        return;
    }
    // On the root of the cgroup v2 hierarchy: every process's sockets.
    const UniqueFd cgroup = open_cgroup2_root("process attribution without kprobe events");
    const Probe cgroup_hooks[] = {
        {skel_->progs.xdpcap_cgroup_sock_create, &skel_->links.xdpcap_cgroup_sock_create},
        {skel_->progs.xdpcap_cgroup_connect4, &skel_->links.xdpcap_cgroup_connect4},
        {skel_->progs.xdpcap_cgroup_connect6, &skel_->links.xdpcap_cgroup_connect6},
        {skel_->progs.xdpcap_cgroup_sendmsg4, &skel_->links.xdpcap_cgroup_sendmsg4},
        {skel_->progs.xdpcap_cgroup_sendmsg6, &skel_->links.xdpcap_cgroup_sendmsg6},
    };
    for (const auto& [program, link] : cgroup_hooks) {
        *link = bpf_program__attach_cgroup(program, cgroup.get());
        if (!*link)
            throw Error("process attribution needs the cgroup hook " + hook_name(program) +
                        " on the cgroup v2 root: " + errno_text(errno));
    }
    skel_->links.xdpcap_tcp_state = bpf_program__attach_raw_tracepoint(skel_->progs.xdpcap_tcp_state,
                                                                         "inet_sock_set_state");
    if (!skel_->links.xdpcap_tcp_state)
        throw Error("process attribution needs the inet_sock_set_state tracepoint: " + errno_text(errno));
    // Newer kernels name the thread that sends or receives; without them a
    // socket keeps the process that made or connected it.
    const std::pair<Probe, const char*> later[] = {
        {{skel_->progs.xdpcap_tcp_sendmsg, &skel_->links.xdpcap_tcp_sendmsg}, "tcp_sendmsg_locked"},
        {{skel_->progs.xdpcap_sock_sent, &skel_->links.xdpcap_sock_sent}, "sock_send_length"},
        {{skel_->progs.xdpcap_sock_received, &skel_->links.xdpcap_sock_received}, "sock_recv_length"},
    };
    for (const auto& [hook, tracepoint] : later) {
        *hook.second = bpf_program__attach_raw_tracepoint(hook.first, tracepoint);
        if (!*hook.second)
            missing_.push_back(tracepoint);
    }
}

std::optional<std::string> SocketOwners::limitation() const
{
    if (missing_.empty())
        return std::nullopt;
    std::string names;
    for (const char* name : missing_)
        names += (names.empty() ? "" : ", ") + std::string(name);
    return "-k: this kernel has no kprobe events and no " + names +
        " tracepoint: a socket used by another process than the one that made or connected it may name that one";
}

void SocketOwners::learn_local_addresses()
{
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0)
        throw Error("process attribution: cannot list this namespace's addresses: " + errno_text(errno));
    const std::unique_ptr<ifaddrs, void (*)(ifaddrs*)> owned(list, ::freeifaddrs);
    const int map = bpf_map__fd(skel_->maps.local_addresses);
    // bpf/process.h's local_address: `netns` 0 for this namespace, a
    // peer_netns entry's index plus one for another.
    struct Key {
        uint8_t family;
        uint8_t netns;
        uint8_t reserved[2];
        uint8_t addr[16];
    };
    const auto note = [map](const Key& key) {
        const uint8_t present = 1;
        if (bpf_map_update_elem(map, &key, &present, BPF_ANY) != 0)
            throw Error("process attribution: cannot note a local address: " + errno_text(errno));
    };
    const auto add = [&note](const sockaddr* address) {
        Key key{};
        if (!address)
            return;
        if (address->sa_family == AF_INET) {
            key.family = 4;
            std::memcpy(key.addr, &reinterpret_cast<const sockaddr_in*>(address)->sin_addr, 4);
        } else if (address->sa_family == AF_INET6) {
            key.family = 6;
            std::memcpy(key.addr, &reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr, 16);
        } else {
            return;
        }
        note(key);
    };
    for (const ifaddrs* a = list; a; a = a->ifa_next) {
        add(a->ifa_addr);
        if (a->ifa_flags & IFF_BROADCAST)
            add(a->ifa_broadaddr);
    }
    // The first XDPCAP_PEER_NETNS other namespaces: each is one more socket
    // lookup per packet end that is in none before it.
    const int peers_map = bpf_map__fd(skel_->maps.peer_netns);
    const uint32_t slots = bpf_map__max_entries(skel_->maps.peer_netns);
    uint32_t slot = 0;
    for (const PeerNamespace& peer : peer_namespaces()) {
        if (slot == slots)
            break;
        const uint32_t id = static_cast<uint32_t>(peer.nsid) + 1;
        if (bpf_map_update_elem(peers_map, &slot, &id, BPF_ANY) != 0)
            throw Error("process attribution: cannot note another network namespace: " + errno_text(errno));
        ++slot;
        for (const NamespaceAddress& address : peer.addresses) {
            Key key{};
            key.family = address.family;
            key.netns = static_cast<uint8_t>(slot);
            std::memcpy(key.addr, address.bytes.data(), address.family == 4 ? 4 : 16);
            note(key);
        }
    }
}

namespace {

// bpf/process.h's existing_key and socket_owner.
struct ExistingKey {
    uint8_t family;
    uint8_t protocol;
    uint16_t local_port; // network order
    uint16_t remote_port;
    uint16_t reserved;
    uint8_t local[16];
    uint8_t remote[16];
};
static_assert(sizeof(ExistingKey) == 40);

struct OwnerValue {
    xdpcap_process process;
    uint32_t wanted;
    uint32_t reserved;
};
static_assert(sizeof(OwnerValue) == 40);

// The processes of the sockets found, each read once: what the hooks would
// have recorded had it used its socket since the start, and whether the
// selection wants it.
class ProcessBook {
public:
    explicit ProcessBook(const OwnerSelection& selection) : selection_(selection)
    {
        if (selection.cgroup)
            want_cgroup_ = resolve_cgroup(*selection.cgroup);
        try {
            cgroup_root_ = open_cgroup2_root("process attribution");
        } catch (const Error&) {
            // Without cgroup v2 the owners just name no cgroup.
            if (selection.cgroup)
                throw;
        }
    }

    struct Entry {
        bool known = false;
        OwnerValue owner{};
    };

    const Entry& of(pid_t pid)
    {
        auto [it, added] = entries_.try_emplace(pid);
        if (!added)
            return it->second;
        ProcessFacts facts;
        if (!read_process_facts(pid, facts))
            return it->second;
        Entry entry;
        entry.known = true;
        entry.owner.process.pid = static_cast<uint32_t>(pid);
        entry.owner.process.tid = static_cast<uint32_t>(pid);
        std::memcpy(entry.owner.process.comm, facts.comm.data(),
                    std::min(facts.comm.size(), sizeof(entry.owner.process.comm) - 1));
        entry.owner.process.cgroup_id = cgroup_id(facts.cgroup, UINT32_MAX);
        entry.owner.wanted = wanted(facts);
        it->second = entry;
        return it->second;
    }

private:
    // The cgroup's id, or that of its ancestor `level` directories below the
    // root; 0 when it cannot be read.
    uint64_t cgroup_id(const std::string& path, uint32_t level) const
    {
        if (!cgroup_root_)
            return 0;
        std::string prefix;
        uint32_t depth = 0;
        for (size_t start = 0; start < path.size() && depth < level;) {
            size_t end = path.find('/', start);
            if (end == std::string::npos)
                end = path.size();
            if (end > start) {
                prefix.append(prefix.empty() ? "" : "/").append(path, start, end - start);
                ++depth;
            }
            start = end + 1;
        }
        if (level != UINT32_MAX && depth < level)
            return 0; // above the wanted cgroup's depth
        struct stat st {};
        if (::fstatat(cgroup_root_.get(), prefix.empty() ? "." : prefix.c_str(), &st, 0) != 0)
            return 0;
        return st.st_ino;
    }

    bool descends_from(pid_t pid, uint32_t ancestor)
    {
        // Bounded as the hooks' walk is.
        for (int i = 0; i < 32 && pid > 1; ++i) {
            if (static_cast<uint32_t>(pid) == ancestor)
                return true;
            ProcessFacts facts;
            if (!read_process_facts(pid, facts))
                return false;
            pid = facts.parent;
        }
        return false;
    }

    bool wanted(const ProcessFacts& facts)
    {
        if (selection_.pid && static_cast<uint32_t>(facts.pid) != *selection_.pid &&
            !(selection_.follow_forks && descends_from(facts.parent, *selection_.pid)))
            return false;
        if (selection_.comm && facts.comm != selection_.comm->substr(0, 15))
            return false;
        if (selection_.cgroup && cgroup_id(facts.cgroup, want_cgroup_.level) != want_cgroup_.id)
            return false;
        return true;
    }

    const OwnerSelection& selection_;
    CgroupId want_cgroup_;
    UniqueFd cgroup_root_;
    std::unordered_map<pid_t, Entry> entries_;
};

} // namespace

size_t SocketOwners::learn_existing_sockets()
{
    const std::vector<DiagSocket> sockets = list_namespace_sockets();
    std::unordered_map<uint64_t, size_t> by_inode;
    by_inode.reserve(sockets.size());
    for (size_t i = 0; i < sockets.size(); ++i)
        by_inode.emplace(sockets[i].inode, i);
    const auto holders = socket_holders(by_inode);
    ProcessBook book(selection_);
    std::vector<ExistingKey> keys;
    std::vector<OwnerValue> values;
    keys.reserve(holders.size());
    values.reserve(holders.size());
    for (const auto& [inode, pids] : holders) {
        // Shared (a pre-fork server's listener): one of them.
        const pid_t chosen = choose_holder(
            pids, [&](pid_t pid) { return book.of(pid).known; },
            [&](pid_t pid) { return book.of(pid).owner.wanted != 0; });
        if (chosen == 0)
            continue;
        const DiagSocket& s = sockets[by_inode.at(inode)];
        ExistingKey key{};
        key.family = s.family;
        key.protocol = s.protocol;
        key.local_port = htons(s.local_port);
        key.remote_port = htons(s.remote_port);
        std::memcpy(key.local, s.local.data(), sizeof key.local);
        std::memcpy(key.remote, s.remote.data(), sizeof key.remote);
        keys.push_back(key);
        values.push_back(book.of(chosen).owner);
    }
    const size_t room = bpf_map__max_entries(skel_->maps.existing_owners);
    if (keys.size() > room) {
        keys.resize(room); // the rest stay unnamed until used
        values.resize(room);
    }
    const int map = bpf_map__fd(skel_->maps.existing_owners);
    // One system call for them all (Linux 5.6); else one each.
    uint32_t count = static_cast<uint32_t>(keys.size());
    if (count == 0 || bpf_map_update_batch(map, keys.data(), values.data(), &count, nullptr) == 0)
        return keys.size();
    for (size_t i = 0; i < keys.size(); ++i) {
        if (bpf_map_update_elem(map, &keys[i], &values[i], BPF_ANY) != 0)
            throw Error("process attribution: cannot note an existing socket's owner: " + errno_text(errno));
    }
    return keys.size();
}

Attribution SocketOwners::attribution(bool filter) const
{
    return Attribution{bpf_map__fd(skel_->maps.socket_owners), bpf_map__fd(skel_->maps.echo_owners),
                       bpf_map__fd(skel_->maps.closing_owners), bpf_map__fd(skel_->maps.local_addresses),
                       bpf_map__fd(skel_->maps.existing_owners), bpf_map__fd(skel_->maps.neigh_owners),
                       bpf_map__fd(skel_->maps.peer_netns), filter};
}

} // namespace xdpcap
