#include "programs/kernel_btf.hpp"

#include <fcntl.h>
#include <linux/btf.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <bit>
#include <cstring>
#include <memory>
#include <span>
#include <string_view>

#include "base/unique_fd.hpp"

namespace xdpcap {

namespace {

constexpr const char* kVmlinuxBtf = "/sys/kernel/btf/vmlinux";

// The file's bytes: mapped where the kernel allows it (6.16 and later, no
// copy), else read into memory of our own.
class BtfBytes {
public:
    static std::optional<BtfBytes> load()
    {
        const UniqueFd fd(::open(kVmlinuxBtf, O_RDONLY | O_CLOEXEC));
        struct stat st {};
        if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || st.st_size <= 0)
            return std::nullopt;
        const auto size = static_cast<size_t>(st.st_size);
        if (void* mapped = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd.get(), 0);
            mapped != MAP_FAILED)
            return BtfBytes(static_cast<const uint8_t*>(mapped), size, nullptr);
        auto copy = std::make_unique_for_overwrite<uint8_t[]>(size);
        size_t done = 0;
        while (done < size) {
            const ssize_t n = ::read(fd.get(), copy.get() + done, size - done);
            if (n <= 0)
                break;
            done += static_cast<size_t>(n);
        }
        if (done != size)
            return std::nullopt;
        const uint8_t* data = copy.get();
        return BtfBytes(data, size, std::move(copy));
    }
    BtfBytes(BtfBytes&& other) noexcept
        : data_(std::exchange(other.data_, nullptr)), size_(other.size_), copy_(std::move(other.copy_))
    {
    }
    BtfBytes& operator=(BtfBytes&&) = delete;
    ~BtfBytes()
    {
        if (data_ && !copy_)
            ::munmap(const_cast<uint8_t*>(data_), size_);
    }
    std::span<const uint8_t> bytes() const noexcept { return {data_, size_}; }

private:
    BtfBytes(const uint8_t* data, size_t size, std::unique_ptr<uint8_t[]> copy)
        : data_(data), size_(size), copy_(std::move(copy))
    {
    }
    const uint8_t* data_;
    size_t size_;
    std::unique_ptr<uint8_t[]> copy_;
};

template <class T>
T load(const uint8_t* p) noexcept
{
    T value;
    std::memcpy(&value, p, sizeof value);
    return value;
}

// The raw type section walked once: where each type id's record starts.
// Only the few facts below are looked up, so this is all of BTF parsing
// that is needed (libbpf's full parse takes ten times as long).
class TypeTable {
public:
    // Empty when the data is not BTF this code understands.
    static std::optional<TypeTable> parse(std::span<const uint8_t> data)
    {
        if (data.size() < sizeof(btf_header))
            return std::nullopt;
        const auto header = load<btf_header>(data.data());
        if (header.magic != BTF_MAGIC || header.version != BTF_VERSION || header.hdr_len < sizeof(btf_header) ||
            uint64_t{header.hdr_len} + header.type_off + header.type_len > data.size() ||
            uint64_t{header.hdr_len} + header.str_off + header.str_len > data.size() || header.str_len == 0)
            return std::nullopt;
        TypeTable table;
        table.types_ = data.subspan(header.hdr_len + header.type_off, header.type_len);
        table.strings_ = data.subspan(header.hdr_len + header.str_off, header.str_len);
        if (table.strings_.back() != 0)
            return std::nullopt;
        // Type id 0 is void; ids count from 1 in file order. Records are at
        // least 12 bytes.
        table.offsets_.reserve(header.type_len / 16 + 1);
        table.offsets_.push_back(0);
        size_t at = 0;
        while (at < table.types_.size()) {
            if (table.types_.size() - at < sizeof(btf_type))
                return std::nullopt;
            const auto type = load<btf_type>(table.types_.data() + at);
            const std::optional<size_t> extra = trailing_size(type);
            if (!extra || table.types_.size() - at - sizeof(btf_type) < *extra)
                return std::nullopt;
            table.offsets_.push_back(static_cast<uint32_t>(at));
            at += sizeof(btf_type) + *extra;
        }
        return table;
    }

    uint32_t count() const noexcept { return static_cast<uint32_t>(offsets_.size()); }
    btf_type type(uint32_t id) const noexcept { return load<btf_type>(types_.data() + offsets_[id]); }
    const uint8_t* trailing(uint32_t id) const noexcept { return types_.data() + offsets_[id] + sizeof(btf_type); }
    std::string_view name(uint32_t name_off) const noexcept
    {
        if (name_off >= strings_.size())
            return {};
        return reinterpret_cast<const char*>(strings_.data() + name_off);
    }
    struct Wanted {
        uint32_t kind;
        std::string_view name;
    };
    // For each of `wanted`, the first type of its kind with its name, 0 when
    // there is none: one walk over the types for all of them.
    template <size_t N>
    std::array<uint32_t, N> find(const std::array<Wanted, N>& wanted) const noexcept
    {
        std::array<uint32_t, N> found{};
        size_t left = N;
        for (uint32_t id = 1; id < count() && left > 0; ++id) {
            const btf_type t = type(id);
            for (size_t i = 0; i < N; ++i) {
                if (found[i] == 0 && BTF_INFO_KIND(t.info) == wanted[i].kind && name(t.name_off) == wanted[i].name) {
                    found[i] = id;
                    --left;
                }
            }
        }
        return found;
    }

private:
    static std::optional<size_t> trailing_size(const btf_type& type) noexcept
    {
        const size_t vlen = BTF_INFO_VLEN(type.info);
        switch (BTF_INFO_KIND(type.info)) {
        case BTF_KIND_INT:
        case BTF_KIND_VAR:
        case BTF_KIND_DECL_TAG:
            return 4;
        case BTF_KIND_ARRAY:
            return sizeof(btf_array);
        case BTF_KIND_STRUCT:
        case BTF_KIND_UNION:
            return vlen * sizeof(btf_member);
        case BTF_KIND_ENUM:
            return vlen * sizeof(btf_enum);
        case BTF_KIND_FUNC_PROTO:
            return vlen * sizeof(btf_param);
        case BTF_KIND_DATASEC:
            return vlen * sizeof(btf_var_secinfo);
        case BTF_KIND_ENUM64:
            return vlen * sizeof(btf_enum64);
        case BTF_KIND_PTR:
        case BTF_KIND_FWD:
        case BTF_KIND_TYPEDEF:
        case BTF_KIND_VOLATILE:
        case BTF_KIND_CONST:
        case BTF_KIND_RESTRICT:
        case BTF_KIND_FUNC:
        case BTF_KIND_FLOAT:
        case BTF_KIND_TYPE_TAG:
            return 0;
        default:
            return std::nullopt; // a kind newer than this code: its size is unknown
        }
    }

    std::span<const uint8_t> types_;
    std::span<const uint8_t> strings_;
    std::vector<uint32_t> offsets_;
};

// A bitfield member of a struct or union, looked for through its anonymous
// members too (sk_buff keeps ip_summed in the anonymous `headers` group), on
// a little-endian machine; nothing when missing or not a bitfield in one byte.
std::optional<BitfieldLocation> bitfield_in(const TypeTable& table, uint32_t id, uint32_t base_bits,
                                            std::string_view member_name, int depth)
{
    if (depth > 4 || id == 0 || id >= table.count())
        return std::nullopt;
    const btf_type type = table.type(id);
    const uint32_t kind = BTF_INFO_KIND(type.info);
    if (kind != BTF_KIND_STRUCT && kind != BTF_KIND_UNION)
        return std::nullopt;
    const bool kflag = BTF_INFO_KFLAG(type.info);
    for (uint32_t i = 0; i < BTF_INFO_VLEN(type.info); ++i) {
        const auto member = load<btf_member>(table.trailing(id) + i * sizeof(btf_member));
        const uint32_t bits = kflag ? BTF_MEMBER_BITFIELD_SIZE(member.offset) : 0;
        const uint32_t bit_offset = base_bits + (kflag ? BTF_MEMBER_BIT_OFFSET(member.offset) : member.offset);
        const std::string_view name = table.name(member.name_off);
        if (name.empty()) {
            if (auto found = bitfield_in(table, member.type, bit_offset, member_name, depth + 1))
                return found;
            continue;
        }
        if (name != member_name)
            continue;
        if (bits == 0 || bits > 8 || (bit_offset % 8) + bits > 8)
            return std::nullopt;
        return BitfieldLocation{bit_offset / 8, static_cast<uint8_t>(bit_offset % 8), static_cast<uint8_t>(bits)};
    }
    return std::nullopt;
}

std::vector<std::pair<uint32_t, std::string>> enum_values(const TypeTable& table, uint32_t id,
                                                          std::string_view prefix)
{
    std::vector<std::pair<uint32_t, std::string>> values;
    if (id == 0)
        return values;
    const btf_type type = table.type(id);
    for (uint32_t i = 0; i < BTF_INFO_VLEN(type.info); ++i) {
        const auto entry = load<btf_enum>(table.trailing(id) + i * sizeof(btf_enum));
        std::string_view text = table.name(entry.name_off);
        if (text.starts_with(prefix))
            text.remove_prefix(prefix.size());
        values.emplace_back(static_cast<uint32_t>(entry.val), std::string(text));
    }
    return values;
}

} // namespace

const KernelBtf& kernel_btf()
{
    static const KernelBtf facts = [] {
        KernelBtf k;
        const std::optional<BtfBytes> bytes = BtfBytes::load();
        if (!bytes)
            return k;
        const std::optional<TypeTable> table = TypeTable::parse(bytes->bytes());
        if (!table)
            return k;
        k.loaded = true;
        const auto [rx_vlan, rx_hash, kern_ctx, drop_reason, sk_buff] = table->find(std::array<TypeTable::Wanted, 5>{{
            {BTF_KIND_FUNC, "bpf_xdp_metadata_rx_vlan_tag"},
            {BTF_KIND_FUNC, "bpf_xdp_metadata_rx_hash"},
            {BTF_KIND_FUNC, "bpf_cast_to_kern_ctx"},
            {BTF_KIND_ENUM, "skb_drop_reason"},
            {BTF_KIND_STRUCT, "sk_buff"},
        }});
        k.rx_vlan_kfunc = rx_vlan;
        k.rx_hash_kfunc = rx_hash;
        k.kern_ctx_kfunc = kern_ctx;
        k.drop_reasons = enum_values(*table, drop_reason, "SKB_DROP_REASON_");
        if constexpr (std::endian::native == std::endian::little)
            k.skb_ip_summed = bitfield_in(*table, sk_buff, 0, "ip_summed", 0);
        return k;
    }();
    return facts;
}

} // namespace xdpcap
