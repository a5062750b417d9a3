#include "host/kallsyms.hpp"

#include <bpf/bpf.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <charconv>
#include <cstring>
#include <memory>
#include <string_view>

#include "base/ebpf_insn.hpp"
#include "base/unique_fd.hpp"

namespace xdpcap {

namespace {

// What the lookup program reads and writes: a name in, its address out.
struct SymbolQuery {
    uint64_t address;
    char name[64];
};
static_assert(sizeof(SymbolQuery) == 72);

constexpr int16_t kNameOnStack = -64;
constexpr int16_t kAddressOnStack = -72;

// A sleepable syscall program: copies the name to its stack (helpers take
// no context pointer) and calls bpf_kallsyms_lookup_name.
UniqueFd load_symbol_lookup()
{
    std::vector<bpf_insn> prog;
    prog.push_back(make_insn(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_6, BPF_REG_1, 0, 0));
    for (int16_t at = 0; at < static_cast<int16_t>(sizeof(SymbolQuery::name)); at += 8) {
        prog.push_back(make_insn(BPF_LDX | BPF_MEM | BPF_DW, BPF_REG_0, BPF_REG_6,
                                 static_cast<int16_t>(offsetof(SymbolQuery, name) + at), 0));
        prog.push_back(make_insn(BPF_STX | BPF_MEM | BPF_DW, BPF_REG_10, BPF_REG_0,
                                 static_cast<int16_t>(kNameOnStack + at), 0));
    }
    // The helper leaves the result alone when it refuses (kptr_restrict).
    prog.push_back(make_insn(BPF_ST | BPF_MEM | BPF_DW, BPF_REG_10, 0, kAddressOnStack, 0));
    prog.push_back(make_insn(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_1, BPF_REG_10, 0, 0));
    prog.push_back(make_insn(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_1, 0, 0, kNameOnStack));
    prog.push_back(make_insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_2, 0, 0, sizeof(SymbolQuery::name)));
    prog.push_back(make_insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_3, 0, 0, 0));
    prog.push_back(make_insn(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_4, BPF_REG_10, 0, 0));
    prog.push_back(make_insn(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_4, 0, 0, kAddressOnStack));
    prog.push_back(make_insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_kallsyms_lookup_name));
    prog.push_back(make_insn(BPF_LDX | BPF_MEM | BPF_DW, BPF_REG_1, BPF_REG_10, kAddressOnStack, 0));
    prog.push_back(make_insn(BPF_STX | BPF_MEM | BPF_DW, BPF_REG_6, BPF_REG_1,
                             static_cast<int16_t>(offsetof(SymbolQuery, address)), 0));
    prog.push_back(make_insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
    bpf_prog_load_opts opts{};
    opts.sz = sizeof(opts);
    opts.prog_flags = BPF_F_SLEEPABLE;
    return UniqueFd(bpf_prog_load(BPF_PROG_TYPE_SYSCALL, "xdpcap_ksym", "GPL", prog.data(), prog.size(), &opts));
}

} // namespace

std::optional<std::vector<uint64_t>> look_up_kernel_symbols(const std::vector<const char*>& names)
{
    const bool all_fit = std::all_of(names.begin(), names.end(),
                                     [](const char* name) { return std::strlen(name) < sizeof(SymbolQuery::name); });
    if (!all_fit)
        return std::nullopt;
    const UniqueFd prog = load_symbol_lookup();
    if (!prog)
        return std::nullopt;
    std::vector<uint64_t> found(names.size(), 0);
    for (size_t i = 0; i < names.size(); ++i) {
        SymbolQuery query{};
        std::strcpy(query.name, names[i]);
        bpf_test_run_opts run{};
        run.sz = sizeof(run);
        run.ctx_in = &query;
        run.ctx_size_in = sizeof(query);
        if (bpf_prog_test_run_opts(prog.get(), &run) != 0)
            return std::nullopt;
        // 0 found; -ENOENT absent; -EPERM hidden, as kallsyms shows hidden ones.
        if (run.retval == 0)
            found[i] = query.address;
    }
    return found;
}

std::vector<uint64_t> kernel_symbol_addresses(const std::vector<const char*>& names)
{
    if (auto found = look_up_kernel_symbols(names))
        return std::move(*found);
    return scan_kallsyms(names);
}

// About 200 000 lines: read in large chunks, and only a line whose name
// matches has its address parsed.
std::vector<uint64_t> scan_kallsyms(const std::vector<const char*>& names)
{
    std::vector<uint64_t> found(names.size(), 0);
    const UniqueFd fd(::open("/proc/kallsyms", O_RDONLY | O_CLOEXEC));
    if (!fd)
        return found;
    constexpr size_t kChunk = 1 << 16;
    const auto buffer = std::make_unique_for_overwrite<char[]>(kChunk);
    size_t held = 0; // bytes of an unfinished line kept at the start
    size_t left = names.size();
    while (left > 0) {
        const ssize_t n = ::read(fd.get(), buffer.get() + held, kChunk - held);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        const std::string_view text(buffer.get(), held + static_cast<size_t>(n));
        size_t start = 0;
        for (size_t end; left > 0 && (end = text.find('\n', start)) != std::string_view::npos; start = end + 1) {
            // "ffffffff81234560 T name" or "... t name\t[module]"
            const std::string_view line = text.substr(start, end - start);
            const size_t type_at = line.find(' ');
            if (type_at == std::string_view::npos || line.size() < type_at + 4)
                continue;
            const std::string_view name = line.substr(type_at + 3, line.find('\t', type_at + 3) - (type_at + 3));
            for (size_t i = 0; i < names.size(); ++i) {
                if (found[i] == 0 && name == names[i]) {
                    std::from_chars(line.data(), line.data() + type_at, found[i], 16);
                    --left;
                }
            }
        }
        held = text.size() - start;
        if (held == kChunk)
            held = 0; // a line longer than the buffer: no symbol of ours
        std::memmove(buffer.get(), buffer.get() + start, held);
    }
    return found;
}

DirectMap find_direct_map()
{
#if defined(__x86_64__)
    const std::vector<uint64_t> at = kernel_symbol_addresses({"_text", "page_offset_base", "vmemmap_base"});
    if (at[0] == 0)
        return {"/proc/kallsyms hides kernel addresses (kernel.kptr_restrict)"};
    if ((at[1] == 0) != (at[2] == 0))
        return {"this kernel's direct map is laid out in a way xdpcap does not know"};
    return {std::nullopt, at[1], at[2]};
#else
    return {"page fragments are read on x86-64 only"};
#endif
}

} // namespace xdpcap
