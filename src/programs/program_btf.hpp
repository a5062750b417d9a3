// Program BTF for instructions built at run time. The kernel accepts a
// callback passed by reference (bpf_loop(), BPF_PSEUDO_FUNC) only when the
// program's func_info names every subprogram as a static function; and
// fentry attaches to a program only through its main function's BTF, which
// must take the program type's context for the tracer to read it.
#pragma once

#include <bpf/bpf.h>
#include <linux/bpf.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/unique_fd.hpp"

namespace xdpcap {

// Where each subprogram starts: 0, then every target of a bpf-to-bpf call
// or a callback reference, in order.
std::vector<uint32_t> subprogram_starts(std::span<const bpf_insn> prog);

// The main function as a tracer finds it: `int name(struct context *ctx)`,
// with `context` the program type's ("xdp_md" for XDP).
struct MainFunction {
    std::string name;
    std::string context;
};

class ProgramBtf {
public:
    // Loads the BTF when `prog` references a callback or `main` is given;
    // otherwise nothing is needed and apply() leaves the options as they
    // are. Raises Error.
    explicit ProgramBtf(std::span<const bpf_insn> prog, const std::optional<MainFunction>& main = std::nullopt);

    // Points `opts` at the BTF and func_info; both must outlive the load.
    void apply(bpf_prog_load_opts& opts) const;

private:
    UniqueFd fd_;
    std::vector<bpf_func_info> func_info_;
};

} // namespace xdpcap
