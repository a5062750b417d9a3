// NSS key log lines for the TLS secrets tests.
#pragma once

#include <string>

namespace xdpcap::test {

inline const std::string kRandom(64, 'a');
inline const std::string kSecret48(96, '0');
inline const std::string kSecret32(64, '1');

inline std::string line(const std::string& label, const std::string& random = kRandom,
                        const std::string& secret = kSecret48)
{
    return std::string(label).append(" ").append(random).append(" ").append(secret);
}

} // namespace xdpcap::test
