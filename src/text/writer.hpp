// Appends text to a caller-owned buffer and never past its end: what does
// not fit is dropped. No allocation, no formatting library.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

namespace xdpcap::text {

// A piece of a run put(): lower-case hex, at least `width` digits.
struct Hex {
    uint64_t value;
    int width = 1;
};

class Writer {
public:
    Writer(char* out, size_t capacity) noexcept : begin_(out), p_(out), end_(out + capacity) {}

    void put(char c) noexcept
    {
        if (p_ < end_)
            *p_++ = c;
    }
    void put(std::string_view s) noexcept
    {
        const size_t n = std::min(s.size(), static_cast<size_t>(end_ - p_));
        std::memcpy(p_, s.data(), n);
        p_ += n;
    }
    // A run of pieces in order, as tcpdump's one printf writes them:
    // strings, chars, integers (in decimal) and Hex.
    template <typename... Pieces>
        requires(sizeof...(Pieces) > 1)
    void put(const Pieces&... pieces) noexcept
    {
        (piece(pieces), ...);
    }
    void dec(uint64_t value) noexcept
    {
        char digits[20];
        const char* end = std::to_chars(digits, digits + sizeof digits, value).ptr;
        put(std::string_view(digits, static_cast<size_t>(end - digits)));
    }
    // Exactly `width` decimal digits, leading zeros kept (value must fit).
    void padded(uint64_t value, int width) noexcept
    {
        char digits[20];
        for (int i = width - 1; i >= 0; --i) {
            digits[i] = static_cast<char>('0' + value % 10);
            value /= 10;
        }
        put(std::string_view(digits, static_cast<size_t>(width)));
    }
    // Lower-case hex, at least `width` digits.
    void hex(uint64_t value, int width = 1) noexcept
    {
        char digits[16];
        int n = 0;
        do {
            digits[15 - n++] = kHexDigits[value & 15];
            value >>= 4;
        } while (value != 0 && n < 16);
        while (n < width && n < 16)
            digits[15 - n++] = '0';
        put(std::string_view(digits + 16 - n, static_cast<size_t>(n)));
    }
    void hex_byte(uint8_t b) noexcept
    {
        put(kHexDigits[b >> 4]);
        put(kHexDigits[b & 15]);
    }

    size_t size() const noexcept { return static_cast<size_t>(p_ - begin_); }
    bool full() const noexcept { return p_ == end_; }
    std::string_view view() const noexcept { return {begin_, size()}; }

    static constexpr char kHexDigits[] = "0123456789abcdef";

private:
    template <typename T>
    void piece(const T& value) noexcept
    {
        if constexpr (std::is_same_v<T, char>)
            put(value);
        else if constexpr (std::is_same_v<T, Hex>)
            hex(value.value, value.width);
        else if constexpr (std::is_integral_v<T>) {
            static_assert(!std::is_same_v<T, bool>, "a bool is no piece of text");
            dec(static_cast<uint64_t>(value));
        } else
            put(std::string_view(value));
    }

    char* begin_;
    char* p_;
    char* end_;
};

} // namespace xdpcap::text
