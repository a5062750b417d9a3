// min_sampler [--ring-pages N] IFACE: the floor e2e_bench.py --floor
// measures xdpcap's kernel side against. min_sampler.bpf.o, attached in
// native XDP mode, puts every frame with a 16-byte header into its CPU's
// perf ring; libbpf's perf buffer drains the rings, woken as xdpcap is, and
// only counts.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <linux/perf_event.h>
#include <net/if.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

namespace {

volatile std::sig_atomic_t stop_requested = 0;

struct Counts {
    unsigned long long samples = 0;
    unsigned long long bytes = 0;
    unsigned long long lost = 0;
};

std::string errno_text(int err)
{
    return std::strerror(err < 0 ? -err : err);
}

// Detached however the run ends.
class XdpAttachment {
public:
    XdpAttachment(int ifindex, int prog_fd) : ifindex_(ifindex)
    {
        if (const int err = bpf_xdp_attach(ifindex, prog_fd, XDP_FLAGS_DRV_MODE, nullptr))
            throw std::runtime_error("cannot attach in native XDP mode: " + errno_text(err));
    }
    XdpAttachment(const XdpAttachment&) = delete;
    XdpAttachment& operator=(const XdpAttachment&) = delete;
    ~XdpAttachment() { bpf_xdp_detach(ifindex_, XDP_FLAGS_DRV_MODE, nullptr); }

private:
    int ifindex_;
};

int run(int argc, char** argv)
{
    size_t ring_pages = 4096; // 16 MiB a CPU, xdpcap's default on two CPUs
    int arg = 1;
    if (arg + 1 < argc && std::strcmp(argv[arg], "--ring-pages") == 0) {
        ring_pages = std::strtoul(argv[arg + 1], nullptr, 10);
        arg += 2;
    }
    if (arg + 1 != argc || ring_pages == 0 || (ring_pages & (ring_pages - 1)) != 0)
        throw std::runtime_error("usage: min_sampler [--ring-pages POWER_OF_TWO] IFACE");
    const char* iface = argv[arg];
    const int ifindex = static_cast<int>(if_nametoindex(iface));
    if (ifindex == 0)
        throw std::runtime_error(std::string(iface) + ": no such interface");

    const auto object_path = std::filesystem::read_symlink("/proc/self/exe").parent_path() / "min_sampler.bpf.o";
    const std::unique_ptr<bpf_object, decltype(&bpf_object__close)> object(
        bpf_object__open_file(object_path.c_str(), nullptr), bpf_object__close);
    if (!object)
        throw std::runtime_error(object_path.string() + ": " + errno_text(errno));
    bpf_map* events = bpf_object__find_map_by_name(object.get(), "events");
    bpf_program* program = bpf_object__find_program_by_name(object.get(), "min_sampler");
    const int cpus = libbpf_num_possible_cpus();
    if (!events || !program || cpus <= 0 || bpf_map__set_max_entries(events, static_cast<uint32_t>(cpus)) != 0)
        throw std::runtime_error("min_sampler.bpf.o is not the expected object");
    if (const int err = bpf_object__load(object.get()))
        throw std::runtime_error("cannot load min_sampler.bpf.o: " + errno_text(err));

    Counts counts;
    // Woken at a quarter of the ring, as xdpcap is: libbpf's default wakes
    // the reader for every sample, which costs the sending CPU an interrupt
    // each and would make the floor no floor.
    perf_event_attr attr{};
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_BPF_OUTPUT;
    attr.sample_type = PERF_SAMPLE_RAW;
    attr.sample_period = 1;
    attr.watermark = 1;
    attr.wakeup_watermark = static_cast<uint32_t>(ring_pages * static_cast<size_t>(::getpagesize()) / 4);
    const auto on_event = [](void* ctx, int, perf_event_header* event) {
        auto* c = static_cast<Counts*>(ctx);
        if (event->type == PERF_RECORD_SAMPLE) {
            ++c->samples;
            c->bytes += event->size;
        } else if (event->type == PERF_RECORD_LOST) {
            uint64_t lost;
            std::memcpy(&lost, reinterpret_cast<const uint8_t*>(event) + sizeof *event + 8, sizeof lost);
            c->lost += lost;
        }
        return LIBBPF_PERF_EVENT_CONT;
    };
    const std::unique_ptr<perf_buffer, decltype(&perf_buffer__free)> rings(
        perf_buffer__new_raw(bpf_map__fd(events), ring_pages, &attr, on_event, &counts, nullptr), perf_buffer__free);
    if (!rings)
        throw std::runtime_error("cannot open the perf rings: " + errno_text(errno));

    std::signal(SIGINT, [](int) { stop_requested = 1; });
    std::signal(SIGTERM, [](int) { stop_requested = 1; });
    {
        const XdpAttachment attached(ifindex, bpf_program__fd(program));
        std::fprintf(stderr, "listening on %s\n", iface);
        while (!stop_requested) {
            const int err = perf_buffer__poll(rings.get(), 100);
            if (err < 0 && err != -EINTR)
                throw std::runtime_error("polling the perf rings: " + errno_text(err));
        }
        perf_buffer__consume(rings.get());
    }
    std::fprintf(stderr, "%llu samples, %llu lost\n%llu packets dropped by kernel\n", counts.samples, counts.lost,
                 counts.lost);
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "min_sampler: %s\n", e.what());
        return 1;
    }
}
