// filter_bench: what a translated filter costs in the kernel per frame,
// measured with BPF_PROG_TEST_RUN (root). Each frame is an IPv6/UDP frame
// with N destination-options headers before UDP, the case `protochain`
// loops over; the filter is run the way the capture runs it, as a
// subprogram of a small XDP program.
//
//   build/bench/filter_bench ['ip6 protochain 17' ...]
#include <bpf/bpf.h>
#include <linux/bpf.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "filter/compile.hpp"
#include "base/ebpf_insn.hpp"
#include "filter/translate.hpp"
#include "programs/program_btf.hpp"
#include "base/unique_fd.hpp"

namespace {

using namespace xdpcap;

std::vector<uint8_t> chain_frame(int headers)
{
    std::vector<uint8_t> f = {0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x86, 0xdd};
    const int payload = headers * 8 + 8 + 16;
    const uint8_t first = headers > 0 ? 60 : 17;
    const uint8_t ip6[40] = {0x60, 0, 0, 0, static_cast<uint8_t>(payload >> 8), static_cast<uint8_t>(payload), first, 64,
                             0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
                             0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
    f.insert(f.end(), ip6, ip6 + 40);
    for (int i = 0; i < headers; ++i) {
        const uint8_t next = i + 1 < headers ? 60 : 17;
        const uint8_t opt[8] = {next, 0, 1, 4, 0, 0, 0, 0}; // PadN
        f.insert(f.end(), opt, opt + 8);
    }
    const uint8_t udp[8] = {0x03, 0xe8, 0x07, 0xd0, 0, 24, 0, 0};
    f.insert(f.end(), udp, udp + 8);
    f.resize(f.size() + 16, 0xab);
    return f;
}

UniqueFd load(const std::vector<bpf_insn>& body)
{
    std::vector<bpf_insn> prog = {
        make_insn(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_CALL, 0, 1),
        make_insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
    };
    prog.insert(prog.end(), body.begin(), body.end());
    bpf_prog_load_opts opts{};
    opts.sz = sizeof opts;
    opts.prog_flags = BPF_F_XDP_HAS_FRAGS;
    const ProgramBtf btf(prog);
    btf.apply(opts);
    const int fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "filter_bench", "GPL", prog.data(), prog.size(), &opts);
    if (fd < 0)
        throw Error("the kernel refused the filter: " + errno_text(errno));
    return UniqueFd(fd);
}

// Mean nanoseconds a run, as the kernel timed `repeat` runs.
double run(int fd, std::vector<uint8_t> frame, uint32_t& verdict)
{
    bpf_test_run_opts opts{};
    opts.sz = sizeof opts;
    opts.data_in = frame.data();
    opts.data_size_in = static_cast<uint32_t>(frame.size());
    opts.repeat = 200000;
    if (bpf_prog_test_run_opts(fd, &opts) != 0)
        throw Error("BPF_PROG_TEST_RUN: " + errno_text(errno));
    verdict = opts.retval;
    return opts.duration;
}

} // namespace

int main(int argc, char** argv)
{
    std::vector<std::string> expressions(argv + 1, argv + argc);
    if (expressions.empty())
        expressions = {"ip6 protochain 17", "udp port 2000"};
    try {
        std::printf("%-22s %8s %10s %8s\n", "filter", "headers", "ns/frame", "verdict");
        for (const std::string& expr : expressions) {
            const UniqueFd fd = load(translate_filter(compile_filter(expr).instructions(), FilterTarget{}));
            for (const int headers : {0, 1, 4, 16, 100}) {
                uint32_t verdict = 0;
                const double ns = run(fd.get(), chain_frame(headers), verdict);
                std::printf("%-22s %8d %10.1f %8s\n", expr.c_str(), headers, ns, verdict ? "keep" : "drop");
            }
        }
    } catch (const Error& e) {
        std::fprintf(stderr, "filter_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
