#include "input/link_type.hpp"

#include <pcap/pcap.h>

#include <cstdio>
#include <cstring>
#include <memory>

namespace xdpcap {

namespace {

struct PcapCloser {
    void operator()(pcap_t* p) const noexcept { pcap_close(p); }
};

// Files give LINKTYPE_ values, which libpcap's names take as DLT_ values
// after its own mapping (LINKTYPE_RAW 101 is DLT_RAW 12 on Linux), which it
// does not export: a file header of that link type read from memory gets it.
int dlt_of(uint16_t link_type)
{
    const uint32_t header[6] = {0xa1b2c3d4, 2 | (4u << 16), 0, 0, 65535, link_type};
    char bytes[sizeof header];
    std::memcpy(bytes, header, sizeof header);
    FILE* file = fmemopen(bytes, sizeof bytes, "rb");
    if (!file)
        return link_type;
    char error[PCAP_ERRBUF_SIZE];
    const std::unique_ptr<pcap_t, PcapCloser> pcap(pcap_fopen_offline(file, error));
    if (!pcap) {
        std::fclose(file);
        return link_type;
    }
    return pcap_datalink(pcap.get());
}

} // namespace

std::string link_type_name(uint16_t link_type)
{
    const char* name = pcap_datalink_val_to_name(dlt_of(link_type));
    const std::string number = std::to_string(link_type);
    return name ? std::string(name) + " (" + number + ")" : number;
}

std::string link_type_banner(uint16_t link_type)
{
    const int dlt = dlt_of(link_type);
    const char* name = pcap_datalink_val_to_name(dlt);
    if (!name)
        return std::to_string(dlt);
    const char* description = pcap_datalink_val_to_description(dlt);
    return std::string(name) + " (" + (description ? description : "") + ")";
}

} // namespace xdpcap
