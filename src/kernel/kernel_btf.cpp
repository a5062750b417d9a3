#include "kernel/kernel_btf.hpp"

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include <bit>
#include <cstring>
#include <string_view>

namespace xdpcap {

namespace {

bool has_function(const btf* vmlinux, const char* name)
{
    return btf__find_by_name_kind(vmlinux, name, BTF_KIND_FUNC) > 0;
}

// A bitfield member of a struct or union, looked for through its anonymous
// members too (sk_buff keeps ip_summed in the anonymous `headers` group), on
// a little-endian machine; nothing when missing or not a bitfield in one byte.
std::optional<BitfieldLocation> bitfield_in(const btf* vmlinux, const btf_type* type, uint32_t base_bits,
                                            const char* member_name, int depth)
{
    if (depth > 4 || !(btf_is_struct(type) || btf_is_union(type)))
        return std::nullopt;
    const btf_member* members = btf_members(type);
    for (uint16_t i = 0; i < btf_vlen(type); ++i) {
        const char* name = btf__name_by_offset(vmlinux, members[i].name_off);
        const uint32_t bit_offset = base_bits + btf_member_bit_offset(type, i);
        if (!name || !*name) {
            const btf_type* inner = btf__type_by_id(vmlinux, btf__resolve_type(vmlinux, members[i].type));
            if (inner) {
                if (auto found = bitfield_in(vmlinux, inner, bit_offset, member_name, depth + 1))
                    return found;
            }
            continue;
        }
        if (std::strcmp(name, member_name) != 0)
            continue;
        const uint32_t bits = btf_member_bitfield_size(type, i);
        if (bits == 0 || bits > 8 || (bit_offset % 8) + bits > 8)
            return std::nullopt;
        return BitfieldLocation{bit_offset / 8, static_cast<uint8_t>(bit_offset % 8), static_cast<uint8_t>(bits)};
    }
    return std::nullopt;
}

std::optional<BitfieldLocation> bitfield(const btf* vmlinux, const char* type_name, const char* member_name)
{
    const int32_t id = btf__find_by_name_kind(vmlinux, type_name, BTF_KIND_STRUCT);
    if (id <= 0)
        return std::nullopt;
    return bitfield_in(vmlinux, btf__type_by_id(vmlinux, static_cast<uint32_t>(id)), 0, member_name, 0);
}

std::vector<std::pair<uint32_t, std::string>> enum_values(const btf* vmlinux, const char* type_name,
                                                          std::string_view prefix)
{
    std::vector<std::pair<uint32_t, std::string>> values;
    const int32_t id = btf__find_by_name_kind(vmlinux, type_name, BTF_KIND_ENUM);
    if (id <= 0)
        return values;
    const btf_type* type = btf__type_by_id(vmlinux, static_cast<uint32_t>(id));
    const struct btf_enum* entries = btf_enum(type);
    for (uint16_t i = 0; i < btf_vlen(type); ++i) {
        const char* name = btf__name_by_offset(vmlinux, entries[i].name_off);
        std::string_view text = name ? name : "";
        if (text.starts_with(prefix))
            text.remove_prefix(prefix.size());
        values.emplace_back(static_cast<uint32_t>(entries[i].val), std::string(text));
    }
    return values;
}

} // namespace

const KernelBtf& kernel_btf()
{
    static const KernelBtf facts = [] {
        KernelBtf k;
        btf* vmlinux = btf__load_vmlinux_btf();
        if (libbpf_get_error(vmlinux))
            return k;
        k.loaded = true;
        k.rx_vlan_kfunc = has_function(vmlinux, "bpf_xdp_metadata_rx_vlan_tag");
        k.rx_hash_kfunc = has_function(vmlinux, "bpf_xdp_metadata_rx_hash");
        k.drop_reasons = enum_values(vmlinux, "skb_drop_reason", "SKB_DROP_REASON_");
        if constexpr (std::endian::native == std::endian::little)
            k.skb_ip_summed = bitfield(vmlinux, "sk_buff", "ip_summed");
        btf__free(vmlinux);
        return k;
    }();
    return facts;
}

} // namespace xdpcap
