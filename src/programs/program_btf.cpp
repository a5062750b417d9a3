#include "programs/program_btf.hpp"

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <string>

#include "base/error.hpp"

namespace xdpcap {

namespace {

bool is_wide_load(const bpf_insn& i) { return i.code == (BPF_LD | BPF_DW | BPF_IMM); }

} // namespace

std::vector<uint32_t> subprogram_starts(std::span<const bpf_insn> prog)
{
    std::vector<uint32_t> starts = {0};
    for (size_t pc = 0; pc < prog.size(); ++pc) {
        const bpf_insn& i = prog[pc];
        const bool call = i.code == (BPF_JMP | BPF_CALL) && i.src_reg == BPF_PSEUDO_CALL;
        const bool callback = is_wide_load(i) && i.src_reg == BPF_PSEUDO_FUNC;
        if (call || callback)
            starts.push_back(static_cast<uint32_t>(static_cast<int64_t>(pc) + 1 + i.imm));
        if (is_wide_load(i))
            ++pc; // its second half
    }
    std::sort(starts.begin(), starts.end());
    starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
    return starts;
}

ProgramBtf::ProgramBtf(std::span<const bpf_insn> prog, const std::optional<MainFunction>& main)
{
    const bool references_callback = std::any_of(prog.begin(), prog.end(), [](const bpf_insn& i) {
        return is_wide_load(i) && i.src_reg == BPF_PSEUDO_FUNC;
    });
    if (!references_callback && !main)
        return;
    const std::unique_ptr<btf, decltype(&btf__free)> types(btf__new_empty(), btf__free);
    if (!types)
        throw Error("cannot build the filter's BTF: " + errno_text(errno));
    auto built = [](int id) {
        if (id <= 0)
            throw Error("cannot build the filter's BTF: " + errno_text(-id));
        return id;
    };
    const int int_type = built(btf__add_int(types.get(), "int", 4, BTF_INT_SIGNED));
    const int part_proto = built(btf__add_func_proto(types.get(), int_type));
    int main_func = 0;
    if (main) {
        // The context needs only its name: the kernel matches it by name.
        const int context = built(btf__add_struct(types.get(), main->context.c_str(), 0));
        const int context_ptr = built(btf__add_ptr(types.get(), context));
        const int main_proto = built(btf__add_func_proto(types.get(), int_type));
        if (const int err = btf__add_func_param(types.get(), "ctx", context_ptr); err)
            built(err);
        main_func = built(btf__add_func(types.get(), main->name.c_str(), BTF_FUNC_GLOBAL, main_proto));
    }
    const std::vector<uint32_t> starts = subprogram_starts(prog);
    for (size_t i = 0; i < starts.size(); ++i) {
        const std::string name = "xdpcap_filter_part" + std::to_string(i);
        const int func = i == 0 && main_func ? main_func
                                             : built(btf__add_func(types.get(), name.c_str(), BTF_FUNC_STATIC,
                                                                   part_proto));
        func_info_.push_back(bpf_func_info{starts[i], static_cast<uint32_t>(func)});
    }
    if (const int err = btf__load_into_kernel(types.get()); err)
        throw Error("the kernel refused the filter's BTF: " + errno_text(-err));
    // btf__free() closes its descriptor: keep one of our own.
    fd_.reset(fcntl(btf__fd(types.get()), F_DUPFD_CLOEXEC, 0));
    if (!fd_)
        throw Error("cannot keep the filter's BTF: " + errno_text(errno));
}

void ProgramBtf::apply(bpf_prog_load_opts& opts) const
{
    if (!fd_)
        return;
    opts.prog_btf_fd = static_cast<uint32_t>(fd_.get());
    opts.func_info = func_info_.data();
    opts.func_info_cnt = static_cast<uint32_t>(func_info_.size());
    opts.func_info_rec_size = sizeof(bpf_func_info);
}

} // namespace xdpcap
