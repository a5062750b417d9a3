#include "ring/rings.hpp"

#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <fstream>
#include <sstream>

#include "base/error.hpp"

namespace xdpcap {

void PerfBufferDeleter::operator()(perf_buffer* pb) const noexcept
{
    perf_buffer__free(pb);
}

size_t page_size()
{
    return static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

std::vector<int> parse_cpu_list(const std::string& text)
{
    std::vector<int> cpus;
    std::stringstream ranges(text);
    for (std::string range; std::getline(ranges, range, ',');) {
        if (range.empty() || range == "\n")
            continue;
        int first = 0, last = 0;
        char dash = 0;
        std::stringstream parts(range);
        parts >> first;
        if (!parts)
            throw Error("cannot parse CPU list '" + text + "'");
        last = first;
        if (parts >> dash && dash == '-')
            parts >> last;
        for (int cpu = first; cpu <= last; ++cpu)
            cpus.push_back(cpu);
    }
    return cpus;
}

uint32_t default_ring_pages(size_t cpus, size_t page_bytes)
{
    size_t bytes = kRingBudgetBytes / (cpus ? cpus : 1);
    bytes = std::clamp(bytes, kMinDefaultRingBytes, kMaxDefaultRingBytes);
    return static_cast<uint32_t>(std::bit_floor(bytes / page_bytes));
}

int perf_event_paranoid()
{
    std::ifstream file("/proc/sys/kernel/perf_event_paranoid");
    int level = 2;
    file >> level;
    return level;
}

std::vector<int> online_cpus()
{
    std::ifstream file("/sys/devices/system/cpu/online");
    std::string text;
    std::getline(file, text);
    if (text.empty())
        throw Error("cannot read /sys/devices/system/cpu/online");
    return parse_cpu_list(text);
}

PerfRings::PerfRings(int events_map_fd, const RingSettings& settings) : cpus_(online_cpus())
{
    perf_event_attr attr{};
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_BPF_OUTPUT;
    attr.sample_type = PERF_SAMPLE_RAW;
    attr.sample_period = 1;
    attr.size = sizeof attr;
    // A byte watermark, not one wakeup per record: wakeups dominate the cost.
    attr.watermark = 1;
    attr.wakeup_watermark = settings.wakeup_bytes;

    // Explicit CPU list so that ring i is known to belong to cpus_[i].
    std::vector<int> keys = cpus_;
    perf_buffer_raw_opts opts{};
    opts.sz = sizeof opts;
    opts.cpu_cnt = static_cast<int>(cpus_.size());
    opts.cpus = cpus_.data();
    opts.map_keys = keys.data();
    // Records are read by PerfRingReader, never through libbpf's callback.
    auto unused_callback = [](void*, int, perf_event_header*) { return LIBBPF_PERF_EVENT_CONT; };
    buffer_.reset(perf_buffer__new_raw(events_map_fd, settings.pages_per_cpu, &attr, unused_callback, nullptr, &opts));
    if (!buffer_) {
        const int err = errno;
        const std::string what = "cannot create the per-CPU perf rings (" + std::to_string(settings.pages_per_cpu) +
                                 " pages each): " + errno_text(err);
        if (err == EPERM)
            throw RingMemoryError(what + " (raise the locked-memory limit or use fewer --ring-pages)");
        // Debian's kernels add level 3, where perf events need CAP_SYS_ADMIN
        // whatever else the process holds.
        if (err == EACCES && perf_event_paranoid() >= 3)
            throw Error("cannot open perf events: kernel.perf_event_paranoid is " +
                        std::to_string(perf_event_paranoid()) +
                        ", which allows them only with CAP_SYS_ADMIN: run as root, add CAP_SYS_ADMIN, or set "
                        "the sysctl to 2 or less");
        throw Error(what);
    }
    data_size_ = ring_bytes(settings.pages_per_cpu);
    for (size_t i = 0; i < cpus_.size(); ++i) {
        void* base = nullptr;
        size_t mapped = 0;
        if (perf_buffer__buffer(buffer_.get(), static_cast<int>(i), &base, &mapped) != 0)
            throw Error("cannot map the perf ring of CPU " + std::to_string(cpus_[i]));
        // The kernel publishes where the data area is; older kernels leave it 0.
        const auto* header = static_cast<const perf_event_mmap_page*>(base);
        const size_t offset = header->data_offset ? header->data_offset : page_size();
        const size_t size = header->data_size ? header->data_size : data_size_;
        readers_.emplace_back(base, offset, size);
    }
}

int PerfRings::fd(size_t ring) const
{
    return perf_buffer__buffer_fd(buffer_.get(), ring);
}

} // namespace xdpcap
